"""The HTTP fronts and MCP under hostile clients, judged from the host: the server's
descriptors, memory and log, what its workers and sessions are doing, and whether gRPC
still answers while an attack goes on."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import RunningServer, free_port
from tests.integration.test_metrics import scrape
from tests.security.conftest import POLICY_FILE, TOKENS

LIMITS = """
[http]
max_connections = 200
header_timeout_s = 3.0
idle_timeout_s = 3.0
body_timeout_s = 4.0
send_timeout_s = 3.0
[limits]
timeout_ms = 60000
[defaults]
timeout_ms = 60000
"""
BOB = {"Authorization": f"Bearer {TOKENS['bob']}"}  # python, no limits of his own
JSON_ROUTES = ("/run_code", "/run_jupyter", "/run", "/judge", "/run/batch", "/run/long-batch", "/judge/batch",
               "/retrieve")


class Door:
    """A running server with HTTP fronts, and what the host sees of it."""

    def __init__(self, running: RunningServer, port: int) -> None:
        self.running = running
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    @property
    def pid(self) -> int:
        return self.running.process.pid

    def descriptors(self) -> int:
        return len(list(Path(f"/proc/{self.pid}/fd").iterdir()))

    def memory_kb(self, field: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
        raise AssertionError(field)

    def log_bytes(self) -> int:
        return Path(self.running.log.name).stat().st_size

    def metric(self, name: str) -> float:
        return scrape(self.running).get(name, 0.0)

    def raw(self, data: bytes, wait_s: float = 5.0) -> bytes:
        """What the server answers to data sent on a fresh connection, until it closes it
        or wait_s passes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=wait_s) as sock:
            sock.sendall(data)
            return read_all(sock, wait_s)

    def grpc_answers(self, token: str | None = None) -> bool:
        from toolclient.client import ToolClient
        with ToolClient(self.running.target, timeout_s=30, token=token) as client:
            return client.run_python("print(6 * 7)").stdout == "42\n"


def read_all(sock: socket.socket, wait_s: float) -> bytes:
    sock.settimeout(wait_s)
    received = b""
    deadline = time.monotonic() + wait_s
    try:
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    except (TimeoutError, ConnectionResetError):
        pass
    return received


