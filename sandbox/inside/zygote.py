"""The warm Python worker that runs inside one jail and forks a child per call.

The host sends this source and the library it imports over stdin (`sandbox.worker.BOOTSTRAP`),
so the jail never needs to see the project tree; the bootstrap runs it as `__main__` named
"zygote" with the config the host sent.

Protocol on stdin/stdout: frames of a 4-byte big-endian length and a JSON object.
The zygote first writes a hello frame and reads the host's settled frame (which names
the jail's own writable mounts, once the host has capped them), then answers each
request frame with exactly one result frame. Requests may wait in the pipe while it
cleans up after the last call. It keeps the files the host tells it to keep (a compiled
program's bytes, run case after case), in its own memory, where no call can change them:
later requests name them by key, and the host decides what is kept and what forgotten.

Per call it forks, ahead of time, the process that runs the call as `python3 main.py`
would (docs/runtime.md): the code written to main.py in the working directory, a fresh
`__main__` module, python3's streams, its way of ending. That process starts its own
session, sets its limits, installs the guard of the call's import profile (none by
default), runs the program and reports how it ended and the repr of its last bare
expression. The zygote enforces wall time (SIGXCPU, so that the program writes out its
buffered output, then SIGKILL of its process group), then kills every other process of
the jail's uid (double-forked daemons included) and wipes the working directory and the
jail's private dirs (/tmp, /var/tmp, /dev/shm, /run/lock) before it forks the next call's process.

A slim zygote (config `reroute_outside_stdlib`) preloads standard modules only, and not
those that load a denied module (the guard's LOAD_BEFORE_REMOVAL): a call whose code
imports anything outside the standard library, or one of those, ends at that import with
the result kind "reroute" (outcome REROUTE, naming the module), and the host runs it again
on a zygote that preloads that module. A warm zygote (config `hand_back`: the data stack,
which only scientific zygotes preload) hands back a call at the import of one of those
modules the same way: code whose imports no look at its text could see (base64 in `exec`,
a computed `__import__`) still runs where its modules are warm. A call handed back has
done nothing anyone sees: its output is dropped and its jail wiped, and it runs again from
the start.

What this does not protect against on its own: anything the jail around it does not
stop. The child runs with the zygote's uid, so it can kill the zygote (the host then
replaces the worker) or write a forged result frame about its own call.
"""

import _signal
import base64
import gc
import json
import os
import select
import signal
import time

from sandbox.inside.ahead import StartedAhead
from sandbox.inside.call_process import (
    READ_CHUNK,
    REAL_EXIT,
    close_fds_except,
    finish,
    flush_and_die,
    offer_to_oom_killer,
    point_stdin_at,
    read_request,
    set_limits,
)
from sandbox.inside.cgroup import CallCgroup
from sandbox.inside.cleanup import bytes_used, distinct_filesystems, kill_everything_else, tmpfs_directories, wipe
from sandbox.inside.files import fetch_files, write_files, write_kept_files, write_program
from sandbox.inside.frames import read_frame, send_frame, write_all
from sandbox.inside.outcome import Capture, classify
from sandbox.inside.program import PROGRAM_FILE, flush_std, main_module, run_program
from sandbox.inside.warm import (
    collapse_heap_into_huge_pages,
    confine,
    forget_library,
    harden_process,
    load_source,
    preload,
    text_streams,
    vm_size_kb,
)

SCRATCH_POLL_S = 0.02  # how often a call's scratch usage is checked; it writes ~1 GB/s at most
FLUSH_GRACE_S = 0.05  # a call past its time: how long it may write out its buffered output (at most
                      # a tenth of its limit) before its processes are killed
# The keys of a request frame: the host builds them from sandbox.calls.CallRequest.
REQUEST_KEYS = ("id", "code", "stdin", "profile", "files", "kept", "kept_data", "forget", "fetch_files", "ahead",
                "timeout_ms", "memory_mb", "max_output_bytes", "max_processes", "max_file_mb", "max_open_files",
                "max_scratch_mb", "address_space_mb")
STARTED_AHEAD = "__started_ahead__"  # where a call's launcher finds the hand-over of the process started
                                     # ahead for it (sandbox/inside/ahead.py), in its module's names
