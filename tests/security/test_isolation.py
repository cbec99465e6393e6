"""The isolation and robustness holes found from outside, each judged from the host.

Jail checks run with the guard off (`jail_client`, whose server also has a session), so
that what holds is the jail: no Unix socket of a host service, no System V IPC, a
namespace of its own for everything firejail can give one, and caps that cover every
process of a call or a session. The rest (sessions, bad input, slow readers) run on the
default server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

import grpc
import pytest

from sandbox.sessions import HOLDER_NAME
from sandbox.slots import processes_of_uid
from tests.security.test_attacks import still_serving
from toolclient.client import PermissionDenied, python_request
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc

HOST_VISIBLE = Path("/var/lib/toolserver")  # read-only inside every jail, writable by the host

UNIX_CONNECT = """
import socket
out = {}
for kind in ('stream', 'datagram'):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if kind == 'stream' else socket.SOCK_DGRAM)
        s.connect(PATH) if kind == 'stream' else s.sendto(b'x', PATH)
        out[kind] = 'reached'
    except OSError as exc:
        out[kind] = type(exc).__name__
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'x', PATH)
    out['pair'] = 'reached'
except OSError as exc:
    out['pair'] = type(exc).__name__
out
"""

SYSV_SHM = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
key = libc.shmget(0, 1 << 20, 0o1666)
(key, os.strerror(ctypes.get_errno()) if key < 0 else '')
"""


@contextlib.contextmanager
def host_service_sockets():
    """A stream and a datagram Unix socket that anyone may use, in a host directory the
    jail can see: what a host daemon's sockets look like from inside."""
    paths = [HOST_VISIBLE / f".test-{os.getpid()}-{kind}.sock" for kind in ("stream", "datagram")]
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        for sock, path in zip((stream, datagram), paths):
            path.unlink(missing_ok=True)
            sock.bind(str(path))
            path.chmod(0o777)
            sock.setblocking(False)
        stream.listen(4)
        yield paths, stream, datagram
    finally:
        stream.close()
        datagram.close()
        for path in paths:
            path.unlink(missing_ok=True)


def reached_host(stream: socket.socket, datagram: socket.socket) -> bool:
    for attempt in (stream.accept, lambda: datagram.recv(16)):
        try:
            attempt()
            return True
        except BlockingIOError:
            pass
    return False


def in_session(client, session_id: str, code: str, **limits) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(python=pb.PythonCall(code=code, session_id=session_id),
                                            limits=pb.Limits(**limits)))


def server_rss_mb(server) -> float:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def server_descriptors(server) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


# --- the host out of reach ---------------------------------------------------------------

def test_host_unix_sockets_are_out_of_reach_of_calls(jail_client):
    with host_service_sockets() as ((stream_path, datagram_path), stream, datagram):
        code = UNIX_CONNECT.replace("PATH", repr(str(stream_path))).replace(
            "s.sendto(b'x', PATH)", f"s.sendto(b'x', {str(datagram_path)!r})").replace(
            "a.sendto(b'x', PATH)", f"a.sendto(b'x', {str(datagram_path)!r})")
        response = jail_client.run_python(code)
        assert response.outcome == pb.OK, response.stderr
        assert "reached" not in eval(response.python.value).values(), response.python.value
        assert not reached_host(stream, datagram)
    still_serving(jail_client)


def test_host_unix_sockets_are_out_of_reach_of_sessions(jail_client):
    session = jail_client.open_session()
    try:
        with host_service_sockets() as ((stream_path, _), stream, datagram):
            response = in_session(jail_client, session.session_id, UNIX_CONNECT.replace("PATH", repr(str(stream_path))))
            assert response.outcome == pb.OK, response.stderr
            assert "reached" not in eval(response.python.value).values(), response.python.value
            assert not reached_host(stream, datagram)
        assert in_session(jail_client, session.session_id, "6 * 7").python.value == "42"  # its own sockets work
    finally:
        jail_client.close_session(session.session_id)


def test_no_system_v_ipc_in_calls_or_sessions(jail_client):
    key, error = eval(jail_client.run_python(SYSV_SHM).python.value)
    assert key == -1 and error == "Permission denied"
    session = jail_client.open_session()
    try:
        key, error = eval(in_session(jail_client, session.session_id, SYSV_SHM).python.value)
        assert key == -1 and error == "Permission denied"
    finally:
        jail_client.close_session(session.session_id)


def test_every_namespace_firejail_can_make_is_the_jails_own(jail_client):
    names = ["ipc", "mnt", "net", "pid", "uts"]
    seen = eval(jail_client.run_python(
        f"import os, socket\n({{n: os.readlink('/proc/self/ns/' + n) for n in {names!r}}}, socket.gethostname())"
    ).python.value)
    links, hostname = seen
    assert all(links[name] != os.readlink(f"/proc/self/ns/{name}") for name in names), links
    assert hostname == "sandbox" != socket.gethostname()


# --- one memory limit over every process ---------------------------------------------------

