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
