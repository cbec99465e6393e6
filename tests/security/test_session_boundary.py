"""A session is as hard a boundary as a call: the same view of the host, and nothing it
writes can make the server act on anything but that session.

Every probe runs as a stateless call and in a session, on sessions of three kinds (one
made ahead, one made on demand, one on a slot a closed session used), and the two answers
must be equal. Then the session's wire is attacked as its code can: a main process that
exits while a child keeps its descriptors (and a victim takes its pid), an endless frame,
a flood of frames, a forged answer, a caller that goes away mid-call, opens whose caller
is gone.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import grpc
import pytest

from sandbox.session_probes import MOUNT_VIEW_PROBE
from sandbox.sessions import HOLDER_NAME
from sandbox.slots import processes_of_uid
from tests.conftest import RunningServer
from tests.integration.test_metrics import scrape
from toolclient.client import NotFound, ResourceExhausted
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc

WORLD_WRITABLE = Path("/srv/toolserver-test-1777")  # a host directory anyone may write, outside every tmp

PROBES = {
    "root read-only": "import os\nbool(os.statvfs('/').f_flag & os.ST_RDONLY)",
    "mount view": MOUNT_VIEW_PROBE % ([],),  # what it may write, where it reaches it
    "server tree": f"import os\nos.path.exists({str(Path(__file__).resolve().parents[2])!r} + '/README.md')",
    "host write": f"import os\ntry:\n    open({str(WORLD_WRITABLE)!r} + '/probe', 'w').close()\n    r = 'written'\n"
                  "except OSError as e:\n    r = type(e).__name__\nr",
    "shadow": "try:\n    open('/etc/shadow').read(1)\n    r = 'read'\nexcept OSError as e:\n    r = type(e).__name__\nr",
    "network": "import socket\ntry:\n    socket.create_connection(('127.0.0.1', SERVER_PORT), timeout=1)\n"
               "    r = 'reached'\nexcept OSError as e:\n    r = type(e).__name__\nr",  # the host's loopback
    "interfaces": "sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:])",
    "processes": "import os\nlen([p for p in os.listdir('/proc') if p.isdigit()]) < 8",  # its jail's only
    "signal every process": "import os, signal\ntry:\n    os.kill(-1, 0)\n    r = 'some'\n"
                            "except OSError as e:\n    r = type(e).__name__\nr",
    "system v ipc": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmget(0, 4096, 0o1666) < 0",
    "uid": "import os\nos.getuid() != 0 and os.geteuid() != 0",
    "capabilities": "[l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd'))]",
    "no new privileges": "[l.split()[1] for l in open('/proc/self/status') if l.startswith('NoNewPrivs')]",
    "hostname": "import socket\nsocket.gethostname()",
}


@pytest.fixture(scope="module")
def boundary_server(tmp_path_factory):
    WORLD_WRITABLE.mkdir(exist_ok=True)
    WORLD_WRITABLE.chmod(0o1777)
    running = RunningServer(tmp_path_factory.mktemp("boundary"), workers=1, sessions=2, slim_workers=0,
                            scientific_workers=0, config="[sessions]\nready = 1\n")
    yield running
    running.stop()
    subprocess.run(["rm", "-rf", str(WORLD_WRITABLE)], check=False)


def value(client, code: str, session_id: str = "", port: int = 0) -> str:
    reply = client.run_python(code.replace("SERVER_PORT", str(port)), session_id=session_id)
    assert reply.outcome == pb.OK, (code, reply.error, reply.python.stderr)
    return reply.python.value


@pytest.fixture(scope="module")
def call_answers(boundary_server):
    with boundary_server.client() as client:
        return {name: value(client, code, port=boundary_server.port) for name, code in PROBES.items()}


@pytest.mark.parametrize("kind", ["made ahead", "made on demand", "after its slot's reuse"])
def test_a_session_sees_and_reaches_what_a_call_does(boundary_server, call_answers, kind):
    with boundary_server.client() as client:
        held = []
        if kind == "made on demand":
            held.append(client.open_session())  # takes the one made ahead: the next is made now
        elif kind == "after its slot's reuse":
            for _ in range(2):  # both slots used and closed: the next session is on a slot used before
                first, second = client.open_session(), client.open_session()
                value(client, "open('left', 'w').write('x')", first.session_id)
                client.close_session(first.session_id)
                client.close_session(second.session_id)
        session = client.open_session()
        try:
            answers = {name: value(client, code, session.session_id, boundary_server.port)
                       for name, code in PROBES.items()}
        finally:
            for opened in (session, *held):
                client.close_session(opened.session_id)
    assert answers == call_answers
    assert call_answers["root read-only"] == "True" and call_answers["server tree"] == "False"
    assert call_answers["host write"] != "'written'" and not any(WORLD_WRITABLE.iterdir())


def session_main_pid(uid: int) -> int:
    """The host pid of a session's own process: its slot's Python, not firejail's nor the holder's."""
    for pid in processes_of_uid(uid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if command.endswith(b"python") or b"python3" in command:
            return pid
    raise AssertionError("no session process")


def uid_of_session(client, session_id: str) -> int:
    return int(value(client, "import os\nos.getuid()", session_id))


def place_process_at(pid: int) -> subprocess.Popen | None:
    """A host process (root, outside any jail) started on pid, as a process that took a freed
    pid would be; None when another process took it first."""
    for _ in range(50):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        victim = subprocess.Popen(["sleep", "60"])
        if victim.pid == pid:
            return victim
        victim.kill()
        victim.wait()
    return None


def test_a_session_ends_when_its_process_exits_and_no_freed_pid_is_signalled(boundary_server):
    with boundary_server.client() as client:
        session = client.open_session()
        main = session_main_pid(uid_of_session(client, session.session_id))
        started = time.monotonic()
        reply = client.run_python("import os, time\nif os.fork() == 0:\n    time.sleep(60)\nos._exit(0)",
                                  session_id=session.session_id, timeout_ms=30000)
        # python3 ends with status 0 there; its child holds fd 3 and the pipes, and the answer comes at once
        assert (reply.outcome, reply.python.exit_code) == (pb.OK, 0) and time.monotonic() - started < 10
        deadline = time.monotonic() + 10
        while Path(f"/proc/{main}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = place_process_at(main)
        if victim is None:
            pytest.skip("the freed pid was taken by another process first")
        try:
            with pytest.raises(NotFound):
                client.close_session(session.session_id)
            other = client.open_session()
            client.run_python("import time\ntime.sleep(5)", session_id=other.session_id, timeout_ms=200)  # SIGINT
            client.close_session(other.session_id)  # SIGKILL
            time.sleep(0.5)
            assert victim.poll() is None, "the server signalled a process that took a session's freed pid"
        finally:
            victim.kill()
            victim.wait()


def server_cpu_s(server: RunningServer) -> float:
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_rss_mb(server: RunningServer) -> float:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


ENDLESS_FRAME = """
import os, struct
os.write(3, struct.pack('>I', 2**31))
block = b'x' * (1 << 20)
for _ in range(96):
    os.write(3, block)
