"""The process a zygote forks for one call, on its own side of the fork: its limits, its
descriptors, its request, and its end, as python3 ends."""

import _signal
import json
import os
import resource

from sandbox.inside.program import flush_std, shut_down_interpreter

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from types import FrameType
    from typing import Any, NoReturn

READ_CHUNK = 65536
REAL_EXIT = os._exit  # a call's process replaces os._exit by the zygote's exit_flushed


def set_limits(request: "Mapping[str, Any]", baseline_kb: int) -> None:
    """The call's rlimits: its memory above the zygote's own address space (baseline_kb)
    (its address_space_mb where it has one), CPU seconds a second past its wall time,
    processes, file size, open files, no core."""
    memory = (baseline_kb * 1024) + (request["address_space_mb"] or request["memory_mb"]) * 1024 * 1024
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


def read_request(fd: int) -> "Any":
    """The request the zygote wrote to fd, whole (it closes its end after it)."""
    chunks: list[bytes] = []
    while True:
        data = os.read(fd, READ_CHUNK)
        if not data:
            break
        chunks.append(data)
    return json.loads(b"".join(chunks))


def offer_to_oom_killer() -> None:
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


def close_fds_except(keep: "Iterable[int]") -> None:
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1024)


def point_stdin_at(text: "str | None") -> None:
    """fd 0 reads text, then end of file; without text it stays the zygote's /dev/null."""
    if not text:
        return
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, text.encode("utf-8", errors="surrogateescape"))
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    os.dup2(stdin_fd, 0)
    os.close(stdin_fd)


def flush_and_die(signum: int, frame: "FrameType | None") -> None:
    """SIGXCPU in a call's process (its CPU limit, or the zygote at the wall-time limit):
    writes out what the program printed, then ends by that signal."""
    flush_std()
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def finish(result: "dict[str, Any]", code: int, result_w: int) -> "NoReturn":
    """Ends the call's process as `python3` ends (`program.shut_down_interpreter`); then
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
