"""One call as the host sends it to a zygote (its code, input, import profile and limits)
or to a session, and the answer, which has one shape for both.

The host side (the python tool, the pool, the worker, the sessions) and the self-test
build and read these; only `wire` turns a request into the JSON object the jailed side
reads, and only `CallReply.from_wire` reads the JSON object it answers. A session's
messages sit beside a call's: `SessionStart` (what OpenSession sends a session made
ahead) and `CellRequest` (one call on it); its answer is a `CallReply` as a zygote's,
its outcome decided in the jail by the zygote's own table. The zygote and the session
zygote run inside the jail as source of their own, import nothing of the project, and
keep the same keys (`tests/unit/test_zygote.py` and `tests/unit/test_calls.py` check
that they agree).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import posixpath
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sandbox.inside.notebook import BINARY_TYPES, DISPLAY_KINDS, MAX_DISPLAYS, MAX_MIME_NAME, MAX_MIME_TYPES

# The call's code is written to this file in its working directory and run as
# `python3 main.py` would run it (sandbox/inside/program.py keeps the same name).
PROGRAM_FILE = "main.py"


@dataclass(frozen=True)
class CallLimits:
    """What one call may use; the zygote's child sets them on itself before the code runs."""

    timeout_ms: int          # wall time; CPU time is capped at the same plus 1 s
    memory_mb: int           # address space on top of the warm interpreter
    max_output_bytes: int    # per stream (stdout, stderr) and for the value's repr
    max_processes: int       # RLIMIT_NPROC
    max_file_mb: int         # RLIMIT_FSIZE
    max_open_files: int      # RLIMIT_NOFILE
    max_scratch_mb: int = 0  # scratch the call may fill before it is killed; 0: not watched
    address_space_mb: int = 0  # RLIMIT_AS on top of the warm interpreter where it is not memory_mb (0): for
                               # runtimes that reserve far more than they use (the JVM, V8, Go), whose
                               # memory the slot's cgroup caps at memory_mb instead


def reply_frame_bytes(limits: CallLimits) -> int:
    """The most bytes a zygote's answer to a call under limits may take on the wire, past
    which the host stops reading it: stdout, stderr and the value up to max_output_bytes
    each, the program's reported end up to 16 times that (the zygote's own cap), every
    byte of them at most 12 in JSON (an astral character's escapes), files fetched back up
    to max_file_mb in base64, and a megabyte for the rest."""
    return 12 * 19 * limits.max_output_bytes + 2 * (limits.max_file_mb << 20) + (1 << 20)


@dataclass(frozen=True)
class KeptFile:
    """A file a zygote may keep between calls (a compiled program, run case after case):
    its bytes go to a zygote once, and later calls there name it by key."""

    key: str     # names the bytes and whose they are (a digest of both: no caller's file is another's)
    data: bytes


@dataclass(frozen=True)
class StartAhead:
    """A process a zygote starts ahead of its next call, while it waits for it: a runtime
    whose start is most of a short run's time (the JVM). It reads a first line, then the
    call's stdin (sandbox/inside/ahead.py); a call whose request names the same process has
    its launcher hand it over, any other finds the zygote's child replaced by one without it.
    A request names what the call after it will want, as its own call does."""

    argv: tuple[str, ...]  # argv[0] an absolute path
    environment: tuple[tuple[str, str], ...] = ()  # besides the zygote's; {cwd}: the call's working directory
    directories: tuple[str, ...] = ()  # made in the working directory before it starts: a class path it
                                       # reads as it starts (the JVM's skips one that is not there), which
                                       # the call fills

    def wire(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "environment": dict(self.environment),
                "directories": list(self.directories)}


