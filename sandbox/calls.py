"""One call as the host sends it to a zygote: its code, input, import profile and limits.

The host side (the python tool, the pool, the worker) and the self-test build and read
`CallRequest`s; only `wire` turns one into the JSON object the zygote reads. The zygote
runs inside the jail as source of its own and keeps the same keys in `REQUEST_KEYS`
(`tests/unit/test_zygote.py` checks that the two agree).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


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

    def wire(self) -> dict[str, Any]:
        """The request frame's JSON object."""
        return {"id": self.id, "code": self.code, "stdin": self.stdin, "profile": self.profile,
                **dataclasses.asdict(self.limits)}
