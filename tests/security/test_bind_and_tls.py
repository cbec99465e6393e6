"""Safe defaults: no open server beyond loopback; TLS and mutual TLS with gRPC credentials."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from toolclient.client import ToolClient, Unavailable
from toolserver.errors import ConfigError, PermissionDenied
from toolserver.lean.rules import LeanRules
from toolserver.policy import token_hash, validate_against_settings
from toolserver.settings import load_policies, load_settings


def serve_and_fail(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolserver", "serve", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_open_server_beyond_loopback_refuses_to_start():
    result = serve_and_fail("--host", "0.0.0.0", "--port", "1")
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0" in result.stderr and "--allow-open-bind" in result.stderr


@pytest.mark.parametrize("body, message", [
    ("[callers.x]\ntoken_sha256 = 'abc'\ntools = ['python']\n", "64 lowercase hex"),
    (f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['python']\ncolour = 1\n", "unknown key"),
    (f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['shell']\n", "unknown tool"),
    (f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['search']\nmax_sessions = 1\n", "python tool"),
    (f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['python']\nmax_lean_timeout_ms = 9\n", "lean tool"),
    (f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['python']\n"
     f"[callers.y]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['python']\n", "same token_sha256"),
    ("[people.x]\n", "unknown table"),
])
def test_bad_policy_files_are_refused_with_the_reason(tmp_path, body, message):
    path = tmp_path / "policies.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message):
        load_policies(path)


def test_policy_maxima_above_the_server_limits_refuse_to_start(tmp_path):
    policies = tmp_path / "policies.toml"
    policies.write_text(f"[callers.x]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['python']\n"
                        "max_timeout_ms = 999999\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[auth]\npolicy_file = "{policies}"\n')
    result = serve_and_fail("--port", "1", "--config", str(config))
    assert result.returncode == 2 and "exceeds the server's limits.timeout_ms" in result.stderr


def test_mutual_tls_admits_only_clients_with_a_certificate(mtls_server, tls_files):
    with ToolClient(mtls_server.target, timeout_s=30, tls_ca=tls_files["ca.pem"], tls_cert=tls_files["client.pem"],
                    tls_key=tls_files["client.key"]) as client:
        assert client.run_python("1 + 1").python.value == "2"
    for kwargs in ({"tls_ca": tls_files["ca.pem"]}, {}):  # no client certificate; plaintext
        with ToolClient(mtls_server.target, timeout_s=10, **kwargs) as client, pytest.raises(Unavailable):
            client.run_python("1")
    assert "TLS" in mtls_server.output()


def test_lean_has_its_own_maximum_checked_against_the_lean_settings(tmp_path):
    policies = tmp_path / "policies.toml"
    policies.write_text(f"[callers.prover]\ntoken_sha256 = '{token_hash('t')}'\ntools = ['lean']\n"
                        "max_timeout_ms = 5000\nmax_lean_timeout_ms = 120000\n")
    loaded = load_policies(policies)
    validate_against_settings(loaded, load_settings())  # above limits.timeout_ms: fine
    with pytest.raises(ConfigError, match="exceeds the server's lean.max_timeout_ms"):
        validate_against_settings(loaded, load_settings(**{"lean.max_timeout_ms": 60_000,
                                                           "lean.default_timeout_ms": 60_000}))
    (prover,) = loaded.by_hash.values()
    lean = prover.rules_of(LeanRules)
    assert lean.timeout_ms(0, default_ms=60_000, caller="prover") == 60_000
    assert lean.timeout_ms(90_000, default_ms=60_000, caller="prover") == 90_000
    with pytest.raises(PermissionDenied, match="Lean maximum of 120000"):
        lean.timeout_ms(200_000, default_ms=60_000, caller="prover")
    short = dataclasses.replace(lean, max_timeout_ms=20_000)
    assert short.timeout_ms(0, default_ms=60_000, caller="prover") == 20_000
    assert dataclasses.replace(lean, max_timeout_ms=0).timeout_ms(0, default_ms=60_000, caller="prover") == 60_000
