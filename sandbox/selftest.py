"""The start-up proof that the jail holds, judged from the host side.

firejail silently runs a program unsandboxed when it believes it is already inside a
container, so flags prove nothing. First the server shows it can do to a slot what it
must (own its scratch directory, kill what its uid runs: a container may forbid both);
then this probe starts a real zygote through the exact command line the workers use,
runs calls in it like any caller's, and checks what they saw: the uid, seccomp,
capabilities, no new privileges, network interfaces, namespaces of its own (pid, IPC,
mount, network, UTS), that no Unix socket of the host and no System V IPC can be
reached, which paths are writable, the home's cap, hidden host files, limits that trip
(one over all of a call's processes, with a memory cgroup), and that nothing of one call
is left for the next. Every check must pass for the server to serve.
No probe sends a packet anywhere.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from sandbox.calls import CallLimits, CallReply, CallRequest
from sandbox.cgroups import MemoryCgroup
from sandbox.hostside import shared_mounts
from sandbox.jail import Slot
from sandbox.root import expected_names
from sandbox.slots import kill_slot_processes, prepare_scratch, running_as_root
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
def unix_socket_reaches(path):
    try:
        probe = socket.socket(socket.AF_UNIX)
    except OSError as exc:
        return 'refused: ' + exc.strerror
    try:
        probe.connect(path)
        return 'reached'
    except OSError as exc:
        return 'connect failed: ' + exc.strerror
def datagram_pair():
    try:
        socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        return 'made'
    except OSError as exc:
        return 'refused: ' + exc.strerror
def sysv_shared_memory():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    key = libc.shmget(0, 4096, 0o1600)
    return 'refused: ' + os.strerror(ctypes.get_errno()) if key < 0 else 'made'
home = os.environ['HOME']
for directory in [home] + PRIVATE_DIRS:
    open(os.path.join(directory, 'left-behind'), 'w').write('x')
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(60)
    os._exit(0)
json.dumps({
    'uid': os.getuid(), 'euid': os.geteuid(),
    'seccomp': status('Seccomp'), 'seccomp_filters': status('Seccomp_filters'),
    'no_new_privs': status('NoNewPrivs'),
    'cap_eff': status('CapEff'), 'cap_bnd': status('CapBnd'), 'cap_prm': status('CapPrm'),
    'interfaces': [line.split(':')[0].strip() for line in open('/proc/self/net/dev').readlines()[2:]],
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'namespaces': {name: os.readlink('/proc/self/ns/' + name) for name in NAMESPACES},
    'unix_socket': unix_socket_reaches(HOST_SOCKET),
    'datagram_pair': datagram_pair(),
    'sysv_shm': sysv_shared_memory(),
    'home_writable': writable(home),
    'home_mb': os.statvfs(home).f_blocks * os.statvfs(home).f_frsize >> 20,
    'private': {p: {'dev': os.stat(p).st_dev, 'mb': os.statvfs(p).f_blocks * os.statvfs(p).f_frsize >> 20}
                for p in PRIVATE_DIRS},
    'writable': {p: writable(p) for p in WRITE_TARGETS},
    'writable_mounts': sorted(p for p in {line.split()[4] for line in open('/proc/self/mountinfo')} if writable(p)),
    'readable': {p: readable(p) for p in SECRET_TARGETS},
    'root': root_view(TOPS, CANARY),
})
"""

# What a process sees of the host's tree: each top directory's entries ('denied' where it
# cannot list them) and whether it can read the canary, a file the host put outside the
# jail's root. Prepended to the call's and the session's probes.
ROOT_PROBE = r"""
def root_view(tops, canary):
    import os
    listed = {}
    for top in tops:
        try:
            listed[top] = sorted(os.listdir(top))
        except FileNotFoundError:
            listed[top] = []
        except OSError:
            listed[top] = 'denied'
    try:
        with open(canary, 'rb') as handle:
            handle.read(1)
        seen = 'read'
    except OSError as exc:
        seen = type(exc).__name__
    return {'listed': listed, 'canary': seen, 'home': os.environ.get('HOME', '')}
"""