ENLISTED = b"+"  # the zygote's word to a child that starts a process ahead: it is in the memory cgroup

TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from types import FrameType, ModuleType
    from typing import Any, NoReturn

    JsonObject = dict[str, Any]  # a frame's object, as json reads and writes it
    JAIL_CONFIG: "JsonObject"  # the config the host sent: defined by the bootstrap before this source runs


class Child:
    """A child forked ahead of its call: it waits on its request pipe, then runs it.

    The program's `__main__` module is made here, before the fork, by the zygote's warm
    code: in the call's process the same work would fault in pages."""

    def __init__(self, zygote: "Zygote", baseline_kb: int, ahead: "JsonObject | None") -> None:
        self.ahead = ahead  # what it starts ahead of its call, or None
        req_r, self.req_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.res_r, res_w = os.pipe()
        main = main_module(os.path.join(zygote.home, PROGRAM_FILE))
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (self.req_w, self.out_r, self.err_r, self.res_r):
                os.close(fd)
            zygote.run_child(baseline_kb, main, req_r, out_w, err_w, res_w, ahead)
        for fd in (req_r, out_w, err_w, res_w):
            os.close(fd)
        self.pidfd = os.pidfd_open(self.pid)

    def close(self) -> None:
        for fd in (self.req_w, self.out_r, self.err_r, self.res_r, self.pidfd):
            try:
                os.close(fd)
            except OSError:
                pass


