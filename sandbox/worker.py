"""Host side of one jailed zygote: start it, send it one call at a time, kill it.

A `Zygote` owns one process tree (firejail and everything inside) running as one slot's
uid. It does not decide policy (how many, when to replace): that is the pool's job.
Any failure to get a well-formed answer in time raises `WorkerLost`; the caller then
kills and replaces the worker.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import dataclasses
import json
import logging
import os
import signal
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from sandbox.calls import CallReply, CallRequest, reply_frame_bytes
from sandbox.cgroups import MemoryCgroup
from sandbox.hostside import (
    cap_tmpfs,
    descendants,
    host_pid,
    in_other_mount_namespace,
    is_own_mount,
    make_mounts_private,
    namespace_pid,
)
from sandbox.jail import JailPolicy, Slot, jail_command, jail_environment
from sandbox.profiles import GuardPolicy
from sandbox.root import JailRoot, interpreter_paths
from sandbox.slots import kill_slot_processes, running_as_root, uids_of

log = logging.getLogger(__name__)

INSIDE = Path(__file__).parent / "inside"
ZYGOTE_SOURCE = (INSIDE / "zygote.py").read_text()
GUARD_SOURCE = (Path(__file__).parent / "guard.py").read_text()
CONFINE_SOURCE = (Path(__file__).parent / "confine.py").read_text()
HELLO_FRAME_BYTES = 1 << 20  # a hello frame names its pid and preloads: a few hundred bytes
# The modules of sandbox/inside the zygotes import, each after those it imports: the
# bootstrap installs them in this order, their packages as empty ones.
LIBRARY_MODULES = ("frames", "outcome", "program", "files", "cleanup", "cgroup", "call_process", "warm", "ahead",
                   "notebook")
LIBRARY = (("sandbox", ""), ("sandbox.inside", ""),
           *((f"sandbox.inside.{name}", (INSIDE / f"{name}.py").read_text()) for name in LIBRARY_MODULES))

# Reads a 10-digit length and a JSON object {config, source, name, library} from fd 0
# without buffering past it, installs the library's modules (name, source) in sys.modules,
# then runs the source (a zygote, the session zygote, a holder) with its config.
BOOTSTRAP = (
    "import os,json,sys,types\n"
    "def _r(n):\n"
    " b=b''\n"
    " while len(b)<n:\n"
    "  c=os.read(0,n-len(b))\n"
    "  if not c: raise SystemExit(3)\n"
    "  b+=c\n"
    " return b\n"
    "_m=json.loads(_r(int(_r(10))))\n"
    "for _n,_s in _m.get('library',()):\n"
    " _d=sys.modules[_n]=types.ModuleType(_n)\n"
    " _d.__path__=[]\n"
    " _p,_,_b=_n.rpartition('.')\n"
    " if _p:setattr(sys.modules[_p],_b,_d)\n"
    " exec(compile(_s,_n,'exec'),_d.__dict__)\n"
    "exec(compile(_m['source'],_m['name'],'exec'),{'JAIL_CONFIG':_m['config'],'__name__':_m['name']})\n"
)


class WorkerLost(Exception):
    """The worker died, hung, or answered something that is not a frame."""


class JailEndedEarly(WorkerLost):
    """The jail's process ended before the program in it said hello."""


JAIL_START_TRIES = 3  # a jail that ends as it starts is started this many times in all


@dataclass(frozen=True)
class ZygoteSpec:
    """How to start a zygote: which interpreter, what it pre-imports, which jail."""

    interpreter: str
    preload: tuple[str, ...] = ()
    huge_pages: bool = True  # back the warm heap with 2 MB pages: cheaper fork and exit
    guard: GuardPolicy | None = None  # None: no Python-level policy, the jail alone
    reroute_outside_stdlib: bool = False  # a call importing beyond the standard library ends REROUTE
                                          # (a slim zygote's; needs the guard, which sees imports)
    hand_back: tuple[str, ...] = ()  # top-level modules whose import ends a call REROUTE (a warm
                                     # zygote's: what only the scientific ones preload; needs the guard)
    jail: JailPolicy = field(default_factory=JailPolicy)
    insecure_no_sandbox: bool = False
    start_timeout_s: float = 60.0
    kept_files_mb: int = 0  # the kept files (CallRequest.kept_files) each zygote keeps; 0: none, all are sent.
                            # Only for pools whose calls run the server's own launcher (cpp, program): a
                            # call's process holds what its zygote keeps in its memory until it execs

    def root(self) -> JailRoot:
        """What its jails show of the host: the jail's root and the interpreter it starts on."""
        return self.jail.root.with_paths(*interpreter_paths(self.interpreter))


