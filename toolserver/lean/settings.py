"""Settings of the Lean tool ([lean] in the server's TOML): where the toolchain is, how
large the REPL pool is, and its limits.

Only the values and their checks live here; finding the toolchain and running REPLs is
the executor's and the pool's job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from toolserver.config import SlotClaim, ToolSection, require_positive
from toolserver.errors import ConfigError
from toolserver.lean.header import HeaderError, parse_header


@dataclass(frozen=True)
class LeanSettings(ToolSection):
    enabled: bool = True                 # off: the tool is listed as unavailable and calls are refused
    repl: str = ""                       # the leanprover-community/repl binary; empty: `repl` on PATH
    lake: str = ""                       # lake, to read the project's LEAN_PATH; empty: `lake` on PATH
    project_dir: str = ""                # a Lake project with Mathlib built; empty: core Lean only
    env: tuple[str, ...] = ()            # extra KEY=VALUE for the REPLs (the jail starts from nothing)
    max_repls: int = 2                   # REPL processes at most; each needs its own sandbox slot
    memory_mb: int = 16_384              # address space per REPL (--rlimit-as); Mathlib maps ~5 GB of .olean
    max_processes: int = 256             # --rlimit-nproc per REPL uid: Lean runs a thread per core and tasks
    max_open_files: int = 16_384         # --rlimit-nofile per REPL: Mathlib is ~7000 .olean files
    start_timeout_s: float = 300.0       # starting a REPL and elaborating its header (Mathlib: tens of s)
    default_timeout_ms: int = 60_000     # a call's wall time when the request leaves it at 0
    max_timeout_ms: int = 300_000        # the most a call may ask for
    idle_evict_s: float = 900.0          # REPLs unused this long are closed (pre-warmed headers keep one)
    recycle_after: int = 500             # a REPL is replaced after this many proofs (each keeps an env); 0: never
    prewarm_headers: tuple[str, ...] = ()  # headers started at start-up, e.g. "import Mathlib"
    allowed_headers: tuple[str, ...] = ()  # headers any caller may use (normalised); empty: any
    max_queue: int = 256                 # calls waiting for a REPL; past it RESOURCE_EXHAUSTED at once
    max_code_chars: int = 200_000        # longer code is a request error
    max_messages: int = 200              # messages beyond this are dropped (the response says truncated)
    max_message_chars: int = 8_000       # a message's text is cut here (the response says truncated)

    def slots(self) -> SlotClaim:
        """REPLs run on the slots the python tool leaves."""
        return SlotClaim(wanted=self.max_repls if self.enabled else 0)

    def validate(self) -> None:
        require_positive("lean", self, ("max_queue", "max_repls", "memory_mb", "max_processes", "max_open_files",
                                        "default_timeout_ms", "max_timeout_ms", "max_code_chars", "max_messages",
                                        "max_message_chars", "start_timeout_s", "idle_evict_s"))
        if self.recycle_after < 0:
            raise ConfigError(f"lean.recycle_after must not be negative, got {self.recycle_after}")
        if self.default_timeout_ms > self.max_timeout_ms:
            raise ConfigError(f"lean.default_timeout_ms ({self.default_timeout_ms}) exceeds lean.max_timeout_ms "
                              f"({self.max_timeout_ms})")
        if self.project_dir and not os.path.isabs(self.project_dir):
            raise ConfigError(f"lean.project_dir must be an absolute path, got {self.project_dir!r}")
        for entry in self.env:
            name, sep, _ = entry.partition("=")
            if not sep or not name.isidentifier():
                raise ConfigError(f"lean.env entries must be KEY=VALUE, got {entry!r}")
        for field in ("prewarm_headers", "allowed_headers"):
            for header in getattr(self, field):
                try:
                    parse_header(header)
                except HeaderError as exc:
                    raise ConfigError(f"lean.{field}: {header!r}: {exc}") from exc
        prewarm = {parse_header(h).key for h in self.prewarm_headers}
        if len(prewarm) > self.max_repls:
            raise ConfigError(f"lean.prewarm_headers has {len(prewarm)} headers but lean.max_repls is "
                              f"{self.max_repls}")
        if self.allowed_headers:
            allowed = {parse_header(h).key for h in self.allowed_headers}
            for header in self.prewarm_headers:
                if parse_header(header).key not in allowed:
                    raise ConfigError(f"lean.prewarm_headers: {header!r} is not among lean.allowed_headers")

    def environment(self) -> dict[str, str]:
        """lean.env as a mapping."""
        return dict(entry.split("=", 1) for entry in self.env)
