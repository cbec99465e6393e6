"""The session zygote: one warm interpreter that forks every stateful session into a jail
made ahead of time for it. Both halves of a session's process live here.

Like `sandbox/zygote.py`, the host sends this source and its config over stdin (see
`sandbox.worker.BOOTSTRAP`); it imports nothing from the project, and takes its frames,
streams and huge pages from the zygote's own source, which the host sends with it. It
runs as root on the host, outside any jail, and never runs a caller's code: it imports
the runtime's preloads (as a worker does), backs its heap with huge pages, and then only
forks.

For each session the host starts a jail of the slot's own (the same firejail command line
as a worker's, running a holder that only keeps the jail alive) and asks for a session in
it, passing the session's ends of its control socket and its stdout and stderr pipes. The
zygote points its next child's pid namespace at the jail's and forks; the child, still
root, joins the jail's IPC, UTS, network and mount namespaces (the jail's firejail made
them: no network, read-only root, its own home, /tmp, /var/tmp and /dev/shm, hidden paths),
starts a session of its own, takes the jail's rlimits, drops every group, its gid, every
capability from its bounding set and its uid for the slot's, sets no_new_privs and loads the
jail's own seccomp filters (the files firejail compiled for that jail, as `firejail --join`
does). It is then a process of that jail in every way the kernel checks, forked from a warm
interpreter: numpy and sympy are imported, its pages shared with the zygote until written.

The child then waits for the host's go (the host has moved it into the slot's memory
cgroup by then), applies the jail's seccomp layer (`sandbox/confine.py`), makes its
`__main__` and streams, and waits, made ahead, for a caller: at OpenSession its start frame
caps its address space and names the guard of the caller's import profile. It then serves
calls, one at a time, until its control socket closes. A call's code runs in the session's `__main__` module;
its output goes to the session's stdout and stderr pipes, which the host reads; its result
(the repr of a last bare expression, how it ended) comes back as a frame on the control
socket after its output. The host interrupts a call past its time with SIGINT.

Frames: a 4-byte big-endian length and a JSON object.
"""

import ast
import ctypes
import gc
import importlib
import inspect
import json
import linecache
import os
import resource
import signal
import socket
import sys
import threading
import traceback
import types

CLONE_NEWPID = 0x20000000
JOINED_NAMESPACES = ("ipc", "uts", "net", "mnt")  # pid: the zygote's child is born there
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_SYSCALL = {"x86_64": 317, "aarch64": 277}
FIREJAIL_FILTERS = "/run/firejail/mnt/seccomp/seccomp.list"  # the jail's compiled filters, as it sees them
CONTROL_FD = 3  # in a session: its control socket
LIBC = ctypes.CDLL(None, use_errno=True)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def read_frame(fd):
    """The next frame's object, or None at end of file."""
    payload = ZYGOTE.read_frame(fd)
    return None if payload is None else json.loads(payload)


def load_source(name, source):
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module


# ---- the zygote (root, on the host)

def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def fork_session(request, fds):
    """Forks a session into the jail whose holder is request['holder'] (a host pid), or,
    without a holder (a server run without a sandbox), here; returns its host pid."""
    holder = request.get("holder")
    if holder:
        pid_namespace = open_jail_namespace(holder, "pid")
        try:
            check(LIBC.setns(pid_namespace, CLONE_NEWPID), "joining the jail's pid namespace")
        finally:
            os.close(pid_namespace)
    pid = os.fork()
    if pid == 0:
        try:
            become_session(request, fds)
        except BaseException:  # nothing of a failed child may run on: the host sees its socket close
            traceback.print_exc()
        finally:
            os._exit(70)
    return pid


def open_jail_namespace(holder, name):
    """A descriptor of the namespace name of the process holder, refused when it is this
    process's own (the holder is gone and its pid taken by a process outside any jail)."""
    fd = os.open(f"/proc/{holder}/ns/{name}", os.O_RDONLY)
    if os.fstat(fd).st_ino == os.stat(f"/proc/self/ns/{name}").st_ino:
        os.close(fd)
        raise OSError(f"process {holder} is in no jail: its {name} namespace is the host's")
    return fd


