"""One test per attack, judged from the host side, with the server answering others.

The default profile has no Python-level guard: calls start processes, load native code
and make raw system calls, and what contains them is the jail. Attacks run on
`jail_client` (a server with no guard at all); `test_guard.py` shows the refusals of the
guarded profiles. After each attack a plain call must still be served.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sandbox.jail import Slot, jail_environment
from tests.conftest import ROOT
from toolcontract.v1 import toolserver_pb2 as pb


def still_serving(client) -> None:
    assert client.run_python("40 + 2", timeout_ms=10000).python.value == "42"


def run(client, code: str, **limits) -> pb.ExecuteResponse:
    response = client.run_python(code, **limits)
    still_serving(client)
    return response


# --- privilege ---------------------------------------------------------------------

def test_no_root_no_capabilities_seccomp_on(jail_client):
    response = run(jail_client, "s = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}\n"
                                "(s['Uid'].split()[0], s['CapEff'], s['CapBnd'], s['Seccomp'], s['NoNewPrivs'])")
    uid, cap_eff, cap_bnd, seccomp, no_new_privs = eval(response.python.value)
    assert uid != "0" and cap_eff == cap_bnd == "0000000000000000" and seccomp == "2" and no_new_privs == "1"


def test_setuid_binaries_do_not_raise_privilege(jail_client):
    response = run(jail_client, "import os, subprocess\n"
                                "before = open('/proc/self/mountinfo').read()\n"
                                "p = subprocess.run(['/bin/mount', '-t', 'tmpfs', 'none', '/mnt'], capture_output=True)\n"
                                "(p.returncode != 0, open('/proc/self/mountinfo').read() != before, None)")
    assert response.python.value == "(True, False, None)"  # refused, and no mount made (the jail's /mnt is its own)
    # EPERM; EINVAL where the jail has a user namespace of its own, which maps no uid 0
    response = run(jail_client, "import os\ntry:\n    os.setuid(0)\n    r = 'root'\nexcept OSError:\n    r = 'refused'\nr")
    assert response.python.value == "'refused'"


# --- network -----------------------------------------------------------------------

NETWORK_PROBE = """
import socket
results = {}
for name, attempt in [
    ('loopback', lambda: socket.create_connection(('127.0.0.1', PORT), timeout=2)),
    ('outside', lambda: socket.create_connection(('1.1.1.1', 53), timeout=2)),
    ('dns', lambda: socket.getaddrinfo('example.com', 80)),
    ('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
    ('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)),
]:
    try:
        attempt()
        results[name] = 'reached'
    except OSError as exc:
        results[name] = type(exc).__name__
results
"""


def test_no_network_from_the_jail(jail_client, jail_server):
    response = run(jail_client, NETWORK_PROBE.replace("PORT", str(jail_server.port)))
    results = eval(response.python.value)
    assert "reached" not in results.values(), results


def test_no_network_through_the_guard(guarded_client, guarded_server):
    response = run(guarded_client, NETWORK_PROBE.replace("PORT", str(guarded_server.port)))
    assert set(eval(response.python.value).values()) == {"ActionDenied"}
    response = run(guarded_client, f"import socket\nsocket.create_connection(('127.0.0.1', {guarded_server.port}))")
    assert response.outcome == pb.DENIED and "socket" in response.error


# --- host secrets ------------------------------------------------------------------

def test_host_secrets_are_unreadable(jail_client):
    code = ("import os\nout = {}\n"
            f"for path in ['/etc/shadow', '/root', {str(ROOT)!r}, '/var/lib/toolserver/ipc']:\n"
            "    try:\n"
            "        out[path] = os.listdir(path) if os.path.isdir(path) else open(path).read(1)\n"
            "    except OSError as exc:\n"
            "        out[path] = type(exc).__name__\n"
            "out")
    results = eval(run(jail_client, code).python.value)
    assert results["/etc/shadow"] == "FileNotFoundError"  # absent: the jail's /etc is minimal
    assert results["/root"] in ("PermissionError", "FileNotFoundError", [])
    assert results[str(ROOT)] in ("PermissionError", "FileNotFoundError")


def test_server_environment_does_not_reach_the_call(jail_client):
    env = eval(run(jail_client, "import os\ndict(os.environ)").python.value)
    set_by_the_jail = set(jail_environment(Slot("probe", 1, 1, Path("/x")))) | {"SHELL", "USER", "LOGNAME", "PWD"}
    assert not (set(env) & set(os.environ)) - set_by_the_jail, "a variable of the server's environment leaked"
    assert env["HOME"].startswith("/var/lib/toolserver/scratch/")


def test_other_sessions_files_are_out_of_reach(client):
    first, second = client.open_session(), client.open_session()
    try:
        where = client.run_python("import os\npath = os.path.join(os.environ['HOME'], 'secret')\n"
                                  "open(path, 'w').write('mine')\npath", session_id=first.session_id).python.value
        assert where.startswith("'/var/lib/toolserver/scratch/")
        response = client.run_python(f"import os\nos.path.exists({where})", session_id=second.session_id)
        assert response.python.value == "False"
    finally:
        client.close_session(first.session_id)
        client.close_session(second.session_id)


# --- writes outside scratch ------------------------------------------------------------

def test_writes_outside_scratch_fail(jail_client):
    targets = ["/etc", "/opt", "/usr", "/var", "/var/lib/toolserver/scratch", str(ROOT)]
    code = ("import os\nbad = []\n"
            f"for d in {targets!r}:\n"
            "    try:\n"
            "        open(os.path.join(d, 'x'), 'w').write('x')\n"
            "        bad.append(d)\n"
            "    except OSError:\n"
            "        pass\nbad")
    assert run(jail_client, code).python.value == "[]"


PRIVATE_DIRS = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"]


def test_tmp_and_shm_are_the_calls_own_and_wiped(jail_client):
    """A call writes /tmp, /var/tmp, /dev/shm and /run/lock as a plain python3 may; what it writes is
    its jail's own (the host's directories never see it) and gone for the next call."""
    marker = f"toolserver-probe-{os.getpid()}"
    code = (f"import os\nfor d in {PRIVATE_DIRS!r}:\n    open(os.path.join(d, {marker!r}), 'w').write('x')\n"
            f"sorted(os.path.exists(os.path.join(d, {marker!r})) for d in {PRIVATE_DIRS!r})")
    for _ in range(4):  # more calls than workers: each worker's next call looks
        assert run(jail_client, code).python.value == "[True, True, True, True]"
        assert not any(os.path.exists(os.path.join(d, marker)) for d in PRIVATE_DIRS)
        left = run(jail_client, f"import os\n[sorted(os.listdir(d)) for d in {PRIVATE_DIRS!r}]").python.value
        assert eval(left) == [[], [], [], []]


def test_programs_a_call_writes_run_inside_its_jail(jail_client):
    """A call may run what it writes (as under plain python3); the program runs with the
    jail's uid, seccomp filters, no new privileges and no capabilities."""
    code = ("import os, shutil, subprocess\nshutil.copy('/bin/cat', 'mycat')\nos.chmod('mycat', 0o755)\n"
            "status = subprocess.run(['./mycat', '/proc/self/status'], capture_output=True, text=True).stdout\n"
            "s = {l.split(':')[0]: l.split(':')[1].strip() for l in status.splitlines()}\n"
            "(s['Uid'].split()[0] != '0', s['Seccomp'], s['NoNewPrivs'], s['CapEff'])")
    assert run(jail_client, code).python.value == "(True, '2', '1', '0000000000000000')"


# --- native code ---------------------------------------------------------------------

RAW_SYSCALLS = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    return 'ok' if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
target = ctypes.create_string_buffer(b'/tmp')
source = ctypes.create_string_buffer(b'none')
kind = ctypes.create_string_buffer(b'tmpfs')
{
    'mount': call(165, ctypes.addressof(source), ctypes.addressof(target), ctypes.addressof(kind), 0, 0),
    'unshare user namespace': call(272, 0x10000000),
    'ptrace attach to the worker': call(101, 16, os.getppid(), 0, 0),
    'unix socket': call(41, 1, 1, 0),
    'system v shared memory': call(29, 0, 4096, 0o1600),
    'bpf': call(321, 0, 0, 0),
    'kernel module': call(175, 0, 0, 0),
    'reboot': call(169, 0xfee1dead, 672274793, 0x4321fedc, 0),
    'io_uring': call(425, 8, 0),
    'setuid root': call(105, 0),
}
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="system call numbers of x86_64")
def test_raw_system_calls_through_ctypes_are_held_by_seccomp(jail_client):
    """Native code is allowed by default; the jail's seccomp filters and missing
    privileges refuse what would reach past it, whichever way the call is made."""
    response = run(jail_client, RAW_SYSCALLS)
    assert response.outcome == pb.OK, response.stderr
    results = eval(response.python.value)
    assert "ok" not in results.values(), results


