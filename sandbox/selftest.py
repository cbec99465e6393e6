"""The start-up proof that the jail holds, judged from the host side.

firejail silently runs a program unsandboxed when it believes it is already inside a
container, so flags prove nothing. This probe starts a real zygote through the exact
command line the workers use, runs calls in it like any caller's, and checks what they
saw: the uid, seccomp, capabilities, no new privileges, network interfaces, a private
pid namespace, which paths are writable, hidden host files, limits that trip, and that
nothing of one call is left for the next. Every check must pass for the server to serve.
No probe sends a packet anywhere.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass
from typing import Any

from sandbox.jail import Slot
from sandbox.slots import prepare_scratch, running_as_root
from sandbox.worker import WorkerLost, Zygote, ZygoteSpec

INSPECT = r"""
import json, os, socket
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split(':', 1)[1].strip()
def writable(path):
    target = os.path.join(path, '.probe-write')
    try:
        with open(target, 'w') as handle:
            handle.write('x')
        os.unlink(target)
        return True
    except OSError:
        return False
def readable(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, 'rb').read(1)
        return True
    except OSError:
        return False
home = os.environ['HOME']
open(os.path.join(home, 'left-behind'), 'w').write('x')
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(60)
    os._exit(0)
json.dumps({
    'uid': os.getuid(), 'euid': os.geteuid(),
    'seccomp': status('Seccomp'), 'no_new_privs': status('NoNewPrivs'),
    'cap_eff': status('CapEff'), 'cap_bnd': status('CapBnd'), 'cap_prm': status('CapPrm'),
    'interfaces': [name for _, name in socket.if_nameindex()],
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'home_writable': writable(home),
    'writable': {p: writable(p) for p in WRITE_TARGETS},
    'readable': {p: readable(p) for p in SECRET_TARGETS},
})
"""

LEFTOVERS = r"""
import os
mine = os.getpid()
json_files = os.listdir(os.environ['HOME'])
others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, mine, os.getppid())]
(json_files, others)
"""

MEMORY_HOG = "block = bytearray(512 * 1024 * 1024)\nlen(block)"
FORK_MANY = r"""
import os, time
made = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        made += 1
except OSError:
    pass
made
"""
SPIN = "while True:\n    pass"
GUARD_PROBE = "import socket"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def probe_request(request_id: str, code: str, **limits: int) -> dict[str, Any]:
    request = {"id": request_id, "code": code, "stdin": "", "timeout_ms": 5000, "memory_mb": 256,
               "max_output_bytes": 65536, "max_processes": 16, "max_file_mb": 1, "max_open_files": 64}
    request.update(limits)
    return request


def write_targets(spec: ZygoteSpec) -> list[str]:
    """Host paths that must not be writable from inside the jail."""
    targets = ["/", "/tmp", "/var/tmp", "/dev/shm", "/etc", "/usr", "/opt",
               os.path.dirname(os.path.dirname(os.path.abspath(spec.interpreter))),
               os.path.dirname(os.path.abspath(__file__))]
    return sorted(set(targets))


def secret_targets() -> list[str]:
    return ["/etc/shadow", "/root", os.path.dirname(os.path.abspath(__file__))]


async def run_self_test(spec: ZygoteSpec, slot: Slot) -> list[Check]:
    """Runs the probe in slot through spec's command line; returns every check."""
    prepare_scratch(slot)
    zygote = Zygote(spec, slot)
    checks: list[Check] = []
    try:
        try:
            hello = await zygote.start()
        except WorkerLost as exc:
            return [Check("starts", False, str(exc))]
        checks.append(Check("starts", True, f"zygote pid {hello.get('pid')} in the jail"))
        code = (f"WRITE_TARGETS = {write_targets(spec)!r}\n"
                f"SECRET_TARGETS = {secret_targets()!r}\n" + INSPECT)
        seen = await zygote.run(probe_request("inspect", code), 30)
        if seen.get("outcome") != "OK":
            checks.append(Check("inspect", False, f"{seen.get('outcome')}: {seen.get('error')} {seen.get('stderr', '')[-300:]}"))
            return checks
        checks += judge_inspection(json.loads(ast.literal_eval(seen["value"])), slot)
        left = await zygote.run(probe_request("leftovers", LEFTOVERS), 30)
        checks.append(judge_leftovers(left))
        hog = await zygote.run(probe_request("memory", MEMORY_HOG, memory_mb=64), 30)
        checks.append(Check("memory_limit_trips", hog.get("outcome") == "MEMORY_LIMIT",
                            f"512 MB under a 64 MB limit gave {hog.get('outcome')}"))
        forks = await zygote.run(probe_request("forks", FORK_MANY, max_processes=8), 30)
        made = int(forks.get("value") or 0) if forks.get("outcome") == "OK" else -1
        checks.append(Check("process_limit_trips", 0 <= made < 200,
                            f"forked {made} of 200 under a limit of 8 processes for the uid"))
        spin = await zygote.run(probe_request("spin", SPIN, timeout_ms=300), 30)
        checks.append(Check("time_limit_trips", spin.get("outcome") == "TIMEOUT",
                            f"a spin under 300 ms gave {spin.get('outcome')}"))
    except (WorkerLost, ValueError, SyntaxError) as exc:
        checks.append(Check("probe_completes", False, f"probe broke off: {exc}"))
    finally:
        await zygote.kill()
    return checks


