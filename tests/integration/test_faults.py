"""Faults: a worker killed mid-call, a broken sandbox refused, SIGTERM drains."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sandbox.slots import processes_of_uid
from tests.conftest import RunningServer
from toolclient.client import Unavailable
from toolcontract.v1 import toolserver_pb2 as pb

FAKE_FIREJAIL = """#!/bin/sh
# Behaves like firejail that believes it is inside a container: it runs the program
# unsandboxed. The self-test must catch this.
while [ $# -gt 0 ]; do
  case "$1" in
    --*) shift ;;
    *) exec "$@" ;;
  esac
done
"""


def test_worker_killed_mid_call_gives_crashed_and_pool_recovers(server, client):
    result: dict[str, pb.ExecuteResponse] = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", client.run_python(
        "import time\ntime.sleep(20)", timeout_ms=30000)))
    thread.start()
    time.sleep(1.0)
    for index in server.worker_slot_indexes():  # warm and slim
        for pid in processes_of_uid(pwd.getpwnam(f"tsbox{index}").pw_uid):
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    if handle.read().startswith(b"firejail"):
                        os.kill(pid, signal.SIGKILL)
    thread.join(60)
    assert result["r"].outcome == pb.CRASHED
    assert "lost" in result["r"].error
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and client.server_info().tools[0].detail.count("2 workers, 2 idle") < 2:
        time.sleep(0.2)
    assert client.server_info().tools[0].detail.count("2 workers, 2 idle") == 2  # warm and slim
    assert [client.run_python("2 + 2").python.value for _ in range(6)] == ["4"] * 6


def test_broken_sandbox_is_refused(tmp_path):
    public = Path(tempfile.mkdtemp(dir="/var/tmp"))  # the slot user must be able to run it
    public.chmod(0o755)
    fake = public / "firejail"
    fake.write_text(FAKE_FIREJAIL)
    fake.chmod(0o755)
    server = RunningServer(tmp_path, workers=1, config=f'[sandbox]\nfirejail = "{fake}"\n')
    try:
        with grpc.insecure_channel(server.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            status = health.Check(health_pb2.HealthCheckRequest(), timeout=10).status
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
        with server.client() as client:
            with pytest.raises(Unavailable) as info:
                client.run_python("1")
            assert "self-test failed" in str(info.value)
            info_reply = client.server_info()
            assert not info_reply.serving and not info_reply.sandbox_verified
            failing = {c.name for c in info_reply.checks if not c.ok}
            assert {"seccomp", "no_network"} <= failing
    finally:
        server.stop()
        shutil.rmtree(public)


def test_insecure_flag_serves_and_says_so(tmp_path):
    server = RunningServer(tmp_path, workers=1, args=("--insecure-no-sandbox",))
    try:
        with server.client() as client:
            assert client.run_python("1 + 1").python.value == "2"
            info = client.server_info()
            assert info.insecure and not info.sandbox_verified and "INSECURE" in info.reason
        assert "INSECURE" in server.output()
    finally:
        server.stop()


HOST_TEMP_DIRECTORIES = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def test_an_insecure_server_with_sessions_leaves_the_host_temp_directories_alone(tmp_path):
    """Without a jail a session's writable places would be the host's own temp
    directories: the session must not empty them (as root, every file of other programs
    there was gone). A canary file in each, made before the server starts, survives a
    session made ahead, one opened, its cells and its close."""
    canaries = []
    for directory in HOST_TEMP_DIRECTORIES:
        handle, path = tempfile.mkstemp(prefix="toolserver-canary-", dir=directory)
        os.write(handle, b"not the server's")
        os.close(handle)
        canaries.append(Path(path))
    server = RunningServer(tmp_path, workers=1, sessions=2, slim_workers=0,
                           args=("--insecure-no-sandbox",), config="[sessions]\nready = 1\n")
    try:
        with server.client() as client:
            session = client.open_session()
            reply = client.run_python("import os, tempfile\nopen('here', 'w').write('x')\n"
                                      "os.path.dirname(tempfile.mkstemp()[1]) == os.environ['HOME']",
                                      session_id=session.session_id)
            assert reply.outcome == pb.OK and reply.python.value == "True", reply
            client.close_session(session.session_id)
            client.close_session(client.open_session().session_id)
        time.sleep(1)  # the sessions made ahead after the closes
        survived = [path for path in canaries if path.exists() and path.read_bytes() == b"not the server's"]
        assert survived == canaries, f"emptied by the server: {sorted(set(canaries) - set(survived))}"
    finally:
        server.stop()
        for path in canaries:
            path.unlink(missing_ok=True)


def test_sigterm_drains_in_flight_calls(tmp_path):
    server = RunningServer(tmp_path, workers=1)
    results: dict[str, object] = {}
    client = server.client()

    def slow_call() -> None:
        results["slow"] = client.run_python("import time\ntime.sleep(2)\n'done'", timeout_ms=10000)

    thread = threading.Thread(target=slow_call)
    thread.start()
    time.sleep(0.8)
    server.process.terminate()
    time.sleep(0.3)
    try:
        client.run_python("1")
        results["late"] = "served"
    except Unavailable as exc:
        results["late"] = exc
    thread.join(30)
    assert server.process.wait(60) == 0
    client.close()
    assert results["slow"].outcome == pb.OK and results["slow"].python.value == "'done'"
    assert isinstance(results["late"], Unavailable)