"""

FRAME_FLOOD = """
import json, os, struct, threading
frame = json.dumps({'value': 'forged'}).encode()
frame = struct.pack('>I', len(frame)) + frame
def flood():
    for _ in range(14_000_000 // len(frame) // 64):
        os.write(3, frame * 64)
threading.Thread(target=flood).start()
"""


def another_callers_latency_s(server: RunningServer, stop: threading.Event, seen: list[float]) -> None:
    with server.client() as client:
        while not stop.is_set():
            started = time.monotonic()
            client.run_python("1 + 1")
            seen.append(time.monotonic() - started)


@pytest.mark.parametrize("attack", ["endless frame", "frame flood"])
def test_a_hostile_wire_closes_its_session_and_costs_the_server_nothing(boundary_server, attack):
    code = ENDLESS_FRAME if attack == "endless frame" else FRAME_FLOOD
    with boundary_server.client() as client:
        session = client.open_session()
        cpu, rss = server_cpu_s(boundary_server), server_rss_mb(boundary_server)
        stop, latencies = threading.Event(), []
        other = threading.Thread(target=another_callers_latency_s, args=(boundary_server, stop, latencies))
        other.start()
        try:
            first = client.run_python(code, session_id=session.session_id, timeout_ms=10000)
            time.sleep(1)  # the flood goes on after its call
            second = None
            if first.outcome == pb.OK:
                second = client.run_python("'mine'", session_id=session.session_id)
        finally:
            stop.set()
            other.join(30)
        broken = first if first.outcome != pb.OK else second
        assert broken is not None and broken.outcome == pb.CRASHED and "protocol" in broken.error
        assert broken.python.value != "forged"
        with pytest.raises(NotFound):
            client.run_python("1", session_id=session.session_id)
        assert server_cpu_s(boundary_server) - cpu < 3.0
        assert server_rss_mb(boundary_server) - rss < 40
        assert latencies and sorted(latencies)[len(latencies) // 2] < 0.5


def test_a_forged_answer_is_not_believed(boundary_server):
    forge = ("import json, os, struct\nframe = json.dumps({'value': \"'forged'\", 'id': 'guess'}).encode()\n"
             "os.write(3, struct.pack('>I', len(frame)) + frame)\n'real'")
    with boundary_server.client() as client:
        session = client.open_session()
        reply = client.run_python(forge, session_id=session.session_id)
        assert reply.outcome == pb.CRASHED and "protocol" in reply.error and reply.python.value != "'forged'"
        with pytest.raises(NotFound):
            client.run_python("1", session_id=session.session_id)


DEEP_FRAME = ("import os, struct\nframe = b'[' * 200000 + b']' * 200000\n"
              "os.write(3, struct.pack('>I', len(frame)) + frame)\n'real'")
# The cell's token is in run_call's locals, which the tenant's code can reach: the answer it
# forges carries the right id, and displays of a shape no session makes.
FORGED_DISPLAYS = ("import json, os, struct, sys\nframe = sys._getframe()\n"
                   "while 'call' not in frame.f_locals:\n    frame = frame.f_back\n"
                   "answer = {'id': frame.f_locals['call']['id'], 'outcome': 'OK', 'displays': [{'kind': 'display_data', "
                   "'data': {'image/png': 'not base64 @@'}}]}\n"
                   "data = json.dumps(answer).encode()\nos.write(3, struct.pack('>I', len(data)) + data)\nimport time\n"
                   "time.sleep(5)")


@pytest.mark.parametrize("code", [DEEP_FRAME, FORGED_DISPLAYS], ids=["nested past the parser", "forged displays"])
def test_a_frame_the_host_cannot_read_closes_its_session(boundary_server, code):
    with boundary_server.client() as client:
        session = client.open_session()
        reply = client.run_python(code, session_id=session.session_id, timeout_ms=10000)
        assert reply.outcome == pb.CRASHED and "protocol" in reply.error and not reply.python.displays
        with pytest.raises(NotFound):
            client.run_python("1", session_id=session.session_id)
        assert client.run_python("1 + 1").python.value == "2"  # the server serves on


def test_a_cancelled_call_is_interrupted_and_the_next_call_gets_its_own_answer(boundary_server):
    with boundary_server.client() as client:
        session = client.open_session()
        try:
            with grpc.insecure_channel(boundary_server.target) as channel:
                stub = pb_grpc.ToolServerStub(channel)
                request = pb.ExecuteRequest(python=pb.PythonCall(code="n = 0\nwhile True:\n    n += 1",
                                                                 session_id=session.session_id),
                                            limits=pb.Limits(timeout_ms=60000))
                with pytest.raises(grpc.RpcError) as cancelled:
                    stub.Execute(request, timeout=1.0)
                assert cancelled.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            started = time.monotonic()
            reply = client.run_python("n > 0, 'second'", session_id=session.session_id, timeout_ms=20000)
            assert reply.outcome == pb.OK and reply.python.value == "(True, 'second')"
            assert time.monotonic() - started < 10  # the loop was interrupted, not waited out
            assert client.run_python("'third'", session_id=session.session_id).python.value == "'third'"
        finally:
            client.close_session(session.session_id)


def test_opens_whose_caller_is_gone_close_what_they_made(boundary_server):
    def sessions_open() -> float:
        return scrape(boundary_server)["toolserver_sessions_open"]

    before = sessions_open()
    with grpc.insecure_channel(boundary_server.target) as channel:
        stub = pb_grpc.ToolServerStub(channel)
        for timeout in (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3):
            try:
                opened = stub.OpenSession(pb.OpenSessionRequest(), timeout=timeout)
            except grpc.RpcError as exc:
                assert exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)
            else:
                stub.CloseSession(pb.CloseSessionRequest(session_id=opened.session_id))
    deadline = time.monotonic() + 60
    while sessions_open() > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sessions_open() == before
    with boundary_server.client() as client:  # and no open whose caller is gone holds a place
        held = []
        while len(held) < 2 and time.monotonic() < deadline:
            try:
                held.append(client.open_session())
            except ResourceExhausted:
                time.sleep(0.2)
        for session in held:
            client.close_session(session.session_id)
    assert len(held) == 2, "a cancelled OpenSession kept its place"


def test_a_session_flooding_its_stdout_as_fast_as_it_can_does_not_hold_the_server(boundary_server):
    flood = ("import os, threading\ndef flood():\n    block = b'z' * 65536\n    while True:\n"
             "        os.write(1, block)\nthreading.Thread(target=flood, daemon=True).start()\n'started'")
    with boundary_server.client() as client:
        session = client.open_session()
        stop, latencies = threading.Event(), []
        other = threading.Thread(target=another_callers_latency_s, args=(boundary_server, stop, latencies))
        other.start()
        try:
            assert client.run_python(flood, session_id=session.session_id).python.value == "'started'"
            time.sleep(1)  # between calls nobody reads: the writer blocks
            cpu = server_cpu_s(boundary_server)
            reply = client.execute(pb.ExecuteRequest(python=pb.PythonCall(code="6 * 7", session_id=session.session_id),
                                                     limits=pb.Limits(max_output_bytes=4096, timeout_ms=5000)))
            assert reply.outcome in (pb.OK, pb.OUTPUT_LIMIT) and len(reply.stdout) <= 4096
            time.sleep(1)
            assert server_cpu_s(boundary_server) - cpu < 2.0
        finally:
            stop.set()
            other.join(30)
            client.close_session(session.session_id)
        assert latencies and sorted(latencies)[len(latencies) // 2] < 0.5


@pytest.fixture(scope="module")
def one_slot_server(tmp_path_factory):
    """One session slot, one session made ahead: each session after the first is made in the
    jail of the one before it, recycled."""
    running = RunningServer(tmp_path_factory.mktemp("recycling"), workers=1, sessions=1, slim_workers=0,
                            scientific_workers=0, config="[sessions]\nready = 1\n")
    yield running
    running.stop()


# Which jail a session is in: its holder's pid and start time (a namespace's inode number
# is given again to the next namespace made once it is freed).
JAIL_ID = ("import os\n[(p, open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[19]) for p in os.listdir('/proc') "
           f"if p.isdigit() and open(f'/proc/{{p}}/comm').read().strip() == {HOLDER_NAME!r}]")

LEAVE_EVERYTHING = r"""
import os, signal
written = []
for line in open('/proc/self/mountinfo'):
    place = line.split()[4]
    try:
        open(os.path.join(place, 'left-behind'), 'w').write('x')
        written.append(place)
    except OSError:
        pass
os.makedirs('deep/locked')
open('deep/locked/file', 'w').write('x')
os.chmod('deep/locked', 0)
open('/dev/shm/filled', 'wb').write(os.urandom(8 << 20))
os.environ['LEFT_BEHIND'] = '1'
import ctypes
librt = ctypes.CDLL('librt.so.1', use_errno=True)
queue = librt.mq_open(b'/left-behind', os.O_CREAT | os.O_RDWR, 0o600, None)  # a POSIX message queue outlives its process
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(0x1eff, 4096, 0o1600)  # so would a System V segment
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(600)
    os._exit(0)
held = bytearray(160 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
(sorted(set(written)), queue, segment)
"""

LOOK_FOR_IT = r"""
import os
left = {}
for line in open('/proc/self/mountinfo'):
    place = line.split()[4]
    try:
        names = os.listdir(place)
    except OSError:
        continue
    if 'left-behind' in names:
        left[place] = names
mine = {1, os.getpid(), os.getppid()}
others = {}
for pid in (int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in mine):
    others[pid] = open(f'/proc/{pid}/comm').read().strip()
ipc = [len(open('/proc/sysvipc/' + kind).read().splitlines()) - 1 for kind in ('shm', 'sem', 'msg')]
(left, sorted(os.listdir(os.environ['HOME'])), sorted(os.listdir('/dev/shm')), sorted(others.values()), ipc,
 'LEFT_BEHIND' in os.environ)
"""


def slot_memory_cgroup(uid: int) -> Path:
    """The memory cgroup a slot's processes are in (its holder's, which a session shares)."""
    for pid in processes_of_uid(uid):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                return Path("/sys/fs/cgroup/memory") / path.lstrip("/")
    raise AssertionError("no process of the slot")


def test_a_session_in_a_recycled_jail_finds_nothing_of_the_last_one(one_slot_server):
    """The second session is made in the first one's jail (the same holder), and
    finds nothing it left: no file in any place it could write, no process (a double-forked
    daemon that ignores SIGTERM included), no IPC object (System V and POSIX message queues
    are refused; POSIX shared memory and semaphores are files in /dev/shm), no environment,
    and its slot's memory cgroup holds no charge or peak of it."""
    with one_slot_server.client() as client:
        first = client.open_session()
        try:
            uid = uid_of_session(client, first.session_id)
            jail = value(client, JAIL_ID, first.session_id)
            reply = client.run_python(LEAVE_EVERYTHING, session_id=first.session_id, timeout_ms=30000)
            assert reply.outcome == pb.OK, (reply.error, reply.stderr)
            written, queue, segment = eval(reply.python.value)
            cgroup = slot_memory_cgroup(uid)
            peak = int((cgroup / "memory.max_usage_in_bytes").read_text())
        finally:
            client.close_session(first.session_id)
        assert {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"} <= set(written) and len(written) == 5, written
        assert queue == segment == -1  # refused in every jail: no IPC object can outlive its session
        assert peak > 160 << 20
        second = client.open_session()
        try:
            assert uid_of_session(client, second.session_id) == uid
            assert value(client, JAIL_ID, second.session_id) == jail, "a new jail, not the recycled one"
            seen = eval(value(client, LOOK_FOR_IT, second.session_id))
        finally:
            client.close_session(second.session_id)
        assert jail, "no holder seen"
        assert seen == ({}, [], [], [HOLDER_NAME], [0, 0, 0], False)  # of processes, the jail's holder only
        assert int((cgroup / "memory.max_usage_in_bytes").read_text()) < 120 << 20
        assert int((cgroup / "memory.failcnt").read_text()) == 0
        assert scrape(one_slot_server)["toolserver_sessions_recycled"] >= 1


def test_a_jail_whose_holder_was_killed_is_not_recycled(one_slot_server):
    """A session can end its own jail (its holder is of its uid): the jail is then not whole,
    so it is destroyed, and the next session gets a new one that works."""
    with one_slot_server.client() as client:
        first = client.open_session()
        before = value(client, JAIL_ID, first.session_id)
        kill = ("import os, signal\nfor pid in os.listdir('/proc'):\n    if pid.isdigit() and "
                f"open(f'/proc/{{pid}}/comm').read().strip() == {HOLDER_NAME!r}:\n"
                "        os.kill(int(pid), signal.SIGKILL)\n")
        client.run_python(kill, session_id=first.session_id)
        try:
            client.close_session(first.session_id)
        except NotFound:
            pass  # its process ended with its jail
        second = client.open_session()
        try:
            assert value(client, JAIL_ID, second.session_id) not in (before, "[]")
            assert value(client, "6 * 7", second.session_id) == "42"
        finally:
            client.close_session(second.session_id)


# A tenant's try at what it leaves in its jail: its holder (and the jail's init), through
# /proc/PID/mem (a loop written over its code, as a takeover does), ptrace, its descriptors
# (the pipes to the server) and its root. Each answer is the errno's name, or what it got.
TAKE_OVER_THE_HOLDER = f"""
import ctypes, errno, os
holder = next(int(p) for p in os.listdir('/proc') if p.isdigit()
              and open(f'/proc/{{p}}/comm').read().strip() == {HOLDER_NAME!r})
libc = ctypes.CDLL(None, use_errno=True)
def attempt(action):
    try:
        return action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
def write_memory(pid):
    fd = os.open(f'/proc/{{pid}}/mem', os.O_RDWR)
    try:
        return 'opened for writing'
    finally:
        os.close(fd)
def trace(pid):
    PTRACE_ATTACH, PTRACE_DETACH = 16, 17
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
        libc.ptrace(PTRACE_DETACH, pid, None, None)
        return 'traced'
    return errno.errorcode.get(ctypes.get_errno(), '?')
answers = {{}}
for name, pid in (('holder', holder), ('init', 1)):
    answers[name + ' memory'] = attempt(lambda: write_memory(pid))
    answers[name + ' ptrace'] = trace(pid)
    answers[name + ' descriptors'] = attempt(lambda: sorted(os.listdir(f'/proc/{{pid}}/fd')))
    answers[name + ' root'] = attempt(lambda: os.listdir(f'/proc/{{pid}}/root/'))
    answers[name + ' environment'] = attempt(lambda: open(f'/proc/{{pid}}/environ', 'rb').read())
answers
"""


def test_a_tenant_cannot_take_over_what_its_recycled_jail_keeps(one_slot_server):
    """The first session tries to write into its holder's memory, trace it, reach its
    descriptors, root and environment (and the jail's init's); every door is shut (the
    holder is not dumpable; the init keeps capabilities the tenant lacks). The next caller's
    session, made in the same jail, finds no process but the holder, still not dumpable."""
    with one_slot_server.client() as client:
        first = client.open_session()
        try:
            jail = value(client, JAIL_ID, first.session_id)
            answers = eval(value(client, TAKE_OVER_THE_HOLDER, first.session_id))
        finally:
            client.close_session(first.session_id)
        assert jail, "no holder seen"
        assert all(answer in ("EACCES", "EPERM") for answer in answers.values()), answers
        second = client.open_session()
        try:
            assert value(client, JAIL_ID, second.session_id) == jail, "a new jail, not the recycled one"
            seen = eval(value(client, LOOK_FOR_IT, second.session_id))
            again = eval(value(client, TAKE_OVER_THE_HOLDER, second.session_id))
        finally:
            client.close_session(second.session_id)
        assert seen[3] == [HOLDER_NAME]
        assert all(answer in ("EACCES", "EPERM") for answer in again.values()), again


STOP_THE_HOLDER = f"""
import os, signal, time
holder = next(int(p) for p in os.listdir('/proc') if p.isdigit()
              and open(f'/proc/{{p}}/comm').read().strip() == {HOLDER_NAME!r})
os.kill(holder, signal.SIGSTOP)
for _ in range(200):  # the signal is delivered as the holder is next scheduled
    state = open(f'/proc/{{holder}}/stat').read().rpartition(')')[2].split()[0]
    if state == 'T':
        break
    time.sleep(0.01)
state
"""


def test_a_holder_a_tenant_signalled_is_not_recycled(one_slot_server):
    """A tenant may signal its holder (same uid): one it stopped, or one it killed, is
    proven touched at the close, and the next session gets a new jail."""
    with one_slot_server.client() as client:
        first = client.open_session()
        try:
            jail = value(client, JAIL_ID, first.session_id)
            assert value(client, STOP_THE_HOLDER, first.session_id) == "'T'"
        finally:
            client.close_session(first.session_id)
        second = client.open_session()
        try:
            fresh = value(client, JAIL_ID, second.session_id)
            states = value(client, "import os\n[open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[0] "
                                   "for p in os.listdir('/proc') if p.isdigit()]", second.session_id)
        finally:
            client.close_session(second.session_id)
        assert fresh and fresh != jail, "a stopped holder's jail was recycled"
        assert "'T'" not in states