def program_argv(spec: ZygoteSpec, slot: Slot, program: list[str], keep_fds: tuple[int, ...] = ()) -> list[str]:
    """The exact argv a jailed program runs under: the same for workers, session jails,
    probe; the jail's root shows the interpreter it starts on, whatever else it shows."""
    if spec.insecure_no_sandbox:
        return list(program)
    return jail_command(dataclasses.replace(spec.jail, root=spec.root()), slot, program, keep_fds)


def confined_program(spec: ZygoteSpec, program: list[str]) -> list[str]:
    """program started through the jail's seccomp layer (sandbox/confine.py): for a
    program that is not Python (a Lean REPL), the filter is applied, then it is exec'd;
    the filter stays across exec."""
    source = CONFINE_SOURCE + "\napply()\nimport os, sys\nos.execvp(sys.argv[1], sys.argv[1:])\n"
    packed = base64.b64encode(zlib.compress(source.encode(), 9)).decode()  # firejail refuses
    bootstrap = f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{packed}')))"  # arguments > 4 KB
    return [spec.interpreter, "-I", "-c", bootstrap, *program]


class SpawnIdentity(TypedDict, total=False):
    """Whom a jailed program runs as: the slot's uid and gid and no other groups; empty where
    the server is not root or the slot's uid is 0 (it runs as the server)."""

    user: int
    group: int
    extra_groups: list[int]


async def spawn_jailed(spec: ZygoteSpec, slot: Slot, program: list[str], pass_fds: tuple[int, ...] = (),
                       **kwargs: Any) -> asyncio.subprocess.Process:
    """Starts program in slot's jail, as slot's uid when the server is root; pass_fds
    reach it under the same numbers, and no other descriptor of the server's does."""
    identity: SpawnIdentity = {}
    if running_as_root() and slot.uid != 0:
        identity = {"user": slot.uid, "group": slot.gid, "extra_groups": []}
    return await asyncio.create_subprocess_exec(
        *program_argv(spec, slot, program, pass_fds),
        env=jail_environment(slot, spec.interpreter),
        cwd="/",
        start_new_session=True,
        close_fds=True,
        pass_fds=pass_fds,
        **identity,
        **kwargs,
    )


