"""The warm Python worker that runs inside one jail and forks a child per call.

This file is executed inside the sandbox as a standalone program: the host sends its
source over stdin (see `sandbox.worker.BOOTSTRAP`), so the jail never needs to see the
project tree. It imports nothing from the project.

Protocol on stdin/stdout: frames of a 4-byte big-endian length and a JSON object.
The zygote first writes a hello frame and reads the host's settled frame (which names
the jail's own writable mounts, once the host has capped them), then answers each
request frame with exactly one result frame. Requests may wait in the pipe while it
cleans up after the last call.

Per call it forks, ahead of time, the process that runs the call as `python3 main.py`
would (docs/runtime.md): the code written to main.py in the working directory, a fresh
`__main__` module, python3's streams, its way of ending. That process starts its own
session, sets its limits, installs the guard of the call's import profile (none by
default), runs the program and reports how it ended and the repr of its last bare
expression. The zygote enforces wall time (SIGXCPU, so that the program writes out its
buffered output, then SIGKILL of its process group), then kills every other process of
the jail's uid (double-forked daemons included) and wipes the working directory and the
jail's /tmp, /var/tmp and /dev/shm before it forks the next call's process.

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
import ast
import atexit
import base64
import builtins
import gc
import importlib
import importlib.machinery
import json
import os
import resource
import select
import shutil
import signal
import stat
import struct
import sys
import time
import traceback
import types

PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1+; elsewhere madvise fails and nothing changes
HUGE_PAGE = 2 << 20
READ_CHUNK = 65536
SCRATCH_POLL_S = 0.02  # how often a call's scratch usage is checked; it writes ~1 GB/s at most
REAP_ROUNDS = 200
FLUSH_GRACE_S = 0.05  # a call past its time: how long it may write out its buffered output (at most
                      # a tenth of its limit) before its processes are killed


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exactly(fd, size):
    """size bytes from fd, or None at end of file (pipes return short reads)."""
    chunks, remaining = [], size
    while remaining:
        data = os.read(fd, min(remaining, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        remaining -= len(data)
    return b"".join(chunks)


def send_frame(fd, message):
    data = json.dumps(message).encode()
    write_all(fd, struct.pack(">I", len(data)) + data)


def read_frame(fd):
    """The bytes of the next frame, or None at end of file."""
    header = read_exactly(fd, 4)
    if header is None:
        return None
    return read_exactly(fd, struct.unpack(">I", header)[0])


def vm_size_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


class Capture:
    """Bytes read from one pipe, kept up to a cap; the rest is read and dropped."""

    def __init__(self, cap):
        self.cap = cap
        self.chunks = []
        self.size = 0
        self.truncated = False

    def feed(self, data):
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self.chunks.append(data)
            self.size += len(data)

    def text(self):
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def split_last_expression(source, filename):
    """Returns (body, last_expression) code objects, as a notebook cell runs them."""
    tree = ast.parse(source, filename=filename, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", dont_inherit=True)
    return body, (compile(last, filename, "eval", dont_inherit=True) if last is not None else None)


def set_limits(request, baseline_kb):
    memory = (baseline_kb * 1024) + request["memory_mb"] * 1024 * 1024
    cpu = max(1, -(-request["timeout_ms"] // 1000) + 1)
    limits = [
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NPROC, request["max_processes"]),
        (resource.RLIMIT_FSIZE, request["max_file_mb"] * 1024 * 1024),
        (resource.RLIMIT_NOFILE, request["max_open_files"]),
        (resource.RLIMIT_CORE, 0),
    ]
    for which, value in limits:
        resource.setrlimit(which, (value, value))


class Child:
    """A child forked ahead of its call: it waits on its request pipe, then runs it.

    The program's `__main__` module is made here, before the fork, by the zygote's warm
    code: in the call's process the same work would fault in pages."""

    def __init__(self, baseline_kb):
        req_r, self.req_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.res_r, res_w = os.pipe()
        main = main_module(os.path.join(HOME, PROGRAM_FILE))
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (self.req_w, self.out_r, self.err_r, self.res_r):
                os.close(fd)
            run_child(baseline_kb, main, req_r, out_w, err_w, res_w)
        for fd in (req_r, out_w, err_w, res_w):
            os.close(fd)
        self.pidfd = os.pidfd_open(self.pid)

    def close(self):
        for fd in (self.req_w, self.out_r, self.err_r, self.res_r, self.pidfd):
            try:
                os.close(fd)
            except OSError:
                pass