def restarts(client) -> int:
    """Workers replaced so far, summed over the python tool's pools."""
    detail = next(tool.detail for tool in client.server_info().tools if tool.name == "python")
    return sum(int(part.split()[0]) for part in detail.split(", ") if part.endswith(" restarts"))


def test_links_and_locked_directories_in_scratch_do_not_end_the_worker(jail_client):
    """The clean-up after a call wipes whatever it left: links to directories (which
    cannot be chmod-ed), directories it made unreadable; the worker goes on."""
    code = ("import os\nos.makedirs('a/b/c')\nos.symlink('/usr', 'a/b/to_usr')\nos.symlink('/tmp', 'a/to_tmp')\n"
            "os.makedirs('/tmp/x/y')\nos.symlink('/etc', '/tmp/x/y/to_etc')\nos.chmod('a/b/c', 0)\nos.chmod('a/b', 0o500)\n"
            "print('left a mess')")
    before = restarts(jail_client)
    for _ in range(4):
        assert run(jail_client, code).stdout == "left a mess\n"
    assert restarts(jail_client) == before


def test_a_fork_bomb_is_contained(jail_client):
    code = ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass")
    response = run(jail_client, code, timeout_ms=3000)
    assert response.outcome in (pb.TIMEOUT, pb.ERROR, pb.CRASHED), response