def judge_inspection(seen: dict[str, Any], slot: Slot) -> list[Check]:
    checks = []
    non_root = seen["uid"] != 0 and seen["euid"] != 0
    if running_as_root():
        non_root = non_root and seen["uid"] == slot.uid
    checks.append(Check("non_root", non_root, f"uid {seen['uid']} (slot {slot.name} is {slot.uid})"))
    checks.append(Check("seccomp", seen["seccomp"] == "2", f"Seccomp: {seen['seccomp']}"))
    checks.append(Check("no_new_privs", seen["no_new_privs"] == "1", f"NoNewPrivs: {seen['no_new_privs']}"))
    caps = {seen["cap_eff"], seen["cap_bnd"], seen["cap_prm"]}
    checks.append(Check("no_capabilities", caps == {"0000000000000000"},
                        f"CapEff {seen['cap_eff']} CapBnd {seen['cap_bnd']} CapPrm {seen['cap_prm']}"))
    checks.append(Check("no_network", seen["interfaces"] == ["lo"], f"interfaces: {seen['interfaces']}"))
    checks.append(Check("pid_namespace", max(seen["pids"]) < 1000 and len(seen["pids"]) < 50,
                        f"{len(seen['pids'])} processes visible"))
    checks.append(Check("scratch_writable", seen["home_writable"], "the call's own scratch directory"))
    leaks = [path for path, ok in seen["writable"].items() if ok]
    checks.append(Check("read_only_elsewhere", not leaks, f"writable: {leaks}" if leaks else "all host paths read-only"))
    exposed = [path for path, ok in seen["readable"].items() if ok]
    checks.append(Check("host_secrets_hidden", not exposed, f"readable: {exposed}" if exposed else "hidden"))
    return checks


def judge_leftovers(reply: dict[str, Any]) -> Check:
    if reply.get("outcome") != "OK":
        return Check("nothing_survives_a_call", False, f"{reply.get('outcome')}: {reply.get('error')}")
    files, processes = ast.literal_eval(reply["value"])
    ok = not files and not processes
    return Check("nothing_survives_a_call", ok, "clean" if ok else f"files {files}, processes {processes}")


def judge_guard(reply: dict[str, Any]) -> Check:
    """A worker with the import guard on must refuse a denied import as DENIED."""
    ok = reply.get("outcome") == "DENIED" and "socket" in str(reply.get("error"))
    return Check("import_guard", ok, "import socket is DENIED" if ok else
                 f"import socket gave {reply.get('outcome')}: {reply.get('error')}")


def failed(checks: list[Check]) -> list[Check]:
    return [check for check in checks if not check.ok]