def forked_hogs(megabytes: int) -> str:
    """A program that starts four processes of megabytes each, each under a call's memory
    limit alone, and returns their exit statuses, sorted."""
    return f"""
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray({megabytes} << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(2)
        os._exit(0)
    children.append(pid)
sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children)
"""


FORKED_HOGS = forked_hogs(150)


def test_a_calls_processes_share_its_memory_limit(jail_client):
    response = jail_client.run_python(FORKED_HOGS, memory_mb=256, timeout_ms=30000)
    assert response.outcome == pb.MEMORY_LIMIT and "together" in response.error, response
    statuses = eval(response.python.value)  # what the program went on to return is kept
    assert statuses.count(-9) >= 2, statuses  # 4 x 150 MB under 256 MB: most are ended
    still_serving(jail_client)


def test_a_call_whose_own_process_is_ended_for_memory_is_memory_limit(jail_client):
    code = ("import os, time\nif os.fork() == 0:\n    b = bytearray(100 << 20)\n"
            "    for i in range(0, len(b), 4096): b[i] = 1\n    time.sleep(5)\n    os._exit(0)\n"
            "time.sleep(0.5)\nmine = bytearray(220 << 20)\nfor i in range(0, len(mine), 4096): mine[i] = 1")
    response = jail_client.run_python(code, memory_mb=256, timeout_ms=30000)
    assert response.outcome == pb.MEMORY_LIMIT, response
    assert "together" in response.error
    still_serving(jail_client)