class JailedProcess:
    """A process tree in one slot's jail: whether it lives, the tail of its stderr, and
    killing it with everything the slot's uid still runs."""

    label = "jailed process"
    # Whether the slot's memory cgroup holds each call's processes alone (a zygote moves
    # them there itself), rather than the whole jail (a session's).
    enlists_per_call = False

    def __init__(self, slot: Slot, cgroup: MemoryCgroup | None = None) -> None:
        self.slot = slot
        self.cgroup = cgroup
        self.inside: int | None = None  # host pid of the jailed program, once settled
        self.inside_pidfd: int | None = None  # and a pidfd of it: what the host signals and joins it by
        self._firejail_pidfd: int | None = None  # firejail's, from its start
        self._init_pidfd: int | None = None  # the jail's PID namespace's init's, once settled
        self.own_pids: frozenset[int] = frozenset()  # host pids of firejail, the jail's init and program, once settled
        self.private_dirs: tuple[str, ...] = ()  # of the jail's private_dirs, those proven its own, once settled
        self._process: asyncio.subprocess.Process | None = None
        self.cpu_nice = 0  # of its autogroup (set_cpu_nice)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    def set_cpu_nice(self, nice: int) -> None:
        """Sets the nice of the jail's autogroup: the CPU weight of its session, the jailed
        program and everything it starts that makes no session of its own, against every
        other jail's. The kernel lets a caller without CAP_SYS_ADMIN change it ten times a
        second at most; without autogroups, or where refused, nothing changes."""
        if self._process is None:
            return
        try:
            Path(f"/proc/{self._process.pid}/autogroup").write_text(str(nice))
        except OSError:
            return
        self.cpu_nice = nice

    @property
    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail)

    def hold(self, process: asyncio.subprocess.Process) -> None:
        """Holds the jail's firejail (just started: process) by a pidfd, what the jail is
        killed through until it settles, and after."""
        self._process = process
        with contextlib.suppress(ProcessLookupError):  # gone already: nothing of it to kill
            self._firejail_pidfd = os.pidfd_open(process.pid)

    async def launch(self, spec: "ZygoteSpec", name: str, source: str, config: dict[str, Any],
                     pass_fds: tuple[int, ...] = (), library: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
        """Starts source (an in-jail program: a zygote, a session jail's holder) in the slot's jail with
        config (and pass_fds), waits for its hello frame, then settles the jail; returns
        the hello. A jail that ended before its hello is started again, JAIL_START_TRIES
        times in all: firejail refuses a jail whose whitelist a host mount made meanwhile
        crossed ("invalid whitelist mount"), as container engines do all the time. Raises
        WorkerLost, with the jail killed."""
        attempt = 1
        while True:
            try:
                return await self._launch_once(spec, name, source, config, pass_fds, library)
            except JailEndedEarly as exc:
                if attempt == JAIL_START_TRIES:
                    raise
                log.warning("%s %s: the jail ended as it started, starting it again: %s", self.label, self.slot.name,
                            exc)
            await asyncio.sleep(0.05 * attempt)
            attempt += 1

    async def _launch_once(self, spec: "ZygoteSpec", name: str, source: str, config: dict[str, Any],
                           pass_fds: tuple[int, ...], library: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        try:
            self.hold(await spawn_jailed(
                spec, self.slot, [spec.interpreter, "-I", "-c", BOOTSTRAP], pass_fds,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            ))
        except OSError as exc:
            raise WorkerLost(f"cannot start the jail: {exc}") from exc
        assert self._process is not None
        self._watch_stderr()
        payload = json.dumps({"config": config, "source": source, "name": name, "library": library}).encode()
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(b"%010d" % len(payload) + payload)
            await self._process.stdin.drain()
            hello = await asyncio.wait_for(self.read_frame(), spec.start_timeout_s)
        except (asyncio.TimeoutError, OSError, WorkerLost) as exc:
            await self.kill()
            lost = WorkerLost if isinstance(exc, asyncio.TimeoutError) else JailEndedEarly
            raise lost(f"{name} did not start: {exc!r}; stderr: {self.stderr_tail.strip()[-500:]}") from exc
        if not hello.get("ready"):
            await self.kill()
            raise WorkerLost(f"{name} sent no hello: {hello!r}")
        try:
            await asyncio.get_running_loop().run_in_executor(None, self._settle, int(hello.get("pid", 0)), spec)
        except OSError as exc:
            await self.kill()
            raise WorkerLost(f"{name} could not be settled in its jail: {exc}") from exc
        return hello

    def _settle(self, jail_pid: int, spec: "ZygoteSpec") -> None:
        """Once the jail is warm and before any untrusted code runs in it: every process
        of the jail joins the slot's memory cgroup, its mounts stop following the host's
        (as root: `make_mounts_private`), and its writable tmpfs mounts (the home, /tmp,
        /var/tmp, /dev/shm, /run/lock) get their caps."""
        assert self._process is not None
        root = self._process.pid
        self.inside = host_pid(root, jail_pid) or (root if namespace_pid(root) == jail_pid else None)
        if self.inside is None:
            raise OSError(f"no process of the jail is numbered {jail_pid} in it")
        self.inside_pidfd = os.pidfd_open(self.inside)
        if namespace_pid(self.inside) != jail_pid:  # it ended before the pidfd held it
            raise OSError(f"the jail's process numbered {jail_pid} in it has ended")
        init = host_pid(root, 1)
        if init is not None and init != root:  # a PID namespace of its own: its init holds every process of it
            self._init_pidfd = os.pidfd_open(init)
            if namespace_pid(init) != 1:
                raise OSError("the jail's init has ended")
        self.own_pids = frozenset(pid for pid in (root, init, self.inside) if pid is not None)
        if not self.enlists_per_call:
            self.enlist_tree()
        # Without a mount namespace of its own the program is not jailed (insecure mode,
        # or a firejail that did nothing): the self-test says so; there is nothing to cap,
        # and the host's /tmp is nobody's scratch.
        if not in_other_mount_namespace(self.inside):
            return
        if running_as_root():
            make_mounts_private(self.inside)
        self.private_dirs = tuple(path for path in spec.jail.private_dirs if is_own_mount(self.inside, path))
        if spec.jail.home_mb and running_as_root():
            tmpfs_paths: tuple[str | Path, ...] = (self.slot.scratch, *self.private_dirs)
            for path in tmpfs_paths:
                cap_tmpfs(self.inside, path, spec.jail.home_mb, spec.jail.home_files)

    def enlist_tree(self, rounds: int = 50) -> None:
        """Moves every process of the jail into the slot's memory cgroup (none without one),
        round after round until a look finds them all there: a process forked meanwhile by
        one not yet moved is moved in the next round, and one forked by a process already
        there is born there. Raises OSError."""
        if self.cgroup is None or self._process is None:
            return
        root = self._process.pid
        for _ in range(rounds):
            tree = [root, *descendants(root)]
            # uids_of: () for a process gone or exited (a zombie cannot move cgroups)
            outside = [pid for pid in tree if uids_of(pid) and not self.cgroup.holds(pid)]
            if not outside:
                return
            self.cgroup.adopt(outside)
        raise OSError(f"the processes of the jail in {self.slot.name} kept escaping its memory cgroup")

    async def read_frame(self, max_bytes: int = HELLO_FRAME_BYTES) -> dict[str, Any]:
        """The next frame the program writes on stdout, of at most max_bytes (what it writes
        is untrusted: a frame that announces more is not read); raises WorkerLost."""
        assert self._process is not None and self._process.stdout is not None
        try:
            header = await self._process.stdout.readexactly(4)
            (size,) = struct.unpack(">I", header)
            if size > max_bytes:
                raise WorkerLost(f"worker announced a frame of {size} bytes, past the {max_bytes} it may send")
            body = await self._process.stdout.readexactly(size)
            message = json.loads(body)
        except asyncio.IncompleteReadError as exc:
            raise WorkerLost(f"worker exited (status {self._process.returncode})") from exc
        except (ValueError, RecursionError) as exc:  # nested past the parser's depth
            raise WorkerLost(f"worker sent a malformed frame: {exc}") from exc
        if not isinstance(message, dict):
            raise WorkerLost("worker sent a frame that is not an object")
        return message

    async def write(self, data: bytes) -> None:
        """Writes data to the program's stdin; raises WorkerLost when it is gone."""
        if not self.alive:
            raise WorkerLost("the jailed program is not running")
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(data)
            await self._process.stdin.drain()
        except (OSError, ConnectionError) as exc:
            raise WorkerLost(f"the jailed program's pipe broke: {exc!r}") from exc

    def _watch_stderr(self) -> None:
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while True:
            line = await self._process.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", errors="replace")
            self._stderr_tail.append(text)
            log.debug("%s %s: %s", self.label, self.slot.name, text.rstrip())

    async def kill(self) -> None:
        """Kills the whole jail and everything its uid still runs; idempotent."""
        process = self._process
        if process is not None and process.returncode is None:
            self.signal_kill()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                log.error("%s %s (pid %d) did not exit after SIGKILL", self.label, self.slot.name, process.pid)
        await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, self.slot)
        self.stop_watching()

    def whole(self) -> bool:
        """Whether firejail, the jail's init and its program all still run: then own_pids
        name them (each is held by a pidfd, so its pid cannot be another's while it runs)."""
        if not self.alive or self.inside_pidfd is None:
            return False
        try:
            for pidfd in self._pidfds():
                signal.pidfd_send_signal(pidfd, 0)
        except ProcessLookupError:
            return False
        return True

    def signal_kill(self) -> None:
        """SIGKILLs the init of the jail's PID namespace (the kernel then kills every
        process in that namespace) and firejail, each through a pidfd: never a process
        that took a number of theirs. A jail not yet settled has only firejail's, and the
        program it started (no PID namespace: insecure mode) only its own."""
        for pidfd in self._pidfds():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)

    def _pidfds(self) -> tuple[int, ...]:
        """The pidfds the jail is held by, its init's first."""
        return tuple(fd for fd in (self._init_pidfd, self.inside_pidfd, self._firejail_pidfd) if fd is not None)

    def stop_watching(self) -> None:
        """Stops reading the jail's stderr and lets go of its pidfds (it is gone)."""
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            self._stderr_task = None
        for pidfd in self._pidfds():
            os.close(pidfd)
        self.inside_pidfd = self._init_pidfd = self._firejail_pidfd = None


