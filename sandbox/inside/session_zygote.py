"""The session zygote: one warm interpreter that forks every stateful session into a jail
made ahead of time for it. Both halves of a session's process live here.

Like the jailed zygote (`zygote.py`), the host sends this source, the library it imports and
its config over stdin (`sandbox.worker.BOOTSTRAP`); it shares the zygote's frames, warming
and outcome table. It
runs as root on the host, outside any jail, and never runs a caller's code: it imports
the runtime's preloads (as a worker does), backs its heap with huge pages, and then only
forks.

For each session the host starts a jail of the slot's own (the same firejail command line
as a worker's, running a holder that only keeps the jail alive) and asks for a session in
it, passing the session's ends of its control socket and its stdout and stderr pipes, and
a pidfd of the holder: the jail is named by a handle that cannot be recycled, never by a
pid. The zygote points its next child's pid namespace at the holder's and forks, holding
the child by a pidfd of its own that it hands to the host (which never signals a pid). The
child, still root, reads the jail's compiled seccomp filters through the holder's root
directory (from outside the jail, before it joins), joins the holder's IPC, UTS, network
and mount namespaces at once (`setns` on the pidfd) and takes the holder's root directory
(as `nsenter --root` and `firejail --join` do: the jail's read-only root is a mount
firejail stacked on the namespace's own root, which `setns` alone would give), so that it
sees exactly the filesystem a worker's call sees. It then starts a session of its own,
takes the jail's rlimits, drops every group, its gid, every capability from its bounding
set and its uid for the slot's, sets no_new_privs and loads those filters (as
`firejail --join` does). It is then a process of that jail in every way the kernel
checks, forked from a warm interpreter: numpy and sympy are imported, its pages shared
with the zygote until written.

The child moves itself into the slot's memory cgroup first (the host sends a descriptor of
the cgroup's procs: no pid of it is written). Once in its jail it applies the jail's seccomp layer (`sandbox/confine.py`), makes its
`__main__` and streams, and waits, made ahead, for a caller: at OpenSession its start frame
caps its address space and names the guard of the caller's import profile. It then serves
calls, one at a time, until its control socket closes. A call's code runs in the session's
`__main__` module; its output goes to the session's stdout and stderr pipes, which the host
reads while a call runs; its result (the repr of a last bare expression, how it ended)
comes back as a frame on the control socket after its output, carrying the call's own
number. The host interrupts a call past its time with SIGINT. The zygote holds no
configuration, token or caller data: its memory is every session's.

Frames: a 4-byte big-endian length and a JSON object.
"""

import ctypes
import gc
import inspect
import json
import os
import resource
import signal
import socket
import struct
import sys
import threading
import traceback
import types

from sandbox.inside.cleanup import wipe
from sandbox.inside.frames import read_frame as read_frame_bytes
from sandbox.inside.frames import send_frame, write_all
from sandbox.inside.notebook import Notebook, ends_with_semicolon, make_shell
from sandbox.inside.outcome import program_end, raised
from sandbox.inside.program import exit_status, program_traceback, split_last_expression
from sandbox.inside.warm import (
    collapse_heap_into_huge_pages,
    forget_library,
    load_source,
    preload,
    text_streams,
    vm_size_kb,
)

TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Sequence
    from typing import Any

    JsonObject = dict[str, Any]  # a frame's object, as json reads and writes it
    JAIL_CONFIG: "JsonObject"  # the config the host sent: defined by the bootstrap before this source runs

CLONE_NEWPID = 0x20000000
# The holder's namespaces a session joins, all at once through its pidfd (Linux 5.8+): IPC,
# UTS, network and mount. pid: the zygote's child is born there.
JOINED_NAMESPACES = 0x08000000 | 0x04000000 | 0x40000000 | 0x00020000
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_SYSCALL = {"x86_64": 317, "aarch64": 277}
FIREJAIL_FILTERS = "run/firejail/mnt/seccomp/seccomp.list"  # the jail's compiled filters, below its root
CONTROL_FD = 3  # in a session: its control socket
LIBC = ctypes.CDLL(None, use_errno=True)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def read_frame(fd: int) -> "JsonObject | None":
    """The next frame's object, or None at end of file."""
    payload = read_frame_bytes(fd)
    if payload is None:
        return None
    frame: "JsonObject" = json.loads(payload)
    return frame