def start(tmp: Path, config: str) -> Door:
    port = free_port()
    running = RunningServer(tmp, workers=1, slim_workers=1, scientific_workers=0, sessions=2,
                            args=("--http-port", str(port)), config=config)
    return Door(running, port)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A server with caller tokens and short HTTP timeouts."""
    tmp = tmp_path_factory.mktemp("http-doors")
    (tmp / "policies.toml").write_text(POLICY_FILE)
    # No session made ahead: a session's slot users run processes only while it is open.
    door = start(tmp, f'[auth]\npolicy_file = "{tmp / "policies.toml"}"\n{LIMITS}\n[sessions]\nready = 0\n')
    yield door
    door.running.stop()


@pytest.fixture(scope="module")
def open_door(tmp_path_factory):
    """A server as the quick start runs it: loopback, no tokens."""
    door = start(tmp_path_factory.mktemp("http-open"), LIMITS)
    yield door
    door.running.stop()


def head(method: str, path: str, headers: dict[str, str], length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


# Connections


def test_a_flood_of_idle_connections_is_capped_and_grpc_still_answers(guarded):
    descriptors_before, log_before = guarded.descriptors(), guarded.log_bytes()
    flood = []
    for _ in range(2000):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", guarded.port))
        flood.append(sock)
    try:
        time.sleep(1.0)
        held = guarded.descriptors() - descriptors_before
        assert held <= 200 + 20, f"the server holds {held} more descriptors than before the flood"
        assert guarded.grpc_answers(TOKENS["bob"])  # a new gRPC channel opens and a call runs
        refused = guarded.raw(head("GET", "/v1/ping", {}))
        assert status_of(refused) in (200, 503)  # 503 while the flood holds every HTTP connection
        time.sleep(3.0 + 2.0)  # http.idle_timeout_s: the server closes the idle ones
        assert status_of(guarded.raw(head("GET", "/v1/ping", {}))) == 200
        closed = 0
        for sock in flood:
            sock.setblocking(True)
            sock.settimeout(0.5)
            try:
                data = sock.recv(1024)
                closed += not data or data.startswith(b"HTTP/1.1 503")
            except (TimeoutError, ConnectionResetError, BlockingIOError):
                closed += 1  # reset, or never accepted (the kernel's backlog)
            except OSError:
                closed += 1
        assert closed == len(flood)
    finally:
        for sock in flood:
            sock.close()
    assert guarded.metric('toolserver_http_refused_total{reason="connections"}') > 0
    assert guarded.log_bytes() - log_before < 20_000  # refusals are logged once in ten seconds a kind


def test_a_client_that_sends_nothing_is_closed_after_the_idle_timeout(guarded):
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        assert read_all(sock, 15) == b""
    assert time.monotonic() - began < 10


@pytest.mark.parametrize("trickle", [False, True])
def test_a_client_that_sends_half_its_headers_is_answered_408(guarded, trickle):
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        sock.sendall(b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        if trickle:  # one byte a second: each byte is in time, the head is not
            sock.settimeout(1.0)
            for byte in b"X-Slow: " * 2:
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.5)
        answer = read_all(sock, 15)
    assert status_of(answer) == 408 and time.monotonic() - began < 10


def test_a_client_that_sends_half_its_body_is_answered_408(guarded):
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        sock.sendall(head("POST", "/run_code", {**BOB, "Content-Type": "application/json"}, 1000) + b'{"code": "')
        answer = read_all(sock, 15)
    assert status_of(answer) == 408 and b"body_timeout_s" in answer and time.monotonic() - began < 10


def test_a_client_that_reads_none_of_its_answer_is_dropped(guarded):
    body = json.dumps({"code": "open('big.bin', 'wb').write(bytes(10 << 20))", "fetch_files": ["big.bin"]}).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", guarded.port))
    try:
        sock.sendall(head("POST", "/run_code", {**BOB, "Content-Type": "application/json"}, len(body)) + body)
        deadline = time.monotonic() + 60
        while (guarded.metric('toolserver_http_refused_total{reason="send_timeout"}') == 0
               and time.monotonic() < deadline):
            time.sleep(0.5)
        assert guarded.metric('toolserver_http_refused_total{reason="send_timeout"}') == 1
        received = read_all(sock, 30)  # what the kernels still held, then the end
        assert len(received) < 13 << 20  # of an answer of more than 13 MiB (10 MiB in base64)
        sock.settimeout(5)
        assert sock.recv(1) == b""  # closed by the server
    finally:
        sock.close()


def test_empty_lines_do_not_keep_a_connection_open(guarded):
    """Bytes that begin no request (llhttp skips empty lines) leave the idle timer running."""
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        try:
            for _ in range(20):
                sock.sendall(b"\r\n")
                time.sleep(0.5)
        except OSError:
            pass
        assert read_all(sock, 10) == b""
    assert time.monotonic() - began < 9


def test_a_refused_request_with_its_body_unread_closes_its_connection(guarded):
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        sock.sendall(head("POST", "/run_code", {"Content-Type": "application/json"}, 100))  # no token, no body yet
        answer = read_all(sock, 10)
    assert status_of(answer) == 401 and b"connection: close" in answer


def test_pipelined_requests_after_a_large_body_are_each_answered(guarded):
    body = json.dumps({"code": "print(len('" + "x" * (100 << 10) + "'))"}).encode()
    first = head("POST", "/run_code", {**BOB, "Content-Type": "application/json"}, len(body)) + body
    answer = guarded.raw(first + head("GET", "/v1/ping", {}), wait_s=15)
    assert answer.count(b"HTTP/1.1 200 OK") == 2 and b"102400" in answer and answer.endswith(b"pong")


def test_headers_past_their_limit_are_431(guarded):
    answer = guarded.raw(b"GET /v1/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (100 << 10) + b"\r\n\r\n")
    assert status_of(answer) == 431


# Bodies


def test_oversized_bodies_are_refused_while_reading(guarded):
    peak_before = guarded.memory_kb("VmHWM")
    restarts = guarded.metric("toolserver_sandbox_restarts")
    for path in ("/run_code", "/run/long-batch", "/run_jupyter", "/mcp"):
        told = guarded.raw(head("POST", path, {**BOB, "Content-Type": "application/json"}, 200 << 20))
        assert status_of(told) == 413, path  # told by Content-Length: refused before a byte is read
    for path, limit_mb in (("/run_code", 8), ("/run/long-batch", 64)):
        with socket.create_connection(("127.0.0.1", guarded.port), timeout=30) as sock:
            sock.sendall(head("POST", path, {**BOB, "Content-Type": "application/json",
                                             "Transfer-Encoding": "chunked"}))
            chunk = b"a" * (1 << 20)
            sent = 0
            try:
                while sent < 200:
                    sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += 1
            except OSError:
                pass
            answer = read_all(sock, 10)
        assert status_of(answer) == 413 and sent < 200, path
        assert sent <= limit_mb + 16, f"{path}: {sent} MiB sent before the refusal"
    many_values = b"[" + b"0," * (3 << 20) + b"0]"  # 6 MiB, within the size: 3 million values
    reply = requests.post(f"{guarded.url}/run_code", data=many_values,
                          headers={**BOB, "Content-Type": "application/json"}, timeout=30)
    assert reply.status_code == 413 and "JSON values" in reply.json()["detail"]
    assert guarded.memory_kb("VmHWM") - peak_before < 400_000  # kB: the bodies never sat whole in memory
    assert guarded.metric("toolserver_sandbox_restarts") == restarts and guarded.grpc_answers(TOKENS["bob"])


def test_bodies_in_flight_together_are_bounded(guarded):
    """Many large bodies at once: each takes from one budget (http.max_bodies_mb)."""
    socks = []
    try:
        answers = []
        for _ in range(80):  # 80 x 8 MiB declared: past the 512 MiB budget
            sock = socket.create_connection(("127.0.0.1", guarded.port), timeout=10)
            sock.sendall(head("POST", "/run_code", {**BOB, "Content-Type": "application/json"}, 8 << 20))
            socks.append(sock)
        time.sleep(0.5)
        for sock in socks:
            sock.setblocking(False)
            try:
                answers.append(sock.recv(200))
            except BlockingIOError:
                answers.append(b"")
        assert any(answer.startswith(b"HTTP/1.1 503") for answer in answers)
    finally:
        for sock in socks:
            sock.close()


# Values


SURROGATE = "\\ud800"
SURROGATE_BODIES = {
    "/run_code": [f'{{"code": "print(1){SURROGATE}"}}', f'{{"code": "print(input())", "stdin": "{SURROGATE}"}}',
                  f'{{"code": "1", "files": {{"a{SURROGATE}.txt": "aGk="}}}}',
                  f'{{"code": "1", "fetch_files": ["{SURROGATE}"]}}'],
    "/run": [f'{{"type": "python", "solution": "print(1)", "sub_id": "{SURROGATE}"}}'],
    "/run/batch": [f'{{"submissions": [{{"solution": "print(1)", "input": "{SURROGATE}"}}]}}'],
    "/retrieve": [f'{{"queries": ["{SURROGATE}"]}}', f'{{"queries": ["sort"], "index": "{SURROGATE}"}}'],
    "/run_jupyter": [f'{{"cells": ["x = \\"{SURROGATE}\\""]}}'],
}
NUMBER_BODIES = [f'{{"code": "1", "{name}": {value}}}' for name in ("run_timeout", "memory_limit_MB", "compile_timeout")
                 for value in ("NaN", "Infinity", "-Infinity", "1e300", "1e999")]


@pytest.mark.parametrize("path,body", [(path, body) for path, bodies in SURROGATE_BODIES.items() for body in bodies]
                         + [("/run_code", body) for body in NUMBER_BODIES]
                         + [("/run_jupyter", '{"cells": ["1"], "total_timeout": NaN}'),
                            ("/run_jupyter", '{"cells": ["1"], "cell_timeout": 1e300}'),
                            ("/retrieve", '{"queries": ["sort"], "topk": 100000000000000000000}')])
def test_bad_values_are_400_in_every_front(guarded, path, body):
    reply = requests.post(f"{guarded.url}{path}", data=body.encode(), timeout=30,
                          headers={**BOB, "Content-Type": "application/json"})
    assert reply.status_code == 400, (reply.status_code, reply.text[:300])


def test_bad_values_reach_mcp_as_400(guarded):
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "python", '
            f'"arguments": {{"code": "print(1){SURROGATE}"}}}}}}')
    reply = requests.post(f"{guarded.url}/mcp", data=body.encode(), timeout=30,
                          headers={**BOB, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert reply.status_code == 400 and "surrogate" in reply.json()["detail"]


# Browsers


@pytest.mark.parametrize("path", JSON_ROUTES + ("/mcp",))
def test_a_cross_site_form_post_runs_nothing(open_door, path):
    """A page may post text/plain anywhere without a preflight: refused before it runs."""
    body = json.dumps({"code": "print(1)", "solution": "print(1)", "cells": ["1"], "queries": ["x"]})
    reply = requests.post(f"{open_door.url}{path}", data=body, timeout=30,
                          headers={"Content-Type": "text/plain", "Origin": "https://evil.example"})
    assert reply.status_code == 403  # its Origin, first
    reply = requests.post(f"{open_door.url}{path}", data=body, timeout=30, headers={"Content-Type": "text/plain"})
    assert reply.status_code == 415


def test_a_page_from_another_origin_is_refused(open_door):
    reply = requests.post(f"{open_door.url}/run_code", json={"code": "print(1)"}, timeout=30,
                          headers={"Origin": "http://attacker.example:8080"})
    assert reply.status_code == 403 and "http.allowed_origins" in reply.json()["detail"]


def test_a_rebound_host_name_is_refused(open_door):
    before = open_door.metric('toolserver_front_requests_total{front="sandbox_fusion",status="200"}')
    answer = open_door.raw(head("POST", "/run_code", {"Content-Type": "application/json"}, 17)
                           .replace(b"Host: 127.0.0.1", f"Host: rebound.example:{open_door.port}".encode())
                           + b'{"code": "1 + 1"}')
    assert status_of(answer) == 421 and b"print" not in answer
    for host in (f"127.0.0.1:{open_door.port}", f"localhost:{open_door.port}", "localhost"):
        reply = requests.post(f"{open_door.url}/run_code", json={"code": "print(2)"}, headers={"Host": host},
                              timeout=30)
        assert reply.status_code == 200 and reply.json()["run_result"]["stdout"] == "2\n"
    assert open_door.metric('toolserver_front_requests_total{front="sandbox_fusion",status="200"}') == before + 3


# Callers who hang up


def sleepers() -> int:
    """Processes on the host running `sleep 50` (what the batch's programs start)."""
    return sum(1 for cmdline in Path("/proc").glob("[0-9]*/cmdline") if read_cmdline(cmdline) == b"sleep\x0050\x00")


def read_cmdline(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_a_long_batch_whose_client_hangs_up_stops(guarded):
    items = [{"type": "python", "solution": "import subprocess\nsubprocess.run(['sleep', '50'])"} for _ in range(48)]
    body = json.dumps({"submissions": items}).encode()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        sock.sendall(head("POST", "/run/long-batch", {**BOB, "Content-Type": "application/json"}, len(body)) + body)
        deadline = time.monotonic() + 30
        while guarded.metric("toolserver_python_workers_busy") == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert guarded.metric("toolserver_python_workers_busy") > 0
        assert guarded.metric("toolserver_python_queue_depth") > 0
        while sleepers() == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sleepers() > 0
    gone = time.monotonic()
    while time.monotonic() - gone < 20:  # the sleeps have 50 s to go
        if (guarded.metric("toolserver_python_workers_busy") == 0
                and guarded.metric("toolserver_python_queue_depth") == 0):
            break
        time.sleep(0.2)
    assert guarded.metric("toolserver_python_workers_busy") == 0
    assert guarded.metric("toolserver_python_queue_depth") == 0
    assert sleepers() == 0  # seen from the host: the programs' processes are gone, not only their calls
    assert guarded.metric('toolserver_http_refused_total{reason="client_gone"}') >= 1
    assert guarded.grpc_answers(TOKENS["bob"])


def processes_of(users: set[str]) -> list[str]:
    listed = subprocess.run(["ps", "-eo", "user:32=,args="], capture_output=True, text=True, check=True).stdout
    return [line for line in listed.splitlines() if line.split(" ", 1)[0] in users]


def test_a_notebook_whose_client_hangs_up_closes_its_session(guarded):
    first = guarded.running.first_slot + 1 + guarded.running.workers  # the session slots follow the warm workers'
    kernel_users = {f"tsbox{index}" for index in range(first, first + guarded.running.sessions)}
    body = json.dumps({"cells": ["import time\ntime.sleep(50)"], "total_timeout": 60}).encode()
    with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
        sock.sendall(head("POST", "/run_jupyter", {**BOB, "Content-Type": "application/json"}, len(body)) + body)
        deadline = time.monotonic() + 60
        while guarded.metric("toolserver_sessions_open") == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert guarded.metric("toolserver_sessions_open") == 1
        time.sleep(1.0)  # the cell is running
        assert processes_of(kernel_users)
    gone = time.monotonic()
    while guarded.metric("toolserver_sessions_open") and time.monotonic() - gone < 20:
        time.sleep(0.2)
    assert guarded.metric("toolserver_sessions_open") == 0
    while time.monotonic() - gone < 20 and processes_of(kernel_users):
        time.sleep(0.2)
    assert processes_of(kernel_users) == []  # seen from the host: the kernel and its jail are gone


# Framing and tokens


def test_content_length_with_transfer_encoding_is_one_400(guarded):
    smuggled = (b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /status HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = guarded.raw(smuggled)
    assert status_of(answer) == 400 and answer.count(b"HTTP/1.1") == 1


def test_bare_line_feeds_are_400(guarded):
    answer = guarded.raw(b"GET /v1/ping HTTP/1.1\nHost: 127.0.0.1\n\n")
    assert status_of(answer) == 400 and answer.count(b"HTTP/1.1") == 1


def test_every_route_but_the_health_checks_needs_a_token(guarded):
    assert requests.get(f"{guarded.url}/status", timeout=10).status_code == 401
    assert requests.get(f"{guarded.url}/status", headers=BOB, timeout=10).status_code == 200
    for path in ("/v1/ping", "/ping"):
        assert requests.get(f"{guarded.url}{path}", timeout=10).text == "pong"
    for path in JSON_ROUTES + ("/mcp",):
        reply = requests.post(f"{guarded.url}{path}", json={}, timeout=10)
        assert reply.status_code == 401 and reply.json()["error"] == "invalid_token", path


# Fuzz

FIELDS = ("code", "language", "stdin", "run_timeout", "compile_timeout", "memory_limit_MB", "files", "fetch_files",
          "cells", "cell_timeout", "total_timeout", "kernel", "solution", "input", "expected_output", "type", "sub_id",
          "submissions", "queries", "query", "topk", "index", "return_scores")
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=5), inner, max_size=4),
                      max_leaves=12)