class Zygote(JailedProcess):
    """One warm, jailed interpreter that runs one call at a time."""

    label = "zygote"
    enlists_per_call = True

    def __init__(self, spec: ZygoteSpec, slot: Slot, cgroup: MemoryCgroup | None = None) -> None:
        super().__init__(slot, cgroup)
        self.spec = spec
        self.hello: dict[str, Any] = {}
        self.calls = 0
        self._oom_kills = 0
        self.kept: collections.OrderedDict[str, int] = collections.OrderedDict()  # what the zygote keeps: key ->
                                                                                # size, least recently used first

    async def start(self) -> dict[str, Any]:
        """Starts the jail and waits for the zygote's hello; raises WorkerLost.

        With a memory cgroup, the zygote gets descriptors of the slot cgroup's files,
        opened here: it moves the process it forks for each call into the cgroup before it
        hands that process its request, and sets the call's cap, while the zygote itself
        stays outside (the OOM killer then picks only among what the call started)."""
        cgroup_fds = self.cgroup.open_for_jail() if self.cgroup is not None else {}
        try:
            self.hello = await self.launch(self.spec, "zygote", ZYGOTE_SOURCE, {
                "preload": list(self.spec.preload),
                "huge_pages": self.spec.huge_pages,
                "guard_source": GUARD_SOURCE,
                "confine_source": CONFINE_SOURCE,
                "guard": None if self.spec.guard is None else self.spec.guard.config(),
                "reroute_outside_stdlib": self.spec.reroute_outside_stdlib,
                "hand_back": list(self.spec.hand_back),
                "cgroup_fds": cgroup_fds,
            }, tuple(cgroup_fds.values()), LIBRARY)
        finally:
            for fd in cgroup_fds.values():
                os.close(fd)
        settled = json.dumps({"private_dirs": list(self.private_dirs)}).encode()
        await self.write(struct.pack(">I", len(settled)) + settled)
        if self.cgroup is not None:
            self._oom_kills = self.cgroup.oom_kills()
        return self.hello

    async def run(self, request: CallRequest, timeout_s: float) -> CallReply:
        """Sends one call and returns the zygote's reply; raises WorkerLost."""
        if not self.alive:
            raise WorkerLost("worker is not running")
        assert self._process is not None and self._process.stdin is not None
        data = json.dumps(request.wire(*self._keep(request))).encode()
        self.calls += 1
        memory_mb = request.limits.memory_mb
        try:
            self._process.stdin.write(struct.pack(">I", len(data)) + data)
            await self._process.stdin.drain()
            frame = await asyncio.wait_for(self.read_frame(reply_frame_bytes(request.limits)), timeout_s)
        except asyncio.TimeoutError as exc:
            raise WorkerLost(f"worker did not answer within {timeout_s:.1f} s") from exc
        except (OSError, ConnectionError) as exc:
            raise WorkerLost(f"worker pipe broke: {exc!r}") from exc
        if frame.get("id") != request.id:
            raise WorkerLost("worker answered another call")
        try:
            reply = CallReply.from_wire(frame)
        except (TypeError, ValueError) as exc:
            raise WorkerLost(f"worker sent a malformed reply: {exc}") from exc
        if self.cgroup is not None:
            self._account_memory(reply, memory_mb)
        return reply

    def _keep(self, request: CallRequest) -> tuple[set[str], set[str], list[str]]:
        """Which of request's kept files the zygote holds (they go by key), which it is to
        keep from this call on (their bytes go once) and which it is to forget first, least
        recently used first, so that it keeps at most the spec's kept_files_mb. The zygote
        keeps exactly what it is told: this is its whole account."""
        budget = self.spec.kept_files_mb << 20
        files = {file.key: len(file.data) for file in request.kept_files.values()}
        held = {key for key in files if key in self.kept}
        for key in held:
            self.kept.move_to_end(key)
        room = budget - sum(files[key] for key in held)
        new = set()
        for key, size in files.items():
            if key not in held and size <= room:
                new.add(key)
                room -= size
        forget = []
        total = sum(self.kept.values()) + sum(files[key] for key in new)
        for key in list(self.kept):
            if total <= budget:
                break
            if key not in held:
                total -= self.kept.pop(key)
                forget.append(key)
        self.kept.update((key, files[key]) for key in new)
        return held, new, forget

    def cancel_call(self) -> None:
        """Asks the zygote to kill the call it runs (its caller went away): it answers at
        once, and is free for the next call. Nothing happens where it has answered already."""
        if self.inside_pidfd is not None and self.alive:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.inside_pidfd, signal.SIGUSR1)

    def _account_memory(self, reply: CallReply, memory_mb: int) -> None:
        """Applies the OOM kills of the slot's cgroup since the last call to reply."""
        kills = self.cgroup.oom_kills() if self.cgroup is not None else 0
        killed = kills - self._oom_kills
        reply.note_oom_kills(killed, f"memory limit of {memory_mb} MB exceeded by the call's processes together "
                                     f"({killed} killed)")
        self._oom_kills = kills