class Zygote:
    """The zygote's state, all of it: the jail's writable places, the guards of the import
    profiles, the call that runs; and, in a call's process (a copy of it after the fork),
    that call's result pipe and pid."""

    def __init__(self, home: str, guard: "ModuleType", reroute_outside_stdlib: bool, hand_back: frozenset[str]) -> None:
        self.home = home  # the jail's home, the call's working directory
        self.guard = guard  # the guard's module (sandbox/guard.py, from the source the host sent)
        self.reroute_outside_stdlib = reroute_outside_stdlib
        self.hand_back = hand_back  # top-level modules whose import ends a call REROUTE (a warm zygote's)
        # import profile -> the installer of its guard, or None where it refuses nothing
        self.guards: "dict[str, Callable[[], None] | None]" = {}
        # the jail's own /tmp, /var/tmp, /dev/shm, /run/lock: writable, wiped after every call
        self.private_dirs: tuple[str, ...] = ()
        self.scratch_dirs: tuple[str, ...] = ()  # one directory of each filesystem a call may write: its scratch usage
        self.empty_size: dict[str, int] = {}  # the size each of private_dirs on a tmpfs has when empty
        self.running_call = 0  # the pid of the call's process while its call runs
        self.cancelled = False  # whether the host cancelled the running call
        # key -> bytes: the files the host asked this zygote to keep (it chooses what, and how much);
        # a call's process finds those kept before it was forked
        self.kept: dict[str, bytes] = {}
        # what the last request named to start ahead: the next call's process starts it
        self.ahead: "JsonObject | None" = None
        self.call_result_fd = -1  # in a call's process: the pipe its result goes to
        self.call_pid = -1  # in a call's process: its pid (its own child processes have others)

    def settle(self, private_dirs: "Iterable[str]", policy: "JsonObject | None") -> None:
        """Takes the jail's own writable mounts the host capped, makes the guards, and
        leaves them as empty as a call will find them."""
        self.private_dirs = tuple(private_dirs)
        self.scratch_dirs = distinct_filesystems((self.home, *self.private_dirs))
        if "/tmp" in self.private_dirs:
            del os.environ["TMPDIR"]  # python3's temporary files go to /tmp
        self.guards = self.make_guards(policy)
        for directory in (self.home, *self.private_dirs):
            wipe(directory)  # what the preloads wrote (caches): the first call finds them empty too
        for directory in tmpfs_directories(self.private_dirs):
            self.empty_size[directory] = os.stat(directory).st_size

    def make_guards(self, policy: "JsonObject | None") -> "dict[str, Callable[[], None] | None]":
        """The guard of each profile made ready to install in a call's process (None for a
        profile that refuses nothing, where nothing is rerouted); empty without a policy."""
        if policy is None:
            return {}
        writable = (self.home, *self.private_dirs)
        outside = self.reroute if self.reroute_outside_stdlib or self.hand_back else None
        return {name: self.guard.make_guard(rules["allowed"], rules["denied"], writable, rules["refuse_actions"],
                                            outside, self.hand_back or None)
                for name, rules in policy["profiles"].items()}

    def serve(self, control_in: int, control_out: int, cgroup: "CallCgroup") -> None:
        """Answers request frames, one at a time, until the host closes its end."""
        child = self.forked(cgroup, None)
        while True:
            payload = read_frame(control_in)
            if payload is None:
                return
            request = json.loads(payload)
            missing = [key for key in REQUEST_KEYS if key not in request]
            if missing:
                send_frame(control_out, {"id": request.get("id", ""), "outcome": "INVALID",
                                         "error": f"the request lacks {', '.join(missing)}"})
                continue
            self.keep_files(request["forget"], request["kept_data"])
            self.ahead = request["ahead"] if isinstance(request["ahead"], dict) else None
            if child.ahead is not None and child.ahead != self.ahead:
                # Not the process this call takes over: gone before the call's cap is set, which
                # the memory it holds would otherwise count against (or keep from being set).
                self.clean_up(child)
                child = self.forked(cgroup, None)
            cgroup.cap(request["memory_mb"])
            write_program(self.home, request["code"])
            reply = self.execute(child, request, payload)
            if request["fetch_files"]:
                reply["files"], left_out = fetch_files(request["fetch_files"], request["max_file_mb"] << 20)
                reply["truncated"] = reply["truncated"] or left_out
            send_frame(control_out, reply)
            self.clean_up(child)
            child = self.forked(cgroup, self.ahead)

    def keep_files(self, forget: "Iterable[str]", sent: dict[str, str]) -> None:
        """Forgets the kept files the host no longer wants kept, then keeps those it sent
        (its call's process, forked before, decodes them from its request itself)."""
        for key in forget:
            self.kept.pop(key, None)
        for key, text in sent.items():
            self.kept[key] = base64.b64decode(text)

    def forked(self, cgroup: "CallCgroup", ahead: "JsonObject | None") -> "Child":
        """The next call's process, forked ahead and moved into the slot's memory cgroup, where
        it then starts ahead (a request's `ahead`, or None). Its memory limit counts above the
        address space it inherits (the kept files with it)."""
        child = Child(self, vm_size_kb(), ahead)
        cgroup.enlist(child.pid)
        if ahead is not None:
            os.write(child.req_w, ENLISTED)
        return child

    # ---- in the call's process

    def run_child(self, baseline_kb: int, main: "ModuleType", req_r: int, out_w: int, err_w: int, result_w: int,
                  ahead: "JsonObject | None") -> None:
        """Runs in the forked child; never returns.

        Everything that does not depend on the request is done before it arrives, while
        the child waits ahead of its call, so that a call pays only for its own part: the
        process ahead names too, which the call's launcher takes over (a request that names
        another finds this child replaced; where that process ended before the call came, the
        launcher starts its program itself).
        """
        self.call_result_fd = result_w
        self.call_pid = os.getpid()
        try:
            os.setpgid(0, 0)  # a group of its own, killed whole; still in the jail's session (and autogroup),
                              # whose CPU weight the host lowers while a call runs long
            os.dup2(out_w, 1)  # sys.stdout and sys.stderr, made by the zygote, write to fds 1 and 2
            os.dup2(err_w, 2)
            close_fds_except((req_r, result_w))
            os.chdir(self.home)
            # The C functions: signal.signal's enum conversions fault in pages a call need not touch.
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
            _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
            _signal.signal(_signal.SIGXCPU, flush_and_die)
            _signal.signal(_signal.SIGUSR1, _signal.SIG_DFL)  # the zygote's cancel_call is not the program's
            os._exit = self.exit_flushed
            offer_to_oom_killer()
            started = self.start_ahead(ahead, req_r) if ahead is not None else None
            request = read_request(req_r)
            os.close(req_r)
            if started is not None:
                if started.alive():
                    main.__dict__[STARTED_AHEAD] = started.hand_over
                else:
                    started.forget()
            point_stdin_at(request["stdin"])
            write_files(request["files"])
            write_kept_files(request["kept"], self.kept, request["kept_data"])
            set_limits(request, baseline_kb)
            install_guard = self.guards.get(request["profile"])
            if install_guard is not None:
                install_guard()
        except BaseException as exc:  # the child cannot start: report it as a crash
            os.write(result_w, json.dumps({"kind": "crashed", "error": f"child setup: {exc!r}"}).encode())
            REAL_EXIT(70)
        result, code = run_program(request["code"], main, request["max_output_bytes"], self.guard.DENIALS)
        finish(result, code, result_w)

    def start_ahead(self, ahead: "JsonObject", req_r: int) -> "StartedAhead | None":
        """The process ahead names, started once the zygote has this process in the memory
        cgroup; None where it cannot start (the call's launcher then starts its program)."""
        if os.read(req_r, len(ENLISTED)) != ENLISTED:
            return None
        try:
            return StartedAhead(ahead, self.home)
        except OSError:
            return None

    def exit_flushed(self, status: int) -> "NoReturn":
        """os._exit in the call's process: what the program printed before it is kept (python3
        would drop what sits in stdout's buffer); its child processes exit as usual."""
        if os.getpid() == self.call_pid:
            flush_std()
        REAL_EXIT(status)

    def reroute(self, module: str) -> "NoReturn":
        """Ends the call at once, uncatchably, when its code reaches for a module this
        zygote does not offer or hands back: the host runs it again on a zygote that preloads it."""
        os.write(self.call_result_fd, json.dumps({"kind": "reroute", "module": str(module)[:200]}).encode())
        os._exit(0)

    # ---- in the zygote, while a call runs and after

    def cancel_call(self, signum: int, frame: "FrameType | None") -> None:
        """SIGUSR1 from the host: the running call's caller went away. Its process group is
        killed, so that the zygote answers at once and takes the next call; clean_up ends the
        rest of its processes as after any call."""
        if not self.running_call:
            return  # it has answered already
        self.cancelled = True
        for kill in (os.killpg, os.kill):  # os.kill: it may not have made its group yet
            try:
                kill(self.running_call, signal.SIGKILL)
            except OSError:
                pass

    def execute(self, child: "Child", request: "JsonObject", payload: bytes) -> "JsonObject":
        """Runs request (payload: its JSON) in the preforked child and returns the reply.

        Returns as soon as the child has reported and closed its output, before cleanup:
        the caller cleans up before it takes the next call.
        """
        self.cancelled = False
        self.running_call = child.pid
        try:
            reply = self.run_call(child, request, payload)
        finally:
            self.running_call = 0
        if self.cancelled:
            reply["outcome"] = "CRASHED"
            reply["error"] = "cancelled: its caller went away"
        return reply

    def run_call(self, child: "Child", request: "JsonObject", payload: bytes) -> "JsonObject":
        cap = request["max_output_bytes"]
        scratch_cap = request.get("max_scratch_mb", 0) << 20
        # Before the request goes: once it has, the child writes while the parent looks.
        scratch_base = bytes_used(self.scratch_dirs) if scratch_cap else 0  # a shared disk does not start empty
        started = time.monotonic()
        try:
            write_all(child.req_w, payload)
        except OSError:
            pass  # the child is gone: its exit status tells the rest
        os.close(child.req_w)
        child.req_w = -1
        captures = {child.out_r: Capture(cap), child.err_r: Capture(cap), child.res_r: Capture(16 * cap + 65536)}
        for fd in captures:
            os.set_blocking(fd, False)
        open_fds = set(captures)
        deadline = started + request["timeout_ms"] / 1000.0
        timed_out = over_scratch = False
        status = None
        while open_fds or status is None:
            if not open_fds and captures[child.res_r].size:
                break  # reported and closed everything: its exit status adds nothing
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if timed_out:
                    break  # its moment to write out what it printed is over
                timed_out = True
                try:
                    os.kill(child.pid, signal.SIGXCPU)  # flush_and_die
                except OSError:
                    pass
                deadline = time.monotonic() + min(FLUSH_GRACE_S, request["timeout_ms"] / 10000.0)
                continue
            if scratch_cap and bytes_used(self.scratch_dirs) - scratch_base >= scratch_cap:
                over_scratch = True  # at the cap the home is full: writes fail from here on
                break
            waiting = list(open_fds) + ([child.pidfd] if status is None else [])
            wait_s = min(remaining, SCRATCH_POLL_S) if scratch_cap else remaining
            readable, _, _ = select.select(waiting, [], [], wait_s)
            for fd in readable:
                if fd != child.pidfd and not read_available(fd, captures[fd]):
                    open_fds.discard(fd)
            if captures[child.out_r].truncated or captures[child.err_r].truncated:
                break  # a judge's output limit: the program stops at the cut
            if child.pidfd in readable:
                _, status = os.waitpid(child.pid, 0)
                for fd in list(open_fds):
                    drain(fd, captures[fd])
                break
        elapsed = time.monotonic() - started
        over_output = captures[child.out_r].truncated or captures[child.err_r].truncated
        if scratch_cap and not over_scratch and bytes_used(self.scratch_dirs) - scratch_base >= scratch_cap:
            over_scratch = True  # it filled the home and ended before a poll saw it
        if timed_out or over_scratch or over_output:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            if status is None:  # reaped already when it exited before the cap was seen
                _, status = os.waitpid(child.pid, 0)
            for fd in list(open_fds):
                drain(fd, captures[fd])
        return classify(request, status, timed_out, elapsed,
                        captures[child.out_r], captures[child.err_r], captures[child.res_r], over_scratch, over_output)

    def clean_up(self, child: "Child") -> None:
        """Leaves nothing of the call: no process, no file, no open descriptor."""
        kill_everything_else()
        child.close()
        wipe(self.home)  # it holds main.py at least
        for directory in self.private_dirs:
            if os.stat(directory).st_size != self.empty_size.get(directory):
                wipe(directory)