BODIES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6) | VALUES


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(JSON_ROUTES), body=BODIES)
def test_fuzzed_bodies_never_crash_a_front(open_door, path, body):
    reply = requests.post(f"{open_door.url}{path}", json=body, timeout=90)
    assert reply.status_code < 500 or reply.status_code in (503, 504), (reply.status_code, reply.text[:300])
    assert reply.headers["content-type"].startswith("application/json")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(tool=st.sampled_from(["python", "search", "lean", "python_session_close", "nothing"]),
       arguments=st.dictionaries(st.sampled_from(["code", "session_id", "query", "index", "top_k", "header",
                                                  "timeout_s"]), VALUES, max_size=4) | VALUES)
def test_fuzzed_mcp_calls_never_crash(open_door, tool, arguments):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = requests.post(f"{open_door.url}/mcp", json=body, timeout=150,
                          headers={"Accept": "application/json, text/event-stream"})
    assert reply.status_code < 500, (reply.status_code, reply.text[:300])


def test_after_the_attacks_the_servers_are_whole(guarded, open_door):
    for door in (guarded, open_door):
        assert door.running.process.poll() is None
        assert "Traceback" not in door.running.output()
    assert guarded.grpc_answers(TOKENS["bob"]) and open_door.grpc_answers()


def test_threads_of_slow_clients_do_not_block_fast_ones(guarded):
    """While slow clients hold connections open, honest calls are answered."""
    stop = threading.Event()

    def slow() -> None:
        with socket.create_connection(("127.0.0.1", guarded.port)) as sock:
            sock.sendall(b"POST /run_code HTTP/1.1\r\n")
            stop.wait(5)

    threads = [threading.Thread(target=slow) for _ in range(50)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(10):
            reply = requests.post(f"{guarded.url}/run_code", json={"code": "print(3)"}, headers=BOB, timeout=30)
            assert reply.json()["run_result"]["stdout"] == "3\n"
    finally:
        stop.set()
        for thread in threads:
            thread.join()