@dataclass(frozen=True)
class CallRequest:
    id: str
    code: str
    limits: CallLimits
    stdin: str = ""
    profile: str = ""  # the guard's import profile; "" where the zygote runs without a guard
    files: dict[str, bytes] = field(default_factory=dict)  # written into the working directory first
    kept_files: dict[str, KeptFile] = field(default_factory=dict)  # written there too, sent once a zygote
    fetch_files: tuple[str, ...] = ()  # read back from it after the code ran
    ahead: StartAhead | None = None  # the process its launcher takes over, started ahead for this call and
                                     # the next (its launcher's own program, started as this one is)

    def wire(self, held: Collection[str] = (), new: Collection[str] = (),
             forget: Sequence[str] = ()) -> dict[str, Any]:
        """The request frame's JSON object (file contents in base64) for a zygote that holds
        the kept files keyed in held, is to keep those keyed in new (their bytes go with
        this frame) and to forget those in forget first; a kept file in neither goes as
        one of files, and is not kept."""
        files = dict(self.files)
        kept, kept_data = {}, {}
        for path, file in self.kept_files.items():
            if file.key in held or file.key in new:
                kept[path] = file.key
                if file.key in new:
                    kept_data[file.key] = base64.b64encode(file.data).decode("ascii")
            else:
                files[path] = file.data
        return {"id": self.id, "code": self.code, "stdin": self.stdin, "profile": self.profile,
                "files": {path: base64.b64encode(data).decode("ascii") for path, data in files.items()},
                "kept": kept, "kept_data": kept_data, "forget": list(forget),
                "fetch_files": list(self.fetch_files), "ahead": self.ahead.wire() if self.ahead else None,
                **dataclasses.asdict(self.limits)}


@dataclass(frozen=True)
class SessionStart:
    """What OpenSession sends the session it hands over: the memory its code may add to
    what it holds (0: no cap of its own) and the guard of the caller's import profile
    (None: the session runs with none)."""

    memory_mb: int
    guard: dict[str, Any] | None

    def wire(self) -> dict[str, Any]:
        return {"memory_mb": self.memory_mb, "guard": self.guard}


@dataclass(frozen=True)
class CellRequest:
    """One call on a session: its code run as a cell of the session's `__main__`."""

    id: str            # a random token: the session's answer must carry it (no earlier frame can)
    code: str
    stdin: str
    value_chars: int   # the repr of the cell's last expression is cut here (its time is the host's
                       # to keep: past it the host interrupts the cell with SIGINT)
    display_bytes: int  # what the cell displayed, as JSON, is kept up to this many bytes

    def wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# What a session says on its control socket before its calls: made and waiting for its
# start, then serving (its answer to the start).
SESSION_STATES = ("waiting", "serving")


def session_state(frame: dict[str, Any]) -> str:
    """Which of SESSION_STATES a session's frame says; "" for none."""
    return next((state for state in SESSION_STATES if frame.get(state) is True), "")


@dataclass(frozen=True)
class Display:
    """One thing a session's cell displayed, as a notebook kernel's display_data or
    execute_result message carries it: its data by MIME type (the binary types' bytes,
    the rest as UTF-8 text) and its metadata as a JSON object's text."""

    kind: str
    data: dict[str, bytes]
    metadata: str = "{}"

    @classmethod
    def from_wire(cls, bundle: Any) -> Display:
        """A bundle of a session's answer (sandbox/inside/notebook.py); raises ValueError
        for one of another shape."""
        if not isinstance(bundle, dict) or bundle.get("kind") not in DISPLAY_KINDS:
            raise ValueError("a display is not a bundle of a known kind")
        data, metadata = bundle.get("data"), bundle.get("metadata", {})
        if not isinstance(data, dict) or not 0 < len(data) <= MAX_MIME_TYPES or not isinstance(metadata, dict):
            raise ValueError("a display's data is not a map of MIME types")
        decoded: dict[str, bytes] = {}
        for mime, text in data.items():
            if not isinstance(text, str) or len(mime) > MAX_MIME_NAME or "/" not in mime:
                raise ValueError("a display's data holds what is not a MIME type's text")
            decoded[mime] = base64.b64decode(text, validate=True) if mime in BINARY_TYPES else text.encode()
        return cls(str(bundle["kind"]), decoded, json.dumps(metadata))


