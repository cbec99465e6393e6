"""One call as the host sends it to a zygote: its code, input, import profile and limits.

The host side (the python tool, the pool, the worker) and the self-test build and read
`CallRequest`s; only `wire` turns one into the JSON object the zygote reads. The zygote
runs inside the jail as source of its own and keeps the same keys in `REQUEST_KEYS`
(`tests/unit/test_zygote.py` checks that the two agree).
"""

from __future__ import annotations

import base64
import dataclasses
import posixpath
from dataclasses import dataclass, field
from typing import Any


# The call's code is written to this file in its working directory and run as
# `python3 main.py` would run it (sandbox/zygote.py keeps the same name).
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


@dataclass(frozen=True)
class CallRequest:
    id: str
    code: str
    limits: CallLimits
    stdin: str = ""
    profile: str = ""  # the guard's import profile; "" where the zygote runs without a guard
    files: dict[str, bytes] = field(default_factory=dict)  # written into the working directory first
    fetch_files: tuple[str, ...] = ()  # read back from it after the code ran

    def wire(self) -> dict[str, Any]:
        """The request frame's JSON object (file contents in base64)."""
        return {"id": self.id, "code": self.code, "stdin": self.stdin, "profile": self.profile,
                "files": {path: base64.b64encode(data).decode("ascii") for path, data in self.files.items()},
                "fetch_files": list(self.fetch_files), **dataclasses.asdict(self.limits)}


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