LEFTOVERS = r"""
import os
mine = os.getpid()
json_files = [os.path.join(d, name) for d in [os.environ['HOME']] + PRIVATE_DIRS for name in os.listdir(d)
              if name != 'main.py' or d != os.environ['HOME']]
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
# Three processes of 96 MB each under a 128 MB call: only a cap over the whole call stops them.
FORK_HOGS = r"""
import os, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(96 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1)
        os._exit(0)
    children.append(pid)
[os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
"""
# Namespaces every jail must have of its own. The cgroup namespace is not among them:
# firejail cannot make one, so a call can read its cgroup's path.
NAMESPACES = ("ipc", "mnt", "net", "pid", "uts")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


PROBE_LIMITS = CallLimits(timeout_ms=5000, memory_mb=256, max_output_bytes=65536, max_processes=16, max_file_mb=1,
                          max_open_files=64)


def probe_request(request_id: str, code: str, profile: str = "", **limits: int) -> CallRequest:
    """A probe's call: PROBE_LIMITS with the given ones changed."""
    return CallRequest(request_id, code, dataclasses.replace(PROBE_LIMITS, **limits), profile=profile)


def write_targets(spec: ZygoteSpec) -> list[str]:
    """Host paths that must not be writable from inside the jail (its private /tmp,
    /var/tmp and /dev/shm are checked apart: they must be its own)."""
    targets = ["/", "/etc", "/usr", "/opt", "/var", "/var/lib",
               os.path.dirname(os.path.dirname(os.path.abspath(spec.interpreter))),
               os.path.dirname(os.path.abspath(__file__))]
    return sorted(set(targets))


def secret_targets() -> list[str]:
    return ["/etc/shadow", "/root", os.path.dirname(os.path.abspath(__file__))]


def check_slot_control(slot: Slot) -> list[Check]:
    """What the server itself must be able to do to a slot before any jail runs in it:
    make its scratch directory its own (create, wipe, chown, chmod), and kill what its uid
    runs. In a container without CHOWN, FOWNER, DAC_OVERRIDE or KILL, or with a read-only
    root filesystem, these fail: the server must say so, not crash at start-up."""
    try:
        prepare_scratch(slot)
    except OSError as exc:
        return [Check("slot_scratch", False, f"cannot prepare {slot.scratch} for uid {slot.uid}: {exc} "
                      "(needs a writable scratch_root and, as root, CAP_CHOWN, CAP_FOWNER, CAP_DAC_OVERRIDE)")]
    checks = [Check("slot_scratch", True, f"{slot.scratch} owned by uid {slot.uid}, mode 0700")]
    if not running_as_root():
        return checks
    try:
        # What a crashed call leaves behind: a process of the slot's uid outside any jail
        # (cat, which also ends by itself when its stdin closes), reaped as soon as it dies.
        leftover = subprocess.Popen(["cat"], user=slot.uid, group=slot.gid, extra_groups=[],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return checks + [Check("slot_processes_killed", False,
                               f"cannot start a process as uid {slot.uid}: {exc} (needs CAP_SETUID, CAP_SETGID)")]
    reaper = threading.Thread(target=leftover.wait, daemon=True)
    reaper.start()
    try:
        kill_slot_processes(slot)
        reaper.join(5)
        # The proof is the probe's own process: another one of the uid (a previous
        # server's, still being reaped by its parent) may outlive this look without harm.
        killed = leftover.returncode is not None
        checks.append(Check("slot_processes_killed", killed, "a process of the uid killed" if killed
                            else f"process {leftover.pid} of uid {slot.uid} survived SIGKILL"))
    except OSError as exc:
        checks.append(Check("slot_processes_killed", False,
                            f"cannot kill the processes of uid {slot.uid}: {exc} (needs CAP_KILL)"))
    finally:
        assert leftover.stdin is not None
        with contextlib.suppress(OSError):
            leftover.stdin.close()
        reaper.join(5)
    return checks


async def run_self_test(spec: ZygoteSpec, slot: Slot, cgroup: MemoryCgroup | None = None) -> list[Check]:
    """Runs the probe in slot through spec's command line (in cgroup, the slot's memory
    cgroup, when the server has them); returns every check."""
    checks = check_slot_control(slot)
    if failed(checks):
        return checks
    zygote = Zygote(spec, slot, cgroup)
    try:
        try:
            hello = await zygote.start()
        except WorkerLost as exc:
            checks.append(Check("starts", False, str(exc)))
            return checks
        checks.append(Check("starts", True, f"zygote pid {hello.get('pid')} in the jail"))
        expected = expected_names(spec.root(), str(slot.scratch))
        with host_unix_socket(slot) as (path, listener), canary_file(canary_directory(slot)) as canary:
            code = (f"WRITE_TARGETS = {write_targets(spec)!r}\n"
                    f"SECRET_TARGETS = {secret_targets()!r}\nPRIVATE_DIRS = {list(zygote.private_dirs)!r}\n"
                    f"NAMESPACES = {NAMESPACES!r}\nHOST_SOCKET = {path!r}\nTOPS = {list(expected)!r}\n"
                    f"CANARY = {canary!r}\n" + ROOT_PROBE + INSPECT)
            seen = await zygote.run(probe_request("inspect", code), 30)
            accepted = accepted_any(listener)
        if seen.outcome != "OK":
            checks.append(Check("inspect", False, f"{seen.outcome}: {seen.error} {seen.stderr[-300:]}"))
            return checks
        capped = spec.jail.home_mb if running_as_root() and not spec.insecure_no_sandbox else 0
        inspected = json.loads(ast.literal_eval(seen.value))
        checks += judge_inspection(inspected, slot, accepted, capped)
        checks.append(judge_root(inspected["root"], expected, "root_of_its_own", spec.insecure_no_sandbox))
        checks.append(judge_mounts_private(zygote, spec.insecure_no_sandbox))
        checks.append(judge_private_dirs(spec.jail.private_dirs, zygote.private_dirs))
        checks.append(judge_writable_places(inspected, slot, zygote.private_dirs))
        left = await zygote.run(probe_request("leftovers", f"PRIVATE_DIRS = {list(zygote.private_dirs)!r}\n"
                                              + LEFTOVERS), 30)
        checks.append(judge_leftovers(left))
        hog = await zygote.run(probe_request("memory", MEMORY_HOG, memory_mb=64), 30)
        checks.append(Check("memory_limit_trips", hog.outcome == "MEMORY_LIMIT",
                            f"512 MB under a 64 MB limit gave {hog.outcome}"))
        forks = await zygote.run(probe_request("forks", FORK_MANY, max_processes=8), 30)
        made = int(forks.value or 0) if forks.outcome == "OK" else -1
        checks.append(Check("process_limit_trips", 0 <= made < 200,
                            f"forked {made} of 200 under a limit of 8 processes for the uid"))
        if cgroup is not None:
            hogs = await zygote.run(probe_request("hogs", FORK_HOGS, memory_mb=128, timeout_ms=20000), 60)
            statuses = ast.literal_eval(hogs.value) if hogs.outcome == "MEMORY_LIMIT" and hogs.value else []
            checks.append(Check("whole_call_memory_cap", -9 in statuses,
                                f"3 processes of 96 MB under a 128 MB call: {hogs.outcome}, ended {statuses or hogs.error}"))
        spin = await zygote.run(probe_request("spin", SPIN, timeout_ms=300), 30)
        checks.append(Check("time_limit_trips", spin.outcome == "TIMEOUT",
                            f"a spin under 300 ms gave {spin.outcome}"))
    except (WorkerLost, ValueError, SyntaxError, OSError) as exc:
        checks.append(Check("probe_completes", False, f"probe broke off: {exc}"))
    finally:
        try:
            await zygote.kill()
        except OSError as exc:
            checks.append(Check("probe_completes", False, f"cannot end the probe's jail: {exc}"))
    return checks


@contextlib.contextmanager
def host_unix_socket(slot: Slot) -> Iterator[tuple[str, socket.socket]]:
    """A listening Unix socket that anyone may connect to, in a host directory the jail
    sees (read-only): what a host daemon's socket looks like from inside."""
    path = str(slot.scratch.parent / f".selftest-{os.getpid()}-{slot.name}.sock")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(path)
        os.chmod(path, 0o777)
        listener.listen(4)
        listener.setblocking(False)
        yield path, listener
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def accepted_any(listener: socket.socket) -> bool:
    try:
        connection, _ = listener.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def canary_directory(slot: Slot) -> Path:
    """Where the self-test puts its canary: beside the slots' homes, in the scratch root,
    the server's own and writable (a container's root filesystem may be read-only), of
    which a jail shows its own home alone."""
    return slot.scratch.parent / f".selftest-canary-{os.getpid()}-{slot.name}"


@contextlib.contextmanager
def canary_file(directory: Path) -> Iterator[str]:
    """A file anyone may read (0644) in a directory anyone may list (0755), outside the
    jail's root: what a host file looks like that no jail may see; removed afterwards."""
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    directory.chmod(0o755)
    canary = directory / "canary"
    try:
        canary.write_text("a host file no jail may read\n")
        canary.chmod(0o644)
        yield str(canary)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def judge_root(view: dict[str, Any], expected: dict[str, list[str] | None], name: str,
               insecure: bool = False) -> Check:
    """Whether a process sees only its root of the host's tree: the canary unreadable,
    and each top directory the root does not show whole empty or unlistable, or listing
    only what the root shows in it (sandbox/root.py `expected_names`)."""
    if insecure:
        return Check(name, False, "no jail: the whole host is seen")
    wrong = [] if view.get("canary") != "read" else ["the canary outside the root was read"]
    listed = view.get("listed", {})
    for top, names in expected.items():
        seen = listed.get(top)
        if names is None or seen == "denied":
            continue
        extra = sorted(set(seen or ()) - set(names)) if isinstance(seen, list) else ["(not listed)"]
        if extra:
            wrong.append(f"{top} shows {extra[:4]}")
    if wrong:
        return Check(name, False, "; ".join(wrong[:6]))
    emptied = sum(1 for names in expected.values() if names == [])
    return Check(name, True, f"only the root's paths: {emptied} host directories empty, "
                             f"{sum(1 for names in expected.values() if names)} holding only what the root names, "
                             f"the canary {view.get('canary')}")


def judge_mounts_private(zygote: Zygote, insecure: bool = False) -> Check:
    """Whether the jail's mounts are cut off the host's: a mount the host makes later is
    never seen inside (`sandbox.hostside.make_mounts_private`)."""
    if insecure or zygote.inside is None:
        return Check("mounts_private", False, "no jail: the host's mounts are the process's own")
    shared = shared_mounts(zygote.inside)
    return Check("mounts_private", not shared, f"following the host's: {shared[:3]}" if shared
                 else "no mount of the jail receives the host's mount events")


def judge_inspection(seen: dict[str, Any], slot: Slot, host_socket_reached: bool = False,
                     home_cap_mb: int = 0) -> list[Check]:
    checks = []
    non_root = seen["uid"] != 0 and seen["euid"] != 0
    if running_as_root():
        non_root = non_root and seen["uid"] == slot.uid
    checks.append(Check("non_root", non_root, f"uid {seen['uid']} (slot {slot.name} is {slot.uid})"))
    # The zygote's own filter (sandbox/confine.py) is one; firejail's must be there too.
    filters = int(seen["seccomp_filters"] or 0)
    checks.append(Check("seccomp", seen["seccomp"] == "2" and filters >= 2,
                        f"Seccomp: {seen['seccomp']}, {filters} filters (the zygote's own is one)"))
    checks.append(Check("no_new_privs", seen["no_new_privs"] == "1", f"NoNewPrivs: {seen['no_new_privs']}"))
    caps = {seen["cap_eff"], seen["cap_bnd"], seen["cap_prm"]}
    checks.append(Check("no_capabilities", caps == {"0000000000000000"},
                        f"CapEff {seen['cap_eff']} CapBnd {seen['cap_bnd']} CapPrm {seen['cap_prm']}"))
    checks.append(Check("no_network", seen["interfaces"] == ["lo"], f"interfaces: {seen['interfaces']}"))
    checks.append(Check("pid_namespace", max(seen["pids"]) < 1000 and len(seen["pids"]) < 50,
                        f"{len(seen['pids'])} processes visible"))
    shared = [name for name, link in seen["namespaces"].items() if link == os.readlink(f"/proc/self/ns/{name}")]
    checks.append(Check("own_namespaces", not shared, f"shared with the host: {shared}" if shared else
                        f"own {', '.join(NAMESPACES)} namespaces"))
    unix = seen["unix_socket"]
    checks.append(Check("no_unix_sockets", not host_socket_reached and unix.startswith("refused")
                        and seen["datagram_pair"].startswith("refused"),
                        f"host socket: {unix}; datagram pair: {seen['datagram_pair']}"))
    checks.append(Check("no_sysv_ipc", seen["sysv_shm"].startswith("refused"), f"shmget: {seen['sysv_shm']}"))
    checks.append(Check("scratch_writable", seen["home_writable"], "the call's own scratch directory"))
    if home_cap_mb:
        checks.append(Check("scratch_capped", seen["home_mb"] <= home_cap_mb,
                            f"home tmpfs of {seen['home_mb']} MB (cap {home_cap_mb} MB)"))
    uncapped = [path for path, seen_dir in seen["private"].items()
                if seen_dir["dev"] == os.stat(path).st_dev or (home_cap_mb and seen_dir["mb"] > home_cap_mb)]
    if uncapped:
        checks.append(Check("private_tmp_capped", False, f"not the jail's own, capped tmpfs: {uncapped}"))
    leaks = [path for path, ok in seen["writable"].items() if ok]
    checks.append(Check("read_only_elsewhere", not leaks, f"writable: {leaks}" if leaks else "all host paths read-only"))
    exposed = [path for path, ok in seen["readable"].items() if ok]
    checks.append(Check("host_secrets_hidden", not exposed, f"readable: {exposed}" if exposed else "hidden"))
    return checks


def judge_private_dirs(wanted: tuple[str, ...], proven: tuple[str, ...]) -> Check:
    """Each writable place a jail should have of its own besides its home (/tmp, /var/tmp,
    /dev/shm, /run/lock) is proven by the host to be on a filesystem other than the host's: only those
    are given to calls and wiped after them."""
    missing = [path for path in wanted if path not in proven]
    return Check("private_tmp", not missing, f"not the jail's own: {missing}" if missing else
                 f"{', '.join(proven)}: the jail's own, capped")


def judge_writable_places(seen: dict[str, Any], slot: Slot, private_dirs: tuple[str, ...]) -> Check:
    """Every mount a call can write is its home or one of the private dirs, which are wiped
    after every call: a writable place besides them would carry one call's files to the next."""
    stray = [path for path in seen["writable_mounts"] if path not in (str(slot.scratch), *private_dirs)]
    return Check("only_own_places_writable", not stray, f"writable and never wiped: {stray}" if stray else
                 f"the home and {', '.join(private_dirs)}")


def judge_leftovers(reply: CallReply) -> Check:
    if reply.outcome != "OK":
        return Check("nothing_survives_a_call", False, f"{reply.outcome}: {reply.error}")
    files, processes = ast.literal_eval(reply.value)
    ok = not files and not processes
    return Check("nothing_survives_a_call", ok, "clean" if ok else f"files {files}, processes {processes}")


def guard_probe(module: str) -> str:
    return f"import {module}"


def judge_guard(reply: CallReply, module: str) -> Check:
    """A worker whose profile denies module must refuse its import as DENIED."""
    ok = reply.outcome == "DENIED" and repr(module) in reply.error
    return Check("import_guard", ok, f"{guard_probe(module)} is DENIED" if ok else
                 f"{guard_probe(module)} gave {reply.outcome}: {reply.error}")


def failed(checks: list[Check]) -> list[Check]:
    return [check for check in checks if not check.ok]