def read_request(fd):
    chunks = []
    while True:
        data = os.read(fd, READ_CHUNK)
        if not data:
            break
        chunks.append(data)
    return json.loads(b"".join(chunks))


def offer_to_oom_killer():
    """Makes this call's processes the OOM killer's first choice, before the zygote, when
    they fill their slot's memory cgroup (raising one's own score needs no privilege)."""
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, b"1000")
    except OSError:
        pass
    finally:
        os.close(fd)


def close_fds_except(keep):
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1024)


def run_child(baseline_kb, main, req_r, out_w, err_w, result_w):
    """Runs in the forked child; never returns.

    Everything that does not depend on the request is done before it arrives, while
    the child waits ahead of its call, so that a call pays only for its own part.
    """
    global CALL_RESULT_FD, CALL_PID
    CALL_RESULT_FD = result_w
    CALL_PID = os.getpid()
    try:
        os.setpgid(0, 0)  # a group of its own, killed whole; still in the jail's session (and autogroup),
                          # whose CPU weight the host lowers while a call runs long
        os.dup2(out_w, 1)  # sys.stdout and sys.stderr, made by the zygote, write to fds 1 and 2
        os.dup2(err_w, 2)
        close_fds_except((req_r, result_w))
        os.chdir(HOME)
        # The C functions: signal.signal's enum conversions fault in pages a call need not touch.
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
        _signal.signal(_signal.SIGXCPU, flush_and_die)
        _signal.signal(_signal.SIGUSR1, _signal.SIG_DFL)  # the zygote's cancel_call is not the program's
        os._exit = exit_flushed
        offer_to_oom_killer()
        request = read_request(req_r)
        os.close(req_r)
        if request["stdin"]:  # else fd 0 stays the zygote's /dev/null
            stdin_fd = os.memfd_create("stdin")
            os.write(stdin_fd, request["stdin"].encode("utf-8", errors="surrogateescape"))
            os.lseek(stdin_fd, 0, os.SEEK_SET)
            os.dup2(stdin_fd, 0)
            os.close(stdin_fd)
        write_files(request["files"])
        set_limits(request, baseline_kb)
        if GUARDS.get(request["profile"]) is not None:
            GUARDS[request["profile"]]()
    except BaseException as exc:  # the child cannot start: report it as a crash
        os.write(result_w, json.dumps({"kind": "crashed", "error": f"child setup: {exc!r}"}).encode())
        REAL_EXIT(70)
    result, code = run_program(request, main)
    finish(result, code, result_w)