def decoded_displays(displays: Any) -> list[Display]:
    """A result frame's displays; raises ValueError for more than MAX_DISPLAYS or one of
    another shape."""
    if displays is None:
        return []
    if not isinstance(displays, list) or len(displays) > MAX_DISPLAYS:
        raise ValueError("displays are not a list of bundles")
    return [Display.from_wire(bundle) for bundle in displays]


@dataclass
class CallReply:
    """How one call ended: the zygote's or the session's answer, or one the host makes in
    its place (a worker or a session lost). The scheduler adds the time it waited."""

    id: str                 # the request's; "" where the host makes the answer
    outcome: str            # OK, ERROR, TIMEOUT, MEMORY_LIMIT, OUTPUT_LIMIT, DENIED, CRASHED, INVALID, or REROUTE
                            # (a slim zygote hands the call back; error names the module)
    stdout: str = ""
    stderr: str = ""
    value: str = ""         # the repr of the program's last bare expression
    error: str = ""
    exit_code: int = 0
    truncated: bool = False  # output, the value or a fetched file left out for a cap
    elapsed_us: int = 0
    queued_us: int = 0      # waiting for a worker; the host's own, never on the wire
    files: dict[str, bytes] = field(default_factory=dict)  # the request's fetch_files that were found
    needs: str = ""         # REROUTE: the module the call reached for, which its worker does not offer
    displays: list[Display] = field(default_factory=list)  # what a session's cell displayed

    @classmethod
    def from_wire(cls, frame: dict[str, Any]) -> CallReply:
        """The reply of a result frame's JSON object (an INVALID one carries id, outcome and
        error only). Each value is read as the type it must have, and files that are not
        base64 as none; a number that is none raises ValueError or TypeError."""
        return cls(id=str(frame.get("id", "")), outcome=str(frame.get("outcome", "")),
                   stdout=str(frame.get("stdout", "")), stderr=str(frame.get("stderr", "")),
                   value=str(frame.get("value", "")), error=str(frame.get("error", "")),
                   exit_code=int(frame.get("exit_code", 0)), truncated=bool(frame.get("truncated", False)),
                   elapsed_us=int(frame.get("elapsed_us", 0)), files=decoded_files(frame.get("files")),
                   needs=str(frame.get("needs", "")), displays=decoded_displays(frame.get("displays")))

    def note_oom_kills(self, killed: int, error: str) -> None:
        """A call during which the OOM killer ended processes (killed of them) hit its
        memory limit, whatever they reported afterwards: a crash, an error, or a program that
        went on without the processes it lost becomes MEMORY_LIMIT with error (what it printed
        and returned is kept). A time-out, an output limit or a denial stays what it was."""
        if killed > 0 and self.outcome in ("OK", "CRASHED", "ERROR"):
            self.outcome = "MEMORY_LIMIT"
            self.error = error


def decoded_files(files: Any) -> dict[str, bytes]:
    """A result frame's files (base64 by name); none where they are not that."""
    if not isinstance(files, dict):
        return {}
    try:
        return {str(name): base64.b64decode(text, validate=True) for name, text in files.items()}
    except (TypeError, ValueError):
        return {}


def working_path(name: str) -> str:
    """name as a normalized path inside the call's working directory; ValueError for an
    absolute path, one that leaves the directory, or one that names the directory itself."""
    if not name or "\0" in name:
        raise ValueError(f"file path {name!r} is empty or holds a NUL")
    if name.startswith("/"):
        raise ValueError(f"file path {name!r} is absolute: paths are relative to the working directory")
    path = posixpath.normpath(name)
    if path == "." or path == ".." or path.startswith("../"):
        raise ValueError(f"file path {name!r} leaves the working directory")
    return path