def read_available(fd: int, capture: "Capture") -> bool:
    """Reads what fd has now: returns False at end of file, True otherwise."""
    try:
        data = os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return True
    except OSError:
        return False
    if not data:
        return False
    capture.feed(data)
    return True


def drain(fd: int, capture: "Capture") -> None:
    """Reads what is buffered in fd without waiting for writers that are still alive."""
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except OSError:
            return
        if not data:
            return
        capture.feed(data)


def main(config: "JsonObject") -> None:
    home = os.environ.get("HOME", "")
    if not os.path.isabs(home) or home == "/":
        raise SystemExit(f"HOME {home!r} is no scratch directory: the zygote wipes it after every call")
    forget_library()
    harden_process()
    zygote = Zygote(home, load_source("guard", config["guard_source"]), bool(config.get("reroute_outside_stdlib")),
                    frozenset(config.get("hand_back", ())))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, zygote.cancel_call)
    os.environ["TMPDIR"] = home  # firejail drops TMPDIR; where the jail has a /tmp of its own, python3's is used
    control_in = os.dup(0)
    control_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    policy = config.get("guard")
    loaded, failed = preload(config.get("preload", []))
    if policy is not None and not zygote.reroute_outside_stdlib and any(
            rules["denied"] for rules in policy["profiles"].values()):
        zygote.guard.load_before_removal()
    gc.collect()
    huge_mb = collapse_heap_into_huge_pages() if config.get("huge_pages", True) else 0
    confine(config["confine_source"])
    text_streams()
    send_frame(control_out, {"ready": True, "pid": os.getpid(), "uid": os.getuid(),
                             "preloaded": loaded, "preload_failed": failed, "huge_pages_mb": huge_mb})
    settled = read_frame(control_in)  # the host has capped the jail's own mounts and names them
    if settled is None:
        return
    zygote.settle(json.loads(settled)["private_dirs"], policy)
    gc.collect()
    gc.freeze()
    zygote.serve(control_in, control_out, CallCgroup(config.get("cgroup_fds") or {}))


if __name__ == "zygote":
    main(JAIL_CONFIG)  # noqa: F821 - defined by the bootstrap before this source runs
