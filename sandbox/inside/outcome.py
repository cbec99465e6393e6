"""How a call ended, the one table for a zygote's calls and a session's cells: what a
program reports of its end (`raised`), the outcome of one that ended on its own
(`program_end`), and a call's whole answer frame (`classify`), which the host reads as
sandbox.calls.CallReply."""

import json
import os
import re
import signal
import traceback

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# A Python MemoryError (or a subclass: numpy's _ArrayMemoryError) in a failed call's last
# output; not the JVM's OutOfMemoryError, whose "unable to create native thread" is the
# process cap's refusal (a Java program's memory is judged by its language's own markers).
PYTHON_MEMORY_ERROR = re.compile(r"(?<!OutOf)MemoryError")


def wall_time_exceeded(timeout_ms: int) -> str:
    """A call's error when it ran past its wall time."""
    return f"wall time limit of {timeout_ms} ms exceeded"


class Capture:
    """Bytes read from one pipe, kept up to a cap; the rest is read and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    def feed(self, data: bytes) -> None:
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self.chunks.append(data)
            self.size += len(data)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def raised(exc: BaseException, denials: "tuple[type[BaseException], ...]") -> "dict[str, str]":
    """What an exception a program let out says of its end: its kind (memory, denied or
    error: the guard's denials are denied) and its error line. A call's process and a
    session's cell both report their end so (`program_end` reads it)."""
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, MemoryError):
        return {"kind": "memory", "error": "MemoryError: memory limit reached"}
    if isinstance(exc, denials):
        return {"kind": "denied", "error": line}
    return {"kind": "error", "error": line}


def program_end(result: "Mapping[str, Any]", exit_code: int, memory_mb: int) -> "tuple[str, str]":
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


def classify(request: "Mapping[str, Any]", status: "int | None", timed_out: bool, elapsed: float, out: Capture,
             err: Capture, res: Capture, over_scratch: bool = False, over_output: bool = False) -> "dict[str, Any]":
    """The result frame of a call (the host reads it as sandbox.calls.CallReply): out, err
    and res are the Captures of its stdout, stderr and result pipes, status its wait status
    (None where it was not reaped)."""
    reply: dict[str, Any]  # declared apart: tests/unit/test_zygote.py reads the keys of this assignment
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
    sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else 0  # 0: not ended by a signal
    signalled = sig != 0
    if signalled and sig == signal.SIGINT and result.get("kind") == "error":
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
        reply["error"] = wall_time_exceeded(request["timeout_ms"])
    elif signalled:
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
    if PYTHON_MEMORY_ERROR.search(reply["stderr"][-4096:]) and reply["outcome"] == "ERROR" and not over_scratch:
        reply["outcome"] = "MEMORY_LIMIT"
        reply["error"] = f"memory limit of {request['memory_mb']} MB exceeded"
    return reply
