"""Servers for the security suite: one with caller policies, one with TLS."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import RunningServer
from toolserver.policy import token_hash

TOKENS = {"alice": "alice-token-7f3a", "bob": "bob-token-91c2", "carol": "carol-token-55d0",
          "dave": "dave-token-0b4e"}
POLICY_FILE = f"""
[callers.alice]
token_sha256 = "{token_hash(TOKENS['alice'])}"
tools = ["python"]
max_timeout_ms = 2000
max_inflight = 2
max_sessions = 1

[callers.bob]
token_sha256 = "{token_hash(TOKENS['bob'])}"
tools = ["python"]

[callers.carol]
token_sha256 = "{token_hash(TOKENS['carol'])}"
tools = ["search"]
indexes = ["python-docs"]

[callers.dave]
token_sha256 = "{token_hash(TOKENS['dave'])}"
tools = ["python"]
import_profile = "strict"
max_memory_mb = 256
max_sessions = 1
"""


@pytest.fixture(scope="session")
def policy_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("policy")
    (tmp / "policies.toml").write_text(POLICY_FILE)
    running = RunningServer(tmp, workers=1, sessions=2,
                            config=f'[auth]\npolicy_file = "{tmp / "policies.toml"}"\n')
    yield running
    running.stop()


def make_certificates(directory: Path) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, by openssl."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=toolserver test CA")
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"), ("client", "")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}")
        (directory / f"{name}.ext").write_text(extension + "\n" if extension else "basicConstraints=CA:FALSE\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    return {name: str(directory / name) for name in
            ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def mtls_server(tmp_path_factory, tls_files):
    config = (f'[server]\ntls_cert = "{tls_files["server.pem"]}"\ntls_key = "{tls_files["server.key"]}"\n'
              f'tls_client_ca = "{tls_files["ca.pem"]}"\n')
    running = RunningServer(tmp_path_factory.mktemp("mtls"), workers=1, config=config)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def guarded_server(tmp_path_factory):
    """A server whose default import profile is "guarded": the Python-level guard refuses
    native memory, new processes and the network on top of the jail."""
    running = RunningServer(tmp_path_factory.mktemp("guarded"), workers=1, sessions=1, scientific_workers=1,
                            config='[python]\nimport_profile = "guarded"\n')
    yield running
    running.stop()


@pytest.fixture(scope="session")
def guarded_client(guarded_server):
    with guarded_server.client() as c:
        yield c
