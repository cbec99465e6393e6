"""Settings of the cpp tool ([cpp] in the server's TOML): the pinned compiler and flags,
its workers, the compile's own limits and cache, and the caps of one call.

Only the values and their checks live here; compiling and running is the executor's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sandbox.root import interpreter_paths
from toolserver.config import (
    RUNTIME_INTERPRETER,
    CoreSettings,
    SlotClaim,
    ToolSection,
    check_interpreter,
    hidden_by_the_jail,
    require_positive,
)
from toolserver.cpus import available_cpus
from toolserver.errors import ConfigError
from toolserver.jails import Runtime


@dataclass(frozen=True)
class CppSettings(ToolSection):
    enabled: bool = True                 # off: the tool is listed as unavailable and calls are refused
    compiler: str = "/usr/bin/g++"       # Debian's GCC (package g++); visible inside the jail
    std: str = "c++17"                   # -std=, pinned: the dialect most judges and datasets use
    flags: tuple[str, ...] = ("-O2", "-pipe", "-DONLINE_JUDGE")  # after -std; -lm is g++'s own
    precompiled_header: bool = True      # precompile bits/stdc++.h once (compiles that include it
                                         # take 0.25 s instead of 1.3 s); toolserver/cpp/precompiled.py
    precompiled_dir: str = "/var/lib/toolserver/cpp"  # where it is kept: readable inside the jail
    workers: int = 0                     # jailed zygotes that compile and run; 0: one per CPU, at least 2
    interpreter: str = RUNTIME_INTERPRETER  # what those zygotes run on: a Python that forks each
                                         # compile's and run's process, which execs the compiler or
                                         # the program (no Python code of a call runs on it)
    compile_timeout_ms: int = 10_000     # a compile's wall time when the call leaves it at 0
    max_compile_timeout_ms: int = 30_000  # the most a call may ask for
    compile_memory_mb: int = 2048        # the compiler's processes together (cc1plus on a big
                                         # template header maps ~300 MB)
    cache_mb: int = 256                  # binaries kept by source and flags, least recently used
                                         # dropped first: the same program compiles once
    kept_mb: int = 32                    # compiled programs each worker keeps, least recently used
                                         # dropped first: a program's next case there is sent by name,
                                         # not its bytes (0: every run is sent its program)
    max_source_kb: int = 512             # longer sources are a request error
    max_cases: int = 1024                # test cases in one call
    max_queue: int = 4096                # compiles and runs waiting for a worker; past it
                                         # RESOURCE_EXHAUSTED (a call of many cases queues them all)
    worker_grace_s: float = 5.0          # a worker that overruns a run's timeout by this is hung
    recycle_after: int = 20_000          # runs before a worker is replaced by a fresh one

    def worker_count(self) -> int:
        return self.workers or max(2, available_cpus())

    def slots(self) -> SlotClaim:
        """Its workers run on the slots the tools before it leave."""
        return SlotClaim(wanted=self.worker_count() if self.enabled else 0)

    def jail_paths(self) -> tuple[str, ...]:
        """The interpreter its zygotes start on and the precompiled header's directory."""
        return (*interpreter_paths(self.interpreter), self.precompiled_dir)

    def runtime(self) -> Runtime:
        return Runtime(interpreter=self.interpreter)

    def command(self) -> list[str]:
        """The compile's argv before its input and output: the compiler, -std and the flags."""
        return [self.compiler, f"-std={self.std}", *self.flags]

    def validate(self) -> None:
        require_positive("cpp", self, ("compile_timeout_ms", "max_compile_timeout_ms", "compile_memory_mb", "cache_mb",
                                       "max_source_kb", "max_cases", "max_queue", "worker_grace_s", "recycle_after"))
        if self.workers < 0 or self.kept_mb < 0:
            raise ConfigError("cpp.workers and cpp.kept_mb must not be negative")
        if self.compile_timeout_ms > self.max_compile_timeout_ms:
            raise ConfigError(f"cpp.compile_timeout_ms ({self.compile_timeout_ms}) exceeds "
                              f"cpp.max_compile_timeout_ms ({self.max_compile_timeout_ms})")
        if not os.path.isabs(self.precompiled_dir) or hidden_by_the_jail(self.precompiled_dir):
            raise ConfigError(f"cpp.precompiled_dir must be an absolute path outside /root and /tmp (the jail "
                              f"hides both), got {self.precompiled_dir!r}")
        if not os.path.isabs(self.compiler):
            raise ConfigError(f"cpp.compiler must be an absolute path (the jail has no PATH), got {self.compiler!r}")
        if not self.std.startswith(("c++", "gnu++")):
            raise ConfigError(f"cpp.std must be a C++ dialect (c++17, gnu++20, ...), got {self.std!r}")
        if any(not flag.startswith("-") or flag.startswith(("-o", "-x")) for flag in self.flags):
            raise ConfigError("cpp.flags are options (each starting with '-'; not -o or -x, which the tool sets)")

    def validate_with(self, settings: CoreSettings) -> None:
        check_interpreter("cpp.interpreter", self.interpreter, settings)