def write_program(code):
    """Writes the call's code where `python3 main.py` would find it: main.py in the
    working directory. The zygote writes it as its call's process waits for its request
    (there the same work faults in more of the pages it shares with the zygote)."""
    fd = os.open(os.path.join(HOME, PROGRAM_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, code.encode("utf-8", errors="surrogateescape"))
    finally:
        os.close(fd)


def main_module(path):
    """A fresh `__main__` module for the program at path, as `python3 path` makes it."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __annotations__={}, __builtins__=builtins,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    return main


def run_program(request, main):
    """Runs the call's code as the program `python3 main.py` (main.py in the working
    directory, main its module), with the repr of a last bare expression kept as its
    value; returns (result, exit status). The module is put where the interpreter looks
    for `__main__`: unittest, doctest, pickle and multiprocessing find its names there."""
    result = {"kind": "ok"}
    sys.modules["__main__"] = main
    sys.argv[:] = [PROGRAM_FILE]
    path = main.__file__
    sys.path.insert(0, os.path.dirname(path))
    namespace = main.__dict__
    # Measured here, at the depth the program's top level will have: measured in the
    # zygote before the fork, it drifts by a level as the zygote's code warms up.
    measured = {"sys": sys}
    exec(MEASURE_DEPTH, measured)
    offset_recursion_limit(measured["depth"] - PROGRAM_DEPTH)
    try:
        body, last = split_last_expression(request["code"], path)
    except (SyntaxError, ValueError) as exc:  # python3 shows no traceback for what it cannot compile
        if not isinstance(exc, SyntaxError):  # 3.11's ast says ValueError where python3 says:
            exc = SyntaxError("source code cannot contain null bytes")
        report_uncaught(exc, None)
        return {"kind": "error", "error": traceback.format_exception_only(type(exc), exc)[-1].strip()}, 1
    try:
        exec(body, namespace)
        if last is not None:
            value = eval(last, namespace)
            if value is not None:
                text = value_repr(value)
                if text is not None:
                    result["value"] = text[: request["max_output_bytes"]]
        code = 0
    except SystemExit as exc:
        code = exit_status(exc)
        if code:
            result = {"kind": "error", "error": f"SystemExit: {exc.code}"}
    except BaseException as exc:
        report_uncaught(exc, exc.__traceback__.tb_next if exc.__traceback__ is not None else None)
        result = raised(exc, GUARD.DENIALS)
        code = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    return result, code


def raised(exc, denials):
    """What an exception a program let out says of its end: its kind (memory, denied or
    error: the guard's denials are denied) and its error line. A call's process and a
    session's cell both report their end so (`program_end` reads it)."""
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, MemoryError):
        return {"kind": "memory", "error": "MemoryError: memory limit reached"}
    if isinstance(exc, denials):
        return {"kind": "denied", "error": line}
    return {"kind": "error", "error": line}


def program_end(result, exit_code, memory_mb):
    """The outcome and error of a program that ended on its own (no limit the zygote or
    the host watches tripped), from what it reported (its kind and error) and its exit
    status: the one table for calls and sessions' cells."""
    kind = result.get("kind")
    if kind == "memory":
        return "MEMORY_LIMIT", f"memory limit of {memory_mb} MB exceeded" if memory_mb else str(result.get("error"))
    if kind == "denied":
        return "DENIED", str(result.get("error", "refused by the sandbox policy"))
    if kind == "crashed":
        return "CRASHED", str(result.get("error", "child failed to start"))
    if kind == "error" or exit_code != 0:
        return "ERROR", str(result.get("error") or f"exited with status {exit_code}")
    return "OK", ""


def offset_recursion_limit(offset):
    """Gives the program the recursion room it has under python3: the zygote's own frames
    lie below the call's, offset levels of recursion. sys's limit functions add and take
    off the difference, so the program sees python3's numbers."""
    if offset <= 0:
        return
    real_set, real_get = sys.setrecursionlimit, sys.getrecursionlimit

    def setrecursionlimit(limit):
        if type(limit) is not int or limit < 1:
            return real_set(limit)  # the same error python3 gives
        return real_set(limit + offset)

    def getrecursionlimit():
        return real_get() - offset

    real_set(real_get() + offset)
    sys.setrecursionlimit, sys.getrecursionlimit = setrecursionlimit, getrecursionlimit


def value_repr(value):
    """The repr of the last expression's value, or None when its repr fails: a program
    that python3 runs to the end does not fail for it."""
    try:
        return repr(value)
    except Exception:
        return None