class SessionZygote:
    """The session zygote's state, all of it: what every session needs of the zygote (the
    jail's seccomp layer, the guard, IPython's shell), the exit pipes of the live sessions
    and the zygote's own pid namespace; and, in a session's process (a copy of it after the
    fork), its notebook, whether a call's code runs and the event loop its cells await on."""

    # Set by zygote_main before it forks: from the sources the host sent (sandbox/confine.py,
    # sandbox/guard.py), and make_shell's (None where the runtime has no IPython).
    confine: types.ModuleType
    guard: types.ModuleType
    shell: object
    notebook: "Notebook"  # in a session: made before it waits for a caller

    def __init__(self) -> None:
        self.exit_pipes: dict[int, int] = {}  # in the zygote: a live session's pid -> the write end of its exit pipe
        self.own_pid_namespace = -1  # in the zygote: its own pid namespace, where its children are born
                                     # between sessions
        self.in_call = False  # in a session: whether a call's code runs
        # In a session: the loop its cells' top-level awaits run on, once one has.
        self.event_loop: "asyncio.AbstractEventLoop | None" = None

    # ---- the zygote (root, on the host)

    def reap(self) -> None:
        """Reaps ended sessions, each one's wait status written on its exit pipe."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            exit_pipe = self.exit_pipes.pop(pid, None)
            if exit_pipe is not None:
                try:
                    os.write(exit_pipe, struct.pack(">i", status))
                except OSError:
                    pass
                os.close(exit_pipe)

    def fork_session(self, request: "JsonObject", fds: dict[str, int]) -> tuple[int, int]:
        """Forks a session into the jail whose holder's pidfd is fds['holder'], or, without one
        (a server run without a sandbox), here; returns a pidfd of it, and its host pid."""
        holder = fds.get("holder")
        if holder is not None:
            check(LIBC.setns(holder, CLONE_NEWPID), "joining the jail's pid namespace")
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # no reaping before the pidfd
        try:
            pid = os.fork()
            if pid == 0:
                try:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                    self.become_session(request, fds)
                except BaseException:  # nothing of a failed child may run on: the host sees it end
                    traceback.print_exc()
                finally:
                    os._exit(70)
            if "exit" in fds:  # before SIGCHLD is unblocked: the status of a child that ended at once is written too
                self.exit_pipes[pid] = os.dup(fds["exit"])
            try:
                return os.pidfd_open(pid), pid
            finally:
                if holder is not None:
                    check(LIBC.setns(self.own_pid_namespace, CLONE_NEWPID), "returning to the zygote's pid namespace")
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    # ---- a session's process: joining its jail (still root), then serving calls (as its slot)

    def become_session(self, request: "JsonObject", fds: dict[str, int]) -> None:
        if "cgroup" in fds:  # the slot's memory cgroup, before anything of the jail's
            os.write(fds["cgroup"], b"0")
        filters = join_jail(fds["holder"], request["uid"]) if "holder" in fds else None
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        os.dup2(fds["control"], CONTROL_FD)
        os.closerange(CONTROL_FD + 1, 1 << 16)
        if filters is not None:
            drop_privileges(request, filters)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["home"])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote's reaper would take the code's children
        signal.signal(signal.SIGINT, self.interrupt_call)
        self.session_main(request)

    def interrupt_call(self, signum: int, frame: types.FrameType | None) -> None:
        """The host's SIGINT: a call past its time ends with KeyboardInterrupt; one that comes
        once the call is over is dropped."""
        if self.in_call:
            raise KeyboardInterrupt

    def session_main(self, request: "JsonObject") -> None:
        self.confine.apply()
        empty_writable_places(request["writable"])
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        sys.argv = [""]
        sys.path[0:0] = [""]
        text_streams()
        self.notebook = Notebook(main, self.shell)
        send_frame(CONTROL_FD, {"waiting": True})
        start = read_frame(CONTROL_FD)  # a caller's OpenSession: sandbox.calls.SessionStart
        if start is None:
            return
        memory_mb: int = start.get("memory_mb") or 0
        if memory_mb:
            limit = (vm_size_kb() << 10) + memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        guard = start.get("guard")
        if guard is not None:
            module = self.guard
            if guard["denied"]:
                module.load_before_removal()
            module.install_guard(guard["allowed"], guard["denied"], tuple(request["writable"]), guard["refuse_actions"])
        send_frame(CONTROL_FD, {"serving": True, "pid": os.getpid(), "uid": os.getuid()})
        number = 0
        while True:
            call = read_frame(CONTROL_FD)  # sandbox.calls.CellRequest
            if call is None:
                return
            number += 1
            send_frame(CONTROL_FD, self.run_call(main, call, number, memory_mb))

    def compile_cell(self, code: str, filename: str) -> tuple[str, types.CodeType, types.CodeType | None]:
        """(source, statements, last expression) of a cell: as python3 compiles it, or, where it
        cannot, as IPython rewrites its notebook syntax (else python3's SyntaxError stands)."""
        try:
            body, last = split_last_expression(code, filename, cell=True)
        except (SyntaxError, ValueError):
            source = self.notebook.rewritten(code)
            if source is None:
                raise
            return (source, *split_last_expression(source, filename, cell=True))
        self.notebook.script.start(code)
        return code, body, last

    def evaluate(self, code: types.CodeType, namespace: "dict[str, Any]") -> object:
        """Runs code in namespace; a cell with a top-level await runs on the session's own
        event loop, kept from cell to cell, as a notebook's does."""
        result = eval(code, namespace)
        if code.co_flags & inspect.CO_COROUTINE:
            import asyncio

            if self.event_loop is None or self.event_loop.is_closed():
                self.event_loop = asyncio.new_event_loop()
            result = self.event_loop.run_until_complete(result)
        return result

    def run_call(self, main: types.ModuleType, call: "JsonObject", number: int, memory_mb: int) -> "JsonObject":
        """Runs a cell and answers as a zygote answers a call (the host reads it as a
        sandbox.calls.CallReply): its outcome from the zygote's own table, the repr of its last
        expression as the value (none after a trailing `;`), what it displayed as MIME bundles
        (`notebook.py`). The host reads its output from the session's pipes, and names what
        only it knows (an interrupt it sent, output past the cap, memory its cgroup refused).
        While the code runs, SIGINT raises KeyboardInterrupt where the code is, as python3's
        own handler does (the session's drops one that comes between cells)."""
        result: "JsonObject"
        result, exit_code, value, value_cut, ran_to_its_end = {"kind": "ok"}, 0, "", False, False
        filename = f"<cell {number}>"
        self.in_call = True
        try:
            feed_stdin(call.get("stdin", ""))
            self.notebook.start_cell()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                source, body, last = self.compile_cell(call["code"], filename)
                self.evaluate(body, main.__dict__)
                if last is not None:
                    evaluated = self.evaluate(last, main.__dict__)
                    if evaluated is not None and not ends_with_semicolon(source):
                        main.__dict__["_"] = evaluated
                        text = repr(evaluated)
                        cap = call.get("value_chars", 1 << 20)
                        value, value_cut = text[:cap], len(text) > cap
                        self.notebook.show(evaluated, value)
                ran_to_its_end = True
            except SystemExit as exc:
                exit_code = exit_status(exc)  # as python3 exits: non-int codes printed, the status & 0xFF
                if exit_code:
                    result = {"kind": "error", "error": f"SystemExit: {exc.code}"}
            except BaseException as exc:
                tb = exc.__traceback__
                while tb is not None and tb.tb_frame.f_code.co_filename != filename:
                    tb = tb.tb_next
                usage = self.notebook.usage_error(exc)
                sys.stderr.write(usage or "".join(
                    traceback.format_exception(type(exc), exc, program_traceback(exc, tb))))
                result, exit_code = raised(exc, self.guard.DENIALS), 1
            self.notebook.end_cell(ran_to_its_end)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
        except KeyboardInterrupt:  # in the session's own steps, before or after the code
            result, exit_code = {"kind": "error", "error": "KeyboardInterrupt"}, 1
        finally:
            signal.signal(signal.SIGINT, self.interrupt_call)
            self.in_call = False
        outcome, error = program_end(result, exit_code, memory_mb)
        displays, displays_cut = self.notebook.taken(call.get("display_bytes", 0))
        return {"id": call.get("id"), "outcome": outcome, "error": error[:4096], "exit_code": exit_code,
                "value": value, "truncated": value_cut or displays_cut, "displays": displays}


def zygote_main(config: "JsonObject") -> None:
    forget_library()
    zygote = SessionZygote()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, lambda signum, frame: zygote.reap())
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with the server
    control = socket.socket(fileno=config["control_fd"])
    out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    loaded, failed = preload(config.get("preload", ()))
    zygote.confine = load_source("confine", config["confine_source"])
    zygote.guard = load_source("guard", config["guard_source"])
    zygote.shell = make_shell()
    gc.collect()
    huge_mb = collapse_heap_into_huge_pages() if config.get("huge_pages", True) else 0
    gc.freeze()
    send_frame(out, {"ready": True, "pid": os.getpid(), "preloaded": loaded, "preload_failed": failed,
                            "huge_pages_mb": huge_mb})
    os.close(out)
    zygote.own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    while True:  # one request a message (a SOCK_SEQPACKET socket), with the session's descriptors:
        data, fds, _, _ = socket.recv_fds(control, 1 << 16, 6)  # control, stdout, stderr, exit, holder, cgroup
        if not data:
            return
        request = json.loads(data)
        session = []
        try:
            names = request.get("descriptors", ())
            if len(fds) != len(names) or not {"control", "stdout", "stderr"} <= set(names):
                raise OSError(f"a session needs its descriptors {names}, {len(fds)} came")
            pidfd, pid = zygote.fork_session(request, dict(zip(names, fds)))
            session = [pidfd]
            reply = {"id": request["id"], "pid": pid}
        except OSError as exc:
            reply = {"id": request["id"], "error": str(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            socket.send_fds(control, [json.dumps(reply).encode()], session)
        finally:
            for fd in session:
                os.close(fd)


# ---- a session's process: the steps that need none of its state

def join_jail(holder: int, uid: int) -> list[bytes]:
    """Joins the jail of the process the pidfd holder holds: its IPC, UTS, network and
    mount namespaces, and its root directory; returns the jail's seccomp filters, read
    through that root from outside before joining. The jail is the slot uid's, made ahead
    for this session: nothing of uid's has run in it but its holder."""
    root = os.open(f"/proc/{pidfd_pid(holder)}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        signal.pidfd_send_signal(holder, 0)  # alive after the open: root is the holder's own
        filters = jail_filters(root, (0, uid))
        own_mounts = os.stat("/proc/self/ns/mnt").st_ino
        check(LIBC.setns(holder, JOINED_NAMESPACES), "joining the jail's namespaces")
        if os.stat("/proc/self/ns/mnt").st_ino == own_mounts:
            raise OSError("the holder's mount namespace is the host's: it is in no jail")
        os.fchdir(root)
        os.chroot(".")
    finally:
        os.close(root)
    return filters


def pidfd_pid(pidfd: int) -> int:
    """The pid, in this process's pid namespace, of the process pidfd holds."""
    with open(f"/proc/self/fdinfo/{pidfd}") as info:
        for line in info:
            if line.startswith("Pid:") and int(line.split()[1]) > 0:
                return int(line.split()[1])
    raise OSError("the jail's holder has ended")


def jail_filters(root: int, owners: tuple[int, ...]) -> list[bytes]:
    """The compiled seccomp filters firejail made for the jail whose root directory is the
    descriptor root: files below that root that only their owner, one of owners, may write."""
    filters = [read_root_file(root, path.lstrip("/"), owners)
               for path in read_root_file(root, FIREJAIL_FILTERS, owners).decode().split()]
    if not any(filters):
        raise OSError("the jail has no seccomp filter to join")
    return filters


def read_root_file(root: int, path: str, owners: tuple[int, ...]) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
    try:
        info = os.fstat(fd)
        if info.st_uid not in owners or info.st_mode & 0o022:
            raise OSError(f"the jail's /{path} may be written by others than its owner {info.st_uid}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def drop_privileges(request: "JsonObject", filters: list[bytes]) -> None:
    """What firejail does to a process it starts in the jail, for one joining it: its
    rlimits, no groups, the slot's gid and uid, no capability left (bounding set included),
    no_new_privs, the jail's own seccomp filters."""
    for name, value in request["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    uid, gid = request["uid"], request["gid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    for capability in range(64):
        LIBC.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # past the last one, EINVAL: nothing to drop
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise OSError("the session still runs as root")
    check(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    import platform
    number = SECCOMP_SYSCALL[platform.machine()]
    for code in filters:
        if code:
            buffer = ctypes.create_string_buffer(code, len(code))
            program = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
            check(LIBC.syscall(number, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(program)), "loading a seccomp filter")


def empty_writable_places(places: "Sequence[str]") -> None:
    """Wipes every place the session may write (its home and the jail's private dirs), as
    the slot's uid inside the jail, before it serves: a recycled jail's hold what the last
    session left there, a new one's nothing. Raises OSError where one stays not empty."""
    for directory in places:
        wipe(directory)
    left = [directory for directory in places if os.listdir(directory)]
    if left:
        raise OSError(f"cannot empty {left}")


def feed_stdin(text: str) -> None:
    """fd 0 reads text, then end of file."""
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    data = text.encode("utf-8", "surrogateescape")

    def write() -> None:
        try:
            write_all(write_end, data)
        except OSError:
            pass
        finally:
            os.close(write_end)

    if len(data) <= 32768:
        write()
    else:
        threading.Thread(target=write, daemon=True).start()
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.__stdin__ = sys.stdin  # type: ignore[misc]  # typeshed calls it Final; the interpreter rebinds it


if __name__ == "session_zygote":
    zygote_main(JAIL_CONFIG)  # noqa: F821 - defined by the bootstrap before this source runs
