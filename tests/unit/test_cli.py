"""The command line: a verb that asks a server which does not answer says so in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, free_port


@pytest.mark.parametrize("verb", [["info"], ["tools"], ["call", "python", "1"]])
def test_a_server_that_does_not_answer_is_one_line_and_a_failure(verb):
    target = f"127.0.0.1:{free_port()}"  # nothing listens there
    ran = subprocess.run([sys.executable, "-m", "toolserver", *verb, "--target", target], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0
    assert "Traceback" not in ran.stderr
    assert [line for line in ran.stderr.splitlines() if line.strip()] == [ran.stderr.strip()]
    assert "UNAVAILABLE" in ran.stderr


@pytest.mark.parametrize("verb", [["info"], ["tools"], ["call", "python", "1"], ["bench"], ["mcp"]])
def test_every_client_command_hands_the_client_each_connection_flag_it_takes(verb):
    """client_args reads what ClientArgs names from each client command's flags, and each is a
    keyword ToolClient and the MCP bridge take: a flag renamed on one side fails here, not
    at a caller's first call."""
    import inspect

    from toolclient.client import ToolClient
    from toolserver.cli import ClientArgs, build_parser, client_args
    from toolserver.fronts.mcp_stdio import serve_stdio

    args = build_parser().parse_args([*verb, "--token", "t", "--tls-ca", "ca.pem", "--tls-cert", "c.pem",
                                      "--tls-key", "k.pem"])
    given = client_args(args)
    assert given == {"token": "t", "tls_ca": "ca.pem", "tls_cert": "c.pem", "tls_key": "k.pem"}
    assert set(given) == set(ClientArgs.__annotations__)
    for takes in (ToolClient.__init__, serve_stdio):
        keywords = {name for name, parameter in inspect.signature(takes).parameters.items()
                    if parameter.kind is inspect.Parameter.KEYWORD_ONLY}
        assert set(given) <= keywords