def exit_status(exc):
    """The status `python3` exits with for an uncaught SystemExit, printing what it prints."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        sys.stderr.write(f"{exc.code}\n")
    except BaseException:
        pass
    return 1


def report_uncaught(exc, tb):
    """Prints an uncaught exception with traceback tb (the zygote's own frames left out) as
    `python3` does: through sys.excepthook."""
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    try:
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    except BaseException:
        pass


def finish(result, code, result_w):
    """Ends the call's process as `python3` ends: waits for its threads, runs its atexit
    functions, clears its `__main__` (finalizers run), flushes stdout and stderr; then
    reports the result and exits with the program's status."""
    shut_down_interpreter()
    result["exit_code"] = code
    try:
        os.close(1)
        os.close(2)
        os.write(result_w, json.dumps(result).encode())
        os.close(result_w)
    except BaseException:
        pass
    if code < 0:  # an uncaught KeyboardInterrupt: python3 ends by the signal itself
        _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    REAL_EXIT(code)


def shut_down_interpreter():
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
    except BaseException as exc:
        report_uncaught(exc, exc.__traceback__)
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    flush_std()
    main = sys.modules.get("__main__")
    if main is not None:
        clear_module(main.__dict__)
    gc.collect()
    flush_std()


def clear_module(namespace):
    """Drops a module's names as the interpreter does at exit (underscored names first,
    `__builtins__` last), so that the finalizers of the objects they held run now."""
    for first_pass in (True, False):
        for name in list(namespace):
            if name == "__builtins__" or (first_pass and not (name.startswith("_") and not name.startswith("__"))):
                continue
            try:
                namespace[name] = None
            except BaseException:
                pass


def flush_std():
    """Writes out what the program printed and still sits in a buffer; never raises."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass


def exit_flushed(status):
    """os._exit in the call's process: what the program printed before it is kept (python3
    would drop what sits in stdout's buffer); its child processes exit as usual."""
    if os.getpid() == CALL_PID:
        flush_std()
    REAL_EXIT(status)


def flush_and_die(signum, frame):
    """SIGXCPU in a call's process (its CPU limit, or the zygote at the wall-time limit):
    writes out what the program printed, then ends by that signal."""
    flush_std()
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def reroute(module):
    """Ends the call at once, uncatchably, when its code reaches for a module this slim
    zygote does not offer: the host runs it again on a warm zygote, which preloads more."""
    os.write(CALL_RESULT_FD, json.dumps({"kind": "reroute", "module": str(module)[:200]}).encode())
    os._exit(0)


def inside_home(name):
    """The real path of name in the home, or None where it resolves outside it."""
    home = os.path.realpath(os.environ.get("HOME", "/"))
    path = os.path.realpath(os.path.join(home, name))
    return path if path.startswith(home + os.sep) else None


def write_files(files):
    """Writes the call's files (base64 by relative path) into its home, parents made."""
    for name, text in files.items():
        path = inside_home(name)
        if path is None:
            raise ValueError(f"file path {name!r} leaves the working directory")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(text))


def fetch_files(names, budget):
    """The named regular files under the home, base64 by name, while their sizes fit in
    budget bytes together; returns them and whether one was left out for the budget."""
    found, left_out = {}, False
    for name in names:
        path = inside_home(name)
        if path is None:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > budget:
                left_out = True
                continue
            with os.fdopen(os.dup(fd), "rb") as source:
                data = source.read(budget + 1)
            if len(data) > budget:
                left_out = True
                continue
            budget -= len(data)
            found[name] = base64.b64encode(data).decode("ascii")
        finally:
            os.close(fd)
    return found, left_out


def kill_everything_else():
    """SIGKILLs every process this uid can signal in the jail and reaps them all.

    The zygote is a child subreaper, so double-forked daemons are its children too;
    repeat until nothing is left, as a fork in flight can add a process after a kill.
    """
    for _ in range(REAP_ROUNDS):
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue


def wipe(directory):
    """Removes everything under directory, whatever permissions the call left."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        path = entry.path
        try:
            if entry.is_dir(follow_symlinks=False):
                for root, dirs, _ in os.walk(path):
                    for name in dirs:
                        try:  # a symlink to a directory is listed too: Linux cannot chmod a link
                            os.chmod(os.path.join(root, name), 0o700, follow_symlinks=False)
                        except (OSError, NotImplementedError):
                            pass
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def read_available(fd, capture):
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


def drain(fd, capture):
    """Reads what is buffered in fd without waiting for writers that are still alive."""
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except OSError:
            return
        if not data:
            return
        capture.feed(data)


def cancel_call(signum, frame):
    """SIGUSR1 from the host: the running call's caller went away. Its process group is
    killed, so that the zygote answers at once and takes the next call; clean_up ends the
    rest of its processes as after any call."""
    global CANCELLED
    if not RUNNING_CALL:
        return  # it has answered already
    CANCELLED = True
    for kill in (os.killpg, os.kill):  # os.kill: it may not have made its group yet
        try:
            kill(RUNNING_CALL, signal.SIGKILL)
        except OSError:
            pass


def execute(child, request, payload):
    """Runs request (payload: its JSON) in the preforked child and returns the reply.

    Returns as soon as the child has reported and closed its output, before cleanup:
    the caller cleans up before it takes the next call.
    """
    global RUNNING_CALL, CANCELLED
    CANCELLED = False
    RUNNING_CALL = child.pid
    try:
        reply = run_call(child, request, payload)
    finally:
        RUNNING_CALL = 0
    if CANCELLED:
        reply["outcome"] = "CRASHED"
        reply["error"] = "cancelled: its caller went away"
    return reply


def run_call(child, request, payload):
    cap = request["max_output_bytes"]
    scratch_cap = request.get("max_scratch_mb", 0) << 20
    # Before the request goes: once it has, the child writes while the parent looks.
    scratch_base = scratch_used() if scratch_cap else 0  # the jail's tmpfs starts empty; a shared disk does not
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
        if scratch_cap and scratch_used() - scratch_base >= scratch_cap:
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
    if scratch_cap and not over_scratch and scratch_used() - scratch_base >= scratch_cap:
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


def tmpfs_directories(directories):
    """Those of directories on a tmpfs, where a directory's size counts its entries: one
    whose size is its empty size holds nothing (a call cannot fake it), and need not be
    wiped."""
    tmpfs_devices = set()
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields, _, rest = line.partition(" - ")
            if rest.split()[0] == "tmpfs":
                major, _, minor = fields.split()[2].partition(":")
                tmpfs_devices.add(os.makedev(int(major), int(minor)))
    return [directory for directory in directories if os.stat(directory).st_dev in tmpfs_devices]


def distinct_filesystems(directories):
    """One directory of each filesystem among directories (those that exist)."""
    seen = {}
    for directory in directories:
        try:
            seen.setdefault(os.stat(directory).st_dev, directory)
        except OSError:
            pass
    return tuple(seen.values())


def scratch_used():
    """Bytes in use on the filesystems a call may write (the jail's private tmpfs
    mounts: RAM)."""
    used = 0
    for directory in SCRATCH_DIRS:
        stats = os.statvfs(directory)
        used += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    return used


class CallCgroup:
    """The slot's memory cgroup, through descriptors of its files the host opened: the
    process forked for each call moves in before it gets its request (so that everything
    the call starts is born there, and the zygote, outside, is never the OOM killer's
    choice), and each call's cap is set before it runs. Without descriptors (no memory
    cgroups), nothing."""

    def __init__(self, fds):
        self.fds = fds
        self.cap_mb = None  # unknown: as the host made it, no cap

    def enlisted(self, child):
        """child, moved into the cgroup; a zygote that cannot move it ends (fail closed:
        the call would run without its cap), and the host replaces it."""
        if "procs" in self.fds:
            try:
                os.pwrite(self.fds["procs"], str(child.pid).encode(), 0)
            except OSError as exc:
                raise SystemExit(f"cannot move the call's process into its memory cgroup: {exc}")
        return child

    def cap(self, megabytes):
        """Caps the memory the call's processes may use together. memory+swap must stay at
        least memory: raised first, lowered last. A cap the kernel cannot reclaim down to
        now is refused, and the last one stays."""
        if "limit" not in self.fds or megabytes == self.cap_mb:
            return
        raising = self.cap_mb is not None and megabytes > self.cap_mb
        order = ("memsw", "limit") if raising else ("limit", "memsw")
        value = str(megabytes << 20).encode()
        try:
            for name in order:
                if name in self.fds:
                    os.pwrite(self.fds[name], value, 0)
        except OSError:
            return
        self.cap_mb = megabytes


def clean_up(child):
    """Leaves nothing of the call: no process, no file, no open descriptor."""
    kill_everything_else()
    child.close()
    wipe(HOME)  # it holds main.py at least
    for directory in PRIVATE_DIRS:
        if os.stat(directory).st_size != EMPTY_SIZE.get(directory):
            wipe(directory)


def classify(request, status, timed_out, elapsed, out, err, res, over_scratch=False, over_output=False):
    """The result frame of a call (the host reads it as sandbox.calls.CallReply)."""
    reply = {
        "id": request["id"],
        "stdout": out.text(),
        "stderr": err.text(),
        "truncated": out.truncated or err.truncated,
        "elapsed_us": int(elapsed * 1e6),
        "exit_code": 0,
        "value": "",
        "error": "",
    }
    try:
        result = json.loads(res.text()) if res.size else {}
    except ValueError:
        result = {}
    if not isinstance(result, dict):
        result = {}
    reply["value"] = str(result.get("value", ""))
    if status is None:
        code = result.get("exit_code", 0)
        reply["exit_code"] = code if isinstance(code, int) else 1
    elif os.WIFEXITED(status):
        reply["exit_code"] = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        reply["exit_code"] = -os.WTERMSIG(status)
    signalled = status is not None and os.WIFSIGNALED(status)
    if signalled and os.WTERMSIG(status) == signal.SIGINT and result.get("kind") == "error":
        signalled = False  # an uncaught KeyboardInterrupt, reported: python3 then ends by SIGINT
    if result.get("kind") == "reroute" and not (timed_out or over_scratch or signalled):
        reply["outcome"] = "REROUTE"
        reply["needs"] = str(result.get("module", ""))
        reply["error"] = f"needs module {reply['needs']}, which this worker does not offer"
    elif over_output:
        streams = " and ".join(name for name, capture in (("stdout", out), ("stderr", err)) if capture.truncated)
        reply["outcome"] = "OUTPUT_LIMIT"
        reply["error"] = f"output limit of {request['max_output_bytes']} bytes exceeded on {streams}: stopped there"
    elif over_scratch:
        reply["outcome"] = "ERROR"
        reply["error"] = f"scratch space limit of {request['max_scratch_mb']} MB exceeded"
    elif timed_out:
        reply["outcome"] = "TIMEOUT"
        reply["error"] = f"wall time limit of {request['timeout_ms']} ms exceeded"
    elif signalled:
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and elapsed * 1000 >= request["timeout_ms"]):
            reply["outcome"] = "TIMEOUT"
            reply["error"] = "CPU time limit exceeded"
        elif sig == signal.SIGXFSZ:
            reply["outcome"] = "ERROR"
            reply["error"] = f"file size limit of {request['max_file_mb']} MB exceeded"
        else:
            reply["outcome"] = "CRASHED"
            reply["error"] = f"killed by signal {signal.Signals(sig).name}"
    else:
        reply["outcome"], reply["error"] = program_end(result, reply["exit_code"], request["memory_mb"])
    if "MemoryError" in reply["stderr"][-4096:] and reply["outcome"] == "ERROR" and not over_scratch:
        reply["outcome"] = "MEMORY_LIMIT"
        reply["error"] = f"memory limit of {request['memory_mb']} MB exceeded"
    return reply


def collapse_heap_into_huge_pages():
    """Backs the warm heap with 2 MB pages, so that each fork copies a few hundred page
    table entries instead of ~12,000 and each child's exit frees as few.

    A child that writes to a shared huge page gets its PMD split and one 4 KB page
    copied (Linux 5.8+), so copy-on-write stays small. Best effort: returns the
    megabytes collapsed (0 where the kernel cannot).
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        path = fields[5] if len(fields) > 5 else ""
        if not fields[1].startswith("rw") or fields[1][3] != "p" or path not in ("", "[heap]"):
            continue
        start = (low + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
        end = high & ~(HUGE_PAGE - 1)
        if end <= start:
            continue
        libc.madvise(start, end - start, MADV_HUGEPAGE)
        if libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += (end - start) >> 20
    return collapsed


def preload(modules):
    loaded, failed = [], {}
    for name in modules:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as exc:
            failed[name] = repr(exc)
    return loaded, failed


def harden_process():
    """Dies with the jail, is not dumpable (no ptrace, no /proc/pid/mem of it), and
    becomes the subreaper of everything its calls start."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def load_source(name, source):
    """A module made from source that the host sent (the jail cannot see the project)."""
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module


def confine(source):
    """Installs the jail's seccomp layer (sandbox/confine.py) on this process and every
    call it will fork; the module and its native handles are dropped afterwards."""
    load_source("confine", source).apply()


def text_streams():
    """sys.stdin, sys.stdout and sys.stderr on fds 0, 1 and 2, as `python3` makes them when
    they are pipes in a UTF-8 locale (stdout block-buffered, stderr line-buffered, no
    newline translation): a call's process points the fds at its own pipes. They hold
    nothing buffered when a call forks (the zygote never reads or writes them)."""
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", newline="\n",
                      closefd=False)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def make_guards(policy):
    """The guard of each profile made ready to install in a call's process (None for a
    profile that refuses nothing, where nothing is rerouted); empty without a policy."""
    if policy is None:
        return {}
    writable = (HOME, *PRIVATE_DIRS)
    outside = reroute if REROUTE_OUTSIDE_STDLIB or HAND_BACK else None
    return {name: GUARD.make_guard(rules["allowed"], rules["denied"], writable, rules["refuse_actions"], outside,
                                   HAND_BACK or None)
            for name, rules in policy["profiles"].items()}


def main(config):
    global GUARD, GUARDS, REROUTE_OUTSIDE_STDLIB, HAND_BACK, HOME, PRIVATE_DIRS, SCRATCH_DIRS
    HOME = os.environ.get("HOME", "")
    if not os.path.isabs(HOME) or HOME == "/":
        raise SystemExit(f"HOME {HOME!r} is no scratch directory: the zygote wipes it after every call")
    harden_process()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, cancel_call)
    os.environ["TMPDIR"] = HOME  # firejail drops TMPDIR; where the jail has a /tmp of its own, python3's is used
    control_in = os.dup(0)
    control_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    GUARD = load_source("guard", config["guard_source"])
    policy = config.get("guard")
    REROUTE_OUTSIDE_STDLIB = bool(config.get("reroute_outside_stdlib"))
    HAND_BACK = frozenset(config.get("hand_back", ()))
    loaded, failed = preload(config.get("preload", []))
    if policy is not None and not REROUTE_OUTSIDE_STDLIB and any(rules["denied"] for rules in policy["profiles"].values()):
        GUARD.load_before_removal()
    gc.collect()
    huge_mb = collapse_heap_into_huge_pages() if config.get("huge_pages", True) else 0
    confine(config["confine_source"])
    text_streams()
    send_frame(control_out, {"ready": True, "pid": os.getpid(), "uid": os.getuid(),
                             "preloaded": loaded, "preload_failed": failed, "huge_pages_mb": huge_mb})
    settled = read_frame(control_in)  # the host has capped the jail's own mounts and names them
    if settled is None:
        return
    PRIVATE_DIRS = tuple(json.loads(settled)["private_dirs"])
    SCRATCH_DIRS = distinct_filesystems((HOME, *PRIVATE_DIRS))
    if "/tmp" in PRIVATE_DIRS:
        del os.environ["TMPDIR"]  # python3's temporary files go to /tmp
    GUARDS = make_guards(policy)
    for directory in (HOME, *PRIVATE_DIRS):
        wipe(directory)  # what the preloads wrote (caches): the first call finds them empty too
    for directory in tmpfs_directories(PRIVATE_DIRS):
        EMPTY_SIZE[directory] = os.stat(directory).st_size
    gc.collect()
    gc.freeze()
    baseline_kb = vm_size_kb()
    cgroup = CallCgroup(config.get("cgroup_fds") or {})
    child = cgroup.enlisted(Child(baseline_kb))
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
        cgroup.cap(request["memory_mb"])
        write_program(request["code"])
        reply = execute(child, request, payload)
        if request["fetch_files"]:
            reply["files"], left_out = fetch_files(request["fetch_files"], request["max_file_mb"] << 20)
            reply["truncated"] = reply["truncated"] or left_out
        send_frame(control_out, reply)
        clean_up(child)
        child = cgroup.enlisted(Child(baseline_kb))


# The keys of a request frame: the host builds them from sandbox.calls.CallRequest.
REQUEST_KEYS = ("id", "code", "stdin", "profile", "files", "fetch_files", "timeout_ms", "memory_mb", "max_output_bytes",
                "max_processes", "max_file_mb", "max_open_files", "max_scratch_mb")
# Reads the recursion depth at the top level of exec'd code as sys.setrecursionlimit
# reports it (0 where it cannot be read); python3 reports PROGRAM_DEPTH at a program's top
# level.
MEASURE_DEPTH = compile(
    "depth = 0\ntry:\n    sys.setrecursionlimit(1)\nexcept RecursionError as exc:\n"
    "    words = str(exc).partition('recursion depth ')[2].partition(':')[0]\n"
    "    depth = int(words) if words.isdigit() else 0\n", "<depth>", "exec")
PROGRAM_DEPTH = 2
PROGRAM_FILE = "main.py"  # the call's code, in its working directory (sandbox.calls.PROGRAM_FILE)
GUARD = None  # the guard's module, set by main from the config
GUARDS = {}  # import profile -> the installer of its guard, or None where it refuses nothing
REROUTE_OUTSIDE_STDLIB = False
HAND_BACK = frozenset()  # top-level modules whose import ends a call REROUTE (a warm zygote's: the data stack)
HOME = ""  # the jail's home, the call's working directory: set by main
PRIVATE_DIRS = ()  # the jail's own /tmp, /var/tmp and /dev/shm: writable, wiped after every call
SCRATCH_DIRS = ()  # one directory of each filesystem a call may write: its scratch usage
EMPTY_SIZE = {}  # the size each of PRIVATE_DIRS on a tmpfs has when empty
CALL_RESULT_FD = -1  # in a call's process: the pipe its result goes to
CALL_PID = -1  # in a call's process: its pid (its own child processes have others)
RUNNING_CALL = 0  # in the zygote: the pid of the call's process while its call runs
CANCELLED = False  # in the zygote: whether the host cancelled the running call
REAL_EXIT = os._exit  # a call's process replaces os._exit by exit_flushed
if __name__ == "zygote":  # the session zygote loads this source as a library of its helpers
    main(JAIL_CONFIG)  # noqa: F821 - defined by the bootstrap before this source runs