def is_the_jails_own(pid: int) -> bool:
    """Whether pid is one of a session jail's own processes: firejail's two, its holder."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return name == HOLDER_NAME or command.startswith(b"firejail\0")


def test_a_sessions_processes_share_its_memory_and_daemons_die_with_it(jail_client):
    session = jail_client.open_session(memory_mb=256)
    uid = int(in_session(jail_client, session.session_id, "import os\nos.getuid()").python.value)
    try:
        response = in_session(jail_client, session.session_id, FORKED_HOGS, timeout_ms=30000)
        assert response.outcome == pb.MEMORY_LIMIT and "together" in response.error, response
        assert eval(response.python.value).count(-9) >= 2
        # Double-forked: the intermediate has forked the daemon by the time the cell reaps it.
        daemon = ("import os, time\nfirst = os.fork()\nif first == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                  "        while True: time.sleep(1)\n    os._exit(0)\nos.waitpid(first, 0)\n'started'")
        assert in_session(jail_client, session.session_id, daemon).python.value == "'started'"
        # Its own and the daemon; its jail (firejail and its holder) may serve the next session, recycled.
        session_processes = {pid for pid in processes_of_uid(uid) if not is_the_jails_own(pid)}
        assert len(session_processes) >= 2
    finally:
        jail_client.close_session(session.session_id)
    deadline = time.monotonic() + 10
    while session_processes & set(processes_of_uid(uid)) and time.monotonic() < deadline:
        time.sleep(0.1)  # the slot's uid may already hold the jail of a session made ahead
    assert not session_processes & set(processes_of_uid(uid)), "a process of the closed session survived"


def test_a_sessions_home_is_capped_like_a_calls(jail_client):
    session = jail_client.open_session()
    try:
        fill = ("import os\nblock = b'x' * (1 << 20)\nwritten = 0\ntry:\n    for i in range(128):\n"
                "        with open(f'fill{i}', 'wb') as f:\n            for _ in range(8):\n"
                "                f.write(block)\n                f.flush()\n                written += 1\n"
                "except OSError as exc:\n    err = exc.errno\n(written, err)")
        written, err = eval(in_session(jail_client, session.session_id, fill, timeout_ms=30000).python.value)
        assert err == 28 and written <= 257  # ENOSPC at limits.max_scratch_mb (256)
        many = ("import glob, os\nfor path in glob.glob('fill*'):\n    os.remove(path)\nn = 0\ntry:\n    for i in range(100000):\n"
                "        open(f'f{i}', 'w').close()\n        n += 1\nexcept OSError as exc:\n    err = exc.errno\n(n, err)")
        made, err = eval(in_session(jail_client, session.session_id, many, timeout_ms=60000).python.value)
        assert err == 28 and made < 16384  # limits.max_scratch_files
        assert in_session(jail_client, session.session_id, "1 + 1").python.value == "2"
    finally:
        jail_client.close_session(session.session_id)


def test_a_session_keeps_nothing_on_the_host_disk(jail_client):
    session = jail_client.open_session()
    home = eval(in_session(jail_client, session.session_id,
                           "import os\nopen('kept', 'w').write('x' * 1000)\nos.environ['HOME']").python.value)
    jail_client.close_session(session.session_id)
    assert not any(Path(home).iterdir()), "the session's files or sockets reached the host directory"


# --- sessions held to the caller's limits ------------------------------------------------

def test_open_session_honours_its_limits(client):
    session = client.open_session(memory_mb=256)
    try:
        response = in_session(client, session.session_id, "b = bytearray(700 << 20)")
        assert response.outcome == pb.MEMORY_LIMIT, response
        assert in_session(client, session.session_id, "b = bytearray(100 << 20)\nlen(b) >> 20").python.value == "100"
    finally:
        client.close_session(session.session_id)


def test_open_session_honours_the_callers_memory_cap(policy_server):
    from tests.security.test_auth import as_caller

    with as_caller(policy_server, "dave") as dave:
        with pytest.raises(PermissionDenied):
            dave.open_session(memory_mb=700)
        session = dave.open_session()
        try:
            response = in_session(dave, session.session_id, "b = bytearray(700 << 20)")
            assert response.outcome == pb.MEMORY_LIMIT, response
        finally:
            dave.close_session(session.session_id)


def test_cancelled_open_sessions_leave_nothing_behind(server, client):
    before = server_descriptors(server)
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.ToolServerStub(channel)
        for _ in range(8):  # a session made ahead is handed over in milliseconds: some opens may finish
            try:
                opened = stub.OpenSession(pb.OpenSessionRequest(), timeout=0.005)
            except grpc.RpcError as exc:
                assert exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)
            else:
                client.close_session(opened.session_id)
    sessions = []
    deadline = time.monotonic() + 60
    while len(sessions) < 2 and time.monotonic() < deadline:  # orphans close as soon as they are up
        try:
            sessions.append(client.open_session())
        except Exception:
            time.sleep(0.5)
    try:
        assert len(sessions) == 2, "a cancelled OpenSession kept its place"
    finally:
        for session in sessions:
            client.close_session(session.session_id)
    deadline = time.monotonic() + 60
    while server_descriptors(server) > before + 4 and time.monotonic() < deadline:
        time.sleep(0.5)  # the closed sessions' slots are made ready again
    assert server_descriptors(server) <= before + 4


def test_session_output_is_capped_as_it_arrives(server, client):
    session = client.open_session()
    try:
        before = server_rss_mb(server)
        response = in_session(client, session.session_id, "print('y' * 100_000_000)", timeout_ms=30000,
                              max_output_bytes=16384)
        assert response.outcome == pb.OUTPUT_LIMIT and response.truncated and len(response.stdout) <= 16384
        background = ("import threading, sys, time\ndef flood():\n    for _ in range(320):\n"
                      "        sys.stdout.write('z' * (1 << 20))\n        time.sleep(0.005)\n"
                      "threading.Thread(target=flood, daemon=True).start()\n'started'")
        assert in_session(client, session.session_id, background).python.value == "'started'"
        time.sleep(5)
        assert in_session(client, session.session_id, "6 * 7", timeout_ms=30000).python.value == "42"
        assert server_rss_mb(server) - before < 120, "the server kept output nobody asked for"
    finally:
        client.close_session(session.session_id)


# --- bad input answered as it should be -----------------------------------------------------

SURROGATE_VALUE = "class Odd:\n    def __repr__(self):\n        return 'a\\udc80b'\nOdd()"
SURROGATE_ERROR = "raise ValueError('bad \\udc80 text')"


def test_lone_surrogates_in_results_are_made_valid(client):
    value = client.run_python(SURROGATE_VALUE)
    assert value.outcome == pb.OK and value.python.value == "a\ufffdb"
    error = client.run_python(SURROGATE_ERROR)
    assert error.outcome == pb.ERROR and "\ufffd" in error.error
    answers = list(client.stub.ExecuteStream(iter([python_request(SURROGATE_VALUE, request_id="v"),
                                                   python_request(SURROGATE_ERROR, request_id="e")]), timeout=60))
    assert {a.request_id: a.outcome for a in answers} == {"v": pb.OK, "e": pb.ERROR}


BAD_ARGUMENTS = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge integer": '{"code": ' + "9" * 5000 + "}",
    "lone surrogate": '{"code": "\\ud800"}',
    "lone surrogate key": '{"\\ud800": "x", "code": "1"}',
}


@pytest.mark.parametrize("name", sorted(BAD_ARGUMENTS))
def test_bad_json_arguments_are_invalid_argument(client, name):
    request = pb.ExecuteRequest(request_id=name, json=pb.JsonCall(tool="python", arguments=BAD_ARGUMENTS[name]))
    with pytest.raises(grpc.RpcError) as info:
        client.stub.Execute(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    [answer] = list(client.stub.ExecuteStream(iter([request]), timeout=30))
    assert answer.outcome == pb.INVALID and answer.error.startswith("INVALID_ARGUMENT")
    still_serving(client)


def test_a_stream_that_is_not_read_holds_bounded_answers(server, client):
    before = server_rss_mb(server)
    requests = [python_request("print('x' * 16000)", request_id=str(i)) for i in range(3000)]
    with grpc.insecure_channel(server.target) as channel:
        answers = pb_grpc.ToolServerStub(channel).ExecuteStream(iter(requests), timeout=300)
        time.sleep(8)  # the client reads nothing: the server must stop taking its requests
        grown = server_rss_mb(server) - before
        seen = [answer.request_id for answer in answers]
    assert grown < 100, f"the server grew by {grown:.0f} MB for a client that read nothing"
    assert sorted(seen, key=int) == [str(i) for i in range(3000)]
    still_serving(client)
