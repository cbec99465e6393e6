"""Fixtures that start the real server (real firejail, real sockets) as a subprocess."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import toolserver  # noqa: F401  (first: turns gRPC fork support off before grpc loads)
import grpc  # noqa: E402
from toolserver.client import ToolClient

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningServer:
    """A real server process. Servers alive at the same time need disjoint slot ranges
    (first_slot), as each one kills every process of its slots' uids."""

    def __init__(self, tmp: Path, *, first_slot: int, workers: int = 2, sessions: int = 0,
                 args: tuple[str, ...] = (), config: str = "") -> None:
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        path = tmp / f"config-{self.port}.toml"
        slots = f"first_slot = {first_slot}\nslots = {workers + 1 + sessions}\n"
        if "[sandbox]" in config:
            config = config.replace("[sandbox]\n", f"[sandbox]\n{slots}")
        else:
            config += f"\n[sandbox]\n{slots}"
        if "[sessions]" in config:
            config = config.replace("[sessions]\n", f"[sessions]\nmax_sessions = {sessions}\n")
        else:
            config += f"\n[sessions]\nmax_sessions = {sessions}\n"
        if "[metrics]" not in config:
            config += "\n[metrics]\nport = 0\n"  # any free port: servers run side by side
        path.write_text(config)
        cmd = [sys.executable, "-m", "toolserver", "serve", "--port", str(self.port), "--workers", str(workers),
               "--config", str(path), *args]
        self.log = open(tmp / f"server-{self.port}.log", "w+")
        self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_listening()

    def wait_listening(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.output()}")
            if "listening on" in self.output():
                return
            time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.output()}")

    def metrics_url(self) -> str:
        match = re.search(r"metrics on (http://\S+)", self.output())
        assert match, "the server did not report its metrics endpoint"
        return match.group(1)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def client(self) -> ToolClient:
        return ToolClient(self.target, timeout_s=60)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("server"), first_slot=0, workers=2, sessions=2)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def jail_server(tmp_path_factory):
    """A server with the Python-level guard off: what its calls meet is the jail alone."""
    running = RunningServer(tmp_path_factory.mktemp("jail"), first_slot=16, workers=2, sessions=1,
                            config="[python]\nimport_guard = false\n")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def jail_client(jail_server):
    with jail_server.client() as c:
        yield c


@pytest.fixture(scope="session")
def client(server):
    with server.client() as c:
        yield c


@pytest.fixture(scope="session")
def channel(server):
    with grpc.insecure_channel(server.target) as ch:
        yield ch