def zygote_main(config):
    global ZYGOTE
    ZYGOTE = load_source("zygote_library", config["zygote_source"])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, lambda signum, frame: reap())
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with the server
    control = socket.socket(fileno=config["control_fd"])
    out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    loaded, failed = [], {}
    for name in config.get("preload", ()):
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as exc:
            failed[name] = repr(exc)
    global SESSION_CONFIG
    SESSION_CONFIG = {"confine": load_source("confine", config["confine_source"]),
                      "guard": load_source("guard", config["guard_source"])}
    gc.collect()
    huge_mb = ZYGOTE.collapse_heap_into_huge_pages() if config.get("huge_pages", True) else 0
    gc.freeze()
    ZYGOTE.send_frame(out, {"ready": True, "pid": os.getpid(), "preloaded": loaded, "preload_failed": failed,
                            "huge_pages_mb": huge_mb})
    os.close(out)
    while True:  # one request a message (a SOCK_SEQPACKET socket), with the session's 3 descriptors
        data, fds, _, _ = socket.recv_fds(control, 1 << 16, 3)
        if not data:
            return
        request = json.loads(data)
        try:
            if len(fds) != 3:
                raise OSError(f"a session needs 3 descriptors, {len(fds)} came")
            reply = {"id": request["id"], "pid": fork_session(request, fds)}
        except OSError as exc:
            reply = {"id": request["id"], "error": str(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        control.send(json.dumps(reply).encode())


# ---- a session's process: joining its jail (still root), then serving calls (as its slot)

def become_session(request, fds):
    control, stdout, stderr = fds
    holder = request.get("holder")
    if holder:
        namespaces = {name: open_jail_namespace(holder, name) for name in JOINED_NAMESPACES}
        for name in JOINED_NAMESPACES:
            check(LIBC.setns(namespaces[name], 0), f"joining the jail's {name} namespace")
            os.close(namespaces[name])
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    os.dup2(control, CONTROL_FD)
    os.closerange(CONTROL_FD + 1, 1 << 16)
    if holder:
        drop_privileges(request)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["home"])
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote's reaper would take the code's children
    signal.signal(signal.SIGINT, interrupt_call)
    session_main(request)


def interrupt_call(signum, frame):
    """The host's SIGINT: a call past its time ends with KeyboardInterrupt; one that comes
    once the call is over is dropped."""
    if IN_CALL:
        raise KeyboardInterrupt


def drop_privileges(request):
    """What firejail does to a process it starts in the jail, for one joining it: its
    rlimits, no groups, the slot's gid and uid, no capability left (bounding set included),
    no_new_privs, the jail's own seccomp filters."""
    with open(FIREJAIL_FILTERS) as listing:
        filters = [open(path.strip(), "rb").read() for path in listing if path.strip()]
    if not any(filters):
        raise OSError("the jail has no seccomp filter to join")
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


def session_main(request):
    if read_frame(CONTROL_FD) is None:  # the go: the host has moved this process into the slot's cgroup
        return
    SESSION_CONFIG["confine"].apply()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    sys.argv = [""]
    sys.path[0:0] = [""]
    ZYGOTE.text_streams()
    ZYGOTE.send_frame(CONTROL_FD, {"waiting": True})
    start = read_frame(CONTROL_FD)  # a caller's OpenSession
    if start is None:
        return
    if start.get("memory_mb"):
        limit = (ZYGOTE.vm_size_kb() << 10) + start["memory_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    guard = start.get("guard")
    if guard is not None:
        module = SESSION_CONFIG["guard"]
        if guard["denied"]:
            module.load_before_removal()
        module.install_guard(guard["allowed"], guard["denied"], (request["home"], "/tmp", "/var/tmp", "/dev/shm"),
                             guard["refuse_actions"])
    ZYGOTE.send_frame(CONTROL_FD, {"serving": True, "pid": os.getpid(), "uid": os.getuid()})
    number = 0
    while True:
        call = read_frame(CONTROL_FD)
        if call is None:
            return
        number += 1
        ZYGOTE.send_frame(CONTROL_FD, run_call(main, call, number))


def feed_stdin(text):
    """fd 0 reads text, then end of file."""
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    data = text.encode("utf-8", "surrogateescape")

    def write():
        try:
            ZYGOTE.write_all(write_end, data)
        except OSError:
            pass
        finally:
            os.close(write_end)

    if len(data) <= 32768:
        write()
    else:
        threading.Thread(target=write, daemon=True).start()
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.__stdin__ = sys.stdin


def split_last_expression(source, filename):
    """(statements, last expression or None), compiled, as a notebook cell runs them; the
    source is kept for tracebacks."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return body, None if last is None else compile(last, filename, "eval", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def evaluate(code, namespace):
    """Runs code in namespace; a cell with a top-level await runs on the session's own
    event loop, kept from cell to cell, as a notebook's does."""
    result = eval(code, namespace)
    if code.co_flags & inspect.CO_COROUTINE:
        global EVENT_LOOP
        import asyncio

        if EVENT_LOOP is None or EVENT_LOOP.is_closed():
            EVENT_LOOP = asyncio.new_event_loop()
        result = EVENT_LOOP.run_until_complete(result)
    return result


def run_call(main, call, number):
    global IN_CALL
    result = {"value": None, "value_cut": False, "ename": "", "evalue": "", "exit_code": 0}
    filename = f"<cell {number}>"
    IN_CALL = True
    try:
        feed_stdin(call.get("stdin", ""))
        try:
            body, last = split_last_expression(call["code"], filename)
            evaluate(body, main.__dict__)
            if last is not None:
                value = evaluate(last, main.__dict__)
                if value is not None:
                    main.__dict__["_"] = value
                    text = repr(value)
                    cap = call.get("max_output_bytes", 1 << 20)
                    result["value"], result["value_cut"] = text[:cap], len(text) > cap
        except SystemExit as exc:
            code = exc.code
            result["exit_code"] = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
            if result["exit_code"]:
                result["ename"], result["evalue"] = "SystemExit", str(code)
        except BaseException as exc:
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != filename:
                tb = tb.tb_next
            sys.stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))
            result["ename"], result["evalue"] = type(exc).__name__, str(exc)[:4096]
            result["exit_code"] = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    except KeyboardInterrupt:  # in the session's own steps, before or after the code
        result["ename"], result["evalue"], result["exit_code"] = "KeyboardInterrupt", "", 1
    finally:
        IN_CALL = False
    return result


SESSION_CONFIG = {}  # in the zygote: what each session needs of it (set by zygote_main)
ZYGOTE = None  # sandbox/zygote.py's helpers (frames, streams, huge pages), loaded from the source the host sent
IN_CALL = False  # in a session: whether a call's code runs
EVENT_LOOP = None  # in a session: the loop its cells' top-level awaits run on, once one has
if __name__ == "session_zygote":
    zygote_main(JAIL_CONFIG)  # noqa: F821 - defined by the bootstrap before this source runs
