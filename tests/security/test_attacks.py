"""One test per attack, judged from the host side, with the server answering others.

Attacks that the Python guard would refuse first run on `jail_client` (a server with
the guard off), so that what is shown contained is the jail itself; `test_guard.py`
shows the guard's own refusals. After each attack a plain call must still be served.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sandbox.jail import Slot, jail_environment

from toolserver.v1 import toolserver_pb2 as pb

from tests.conftest import ROOT


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
                                "p = subprocess.run(['/bin/mount', '-t', 'tmpfs', 'none', '/mnt'], capture_output=True)\n"
                                "(p.returncode != 0, os.path.ismount('/mnt'), os.setuid if False else None)")
    assert response.python.value == "(True, False, None)"
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


def test_no_network_through_the_guard(client, server):
    response = run(client, NETWORK_PROBE.replace("PORT", str(server.port)))
    assert set(eval(response.python.value).values()) == {"ActionDenied"}
    response = run(client, f"import socket\nsocket.create_connection(('127.0.0.1', {server.port}))")
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
    assert results["/etc/shadow"] == "PermissionError"
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
    targets = ["/tmp", "/var/tmp", "/dev/shm", "/etc", "/opt", "/usr", "/var/lib/toolserver/scratch", str(ROOT)]
    code = ("import os\nbad = []\n"
            f"for d in {targets!r}:\n"
            "    try:\n"
            "        open(os.path.join(d, 'x'), 'w').write('x')\n"
            "        bad.append(d)\n"
            "    except OSError:\n"
            "        pass\nbad")
    assert run(jail_client, code).python.value == "[]"


def test_scratch_cannot_run_dropped_programs(jail_client):
    code = ("import os, shutil, subprocess\nshutil.copy('/bin/true', 'mytrue')\nos.chmod('mytrue', 0o755)\n"
            "try:\n    subprocess.run(['./mytrue'])\n    r = 'ran'\nexcept PermissionError:\n    r = 'noexec'\nr")
    assert run(jail_client, code).python.value == "'noexec'"


# --- resource exhaustion ---------------------------------------------------------------

def test_thread_bomb_is_contained(jail_client):
    code = ("import threading, time\nn = 0\ntry:\n    for _ in range(5000):\n"
            "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n        n += 1\n"
            "except RuntimeError:\n    pass\nn < 5000")
    assert run(jail_client, code, timeout_ms=5000).python.value == "True"


def test_scratch_flood_is_stopped(jail_client):
    code = ("import os\nblock = b'x' * (1 << 20)\nfor i in range(4000):\n"
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
    assert response.outcome == pb.OK and response.truncated and len(response.stdout) == 4096


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