def test_daemons_do_not_outlive_their_call(jail_client, jail_server):
    """A call that leaves processes behind (one in a session of its own, one a shell put in
    the background, a double-forked one, a multiprocessing child) loses them when it ends:
    from the host, none of its worker uids runs them a moment later."""
    code = ("import os, subprocess, multiprocessing\n"
            "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "subprocess.Popen(['sh', '-c', 'sleep 301 &'])\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execvp('sleep', ['sleep', '302'])\n"
            "    os._exit(0)\n"
            "multiprocessing.Process(target=os.execvp, args=('sleep', ['sleep', '303'])).start()\n"
            "os._exit(0)")
    uids = {slot_uid(index) for index in jail_server.worker_slot_indexes()}
    for _ in range(3):
        run(jail_client, code, timeout_ms=5000)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sleepers_of(uids):
        time.sleep(0.2)
    assert not sleepers_of(uids)


def slot_uid(index: int) -> int:
    import pwd

    return pwd.getpwnam(f"tsbox{index}").pw_uid


def sleepers_of(uids: set[int]) -> set[int]:
    """The `sleep` processes the uids run."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            owner = entry.stat().st_uid
            name = Path(f"/proc/{entry.name}/comm").read_text().strip()
        except OSError:
            continue
        if owner in uids and name == "sleep":
            found.add(int(entry.name))
    return found


# --- resource exhaustion ---------------------------------------------------------------

def test_thread_bomb_is_contained(jail_client):
    code = ("import threading, time\nn = 0\ntry:\n    for _ in range(5000):\n"
            "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n        n += 1\n"
            "except RuntimeError:\n    pass\nn < 5000")
    assert run(jail_client, code, timeout_ms=5000).python.value == "True"


@pytest.mark.parametrize("directory", [".", *PRIVATE_DIRS])
def test_scratch_flood_is_stopped(jail_client, directory):
    code = (f"import os\nos.chdir({directory!r})\nblock = b'x' * (1 << 20)\nfor i in range(4000):\n"
            "    with open(f'f{i}', 'wb') as f:\n        for _ in range(8):\n            f.write(block)")
    response = run(jail_client, code, timeout_ms=10000)
    assert response.outcome == pb.ERROR and "scratch space limit" in response.error


def test_scratch_filled_then_exit_at_once_is_stopped_and_the_worker_lives(jail_client):
    """The call fills its home and exits before a poll sees it full: it is still over its
    scratch, and its worker answers the next call."""
    code = ("import os\nblock = b'x' * (1 << 20)\ntry:\n    for i in range(4000):\n"
            "        with open(f'f{i}', 'wb') as f:\n            for _ in range(8):\n                f.write(block)\n"
            "except OSError:\n    os._exit(0)")
    for _ in range(3):
        response = run(jail_client, code, timeout_ms=10000)
        assert response.outcome == pb.ERROR and "scratch space limit" in response.error, response
    assert run(jail_client, "6 * 7").python.value == "42"


def test_output_flood_is_cut_and_fast(jail_client):
    response = run(jail_client, "import sys\nfor _ in range(200):\n    sys.stdout.write('y' * 100000)",
                   max_output_bytes=4096)
    assert response.outcome == pb.OUTPUT_LIMIT and response.truncated and len(response.stdout) == 4096


def test_many_open_files_hit_the_limit(jail_client):
    code = ("import os\nfiles = []\ntry:\n    for i in range(100000):\n"
            "        files.append(open(f'n{i}', 'w'))\nexcept OSError as exc:\n    err = exc.errno\n(len(files) < 1000, err)")
    assert run(jail_client, code).python.value == "(True, 24)"  # EMFILE


def test_memory_and_cpu_hogs_meet_their_limits_while_others_are_served(jail_client):
    results: dict[str, pb.ExecuteResponse] = {}
    hogs = {"memory": ("x = [bytearray(10**6) for _ in range(10**5)]", {"memory_mb": 200}),
            "cpu": ("while True:\n    pass", {"timeout_ms": 1500})}
    threads = [threading.Thread(target=lambda name=name, code=code, limits=limits: results.__setitem__(
        name, jail_client.run_python(code, **limits))) for name, (code, limits) in hogs.items()]
    for thread in threads:
        thread.start()
    still_serving(jail_client)
    for thread in threads:
        thread.join(60)
    assert results["memory"].outcome == pb.MEMORY_LIMIT
    assert results["cpu"].outcome == pb.TIMEOUT


# --- the server and its workers --------------------------------------------------------

@pytest.mark.parametrize("code", ["import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
                                  "import os, signal\nos.kill(-1, signal.SIGKILL)"])
def test_killing_the_worker_costs_only_the_call(jail_client, code):
    response = run(jail_client, code)
    assert response.outcome == pb.CRASHED


def test_the_worker_cannot_be_traced_or_read(jail_client):
    code = ("import os\ntry:\n    open(f'/proc/{os.getppid()}/mem', 'rb').read(1)\n    r = 'read'\n"
            "except OSError as exc:\n    r = type(exc).__name__\nr")
    assert run(jail_client, code).python.value == "'PermissionError'"


def test_the_server_process_is_invisible(jail_client):
    response = run(jail_client, "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
    pids = eval(response.python.value)
    assert max(pids) < 100  # the jail's own pid namespace: a handful of low pids


# --- requests and output -------------------------------------------------------------

def test_binary_output_is_replaced_not_fatal(client):
    response = run(client, "import sys\nsys.stdout.buffer.write(bytes(range(256)))\nsys.stderr.buffer.write(b'\\xc3(')")
    assert response.outcome == pb.OK
    assert "\ufffd" in response.stdout and "\ufffd" in response.stderr
