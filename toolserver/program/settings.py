"""Settings of the program tool ([program] in the server's TOML): which languages it
serves and where their files are, its workers, the caps of one call.

A language's own facts (toolchain, command lines, allowances) are its file's
(`toolserver/program/languages/*.toml`, or one of `languages_dir`); only the values and
their checks live here.
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
from toolserver.program.languages import load_languages


@dataclass(frozen=True)
class ProgramSettings(ToolSection):
    enabled: bool = True                 # off: the tool is listed as unavailable and calls are refused
    languages: tuple[str, ...] = ()      # the languages served, by name; empty: every one described
    languages_dir: str = ""              # a directory of more language files (*.toml, read after the
                                         # tool's own; one of the same name replaces the tool's)
    workers: int = 0                     # jailed zygotes that compile and run; 0: one per CPU, at least 2
    interpreter: str = RUNTIME_INTERPRETER  # what those zygotes run on: a Python that forks each
                                         # compile's and run's process, which runs the compiler or
                                         # execs the program (no Python code of a call runs on it)
    max_compile_timeout_ms: int = 60_000  # the most a call may ask for a compile
    cache_mb: int = 256                  # compiled programs kept by language, source and caller, least
                                         # recently used dropped first
    kept_mb: int = 32                    # compiled programs each worker keeps, least recently used
                                         # dropped first: a program's next case there is sent by name,
                                         # not its bytes (0: every run is sent its program)
    ahead: bool = True                   # start a language's [ahead] process (the JVM) ahead of each run,
                                         # while its worker waits (off: every run starts its own)
    ahead_dir: str = "/var/lib/toolserver/program"  # where those processes' files are built at start-up:
                                         # readable inside the jail
    max_source_kb: int = 512             # longer sources are a request error
    max_cases: int = 1024                # test cases in one call
    max_queue: int = 4096                # compiles and runs waiting for a worker; past it RESOURCE_EXHAUSTED
    worker_grace_s: float = 5.0          # a worker that overruns a run's timeout by this is hung
    recycle_after: int = 20_000          # runs before a worker is replaced by a fresh one

    def worker_count(self) -> int:
        return self.workers or max(2, available_cpus())

    def slots(self) -> SlotClaim:
        """Its workers run on the slots the tools before it leave."""
        return SlotClaim(wanted=self.worker_count() if self.enabled else 0)

    def jail_paths(self) -> tuple[str, ...]:
        """Its zygotes' interpreter, the files built for the jail at start-up and the npm
        packages of its languages (TypeScript's compiler)."""
        prefixes = tuple(language.npm_prefix for language in load_languages(self.languages_dir).values()
                         if language.npm_prefix)
        return (*interpreter_paths(self.interpreter), self.ahead_dir, *prefixes)

    def runtime(self) -> Runtime:
        return Runtime(interpreter=self.interpreter)

    def validate(self) -> None:
        require_positive("program", self, ("max_compile_timeout_ms", "cache_mb", "max_source_kb", "max_cases",
                                           "max_queue", "worker_grace_s", "recycle_after"))
        if self.workers < 0 or self.kept_mb < 0:
            raise ConfigError("program.workers and program.kept_mb must not be negative")
        if not os.path.isabs(self.ahead_dir) or hidden_by_the_jail(self.ahead_dir):
            raise ConfigError(f"program.ahead_dir must be an absolute path outside /root and /tmp (the jail hides "
                              f"both), got {self.ahead_dir!r}")
        if self.languages_dir and not os.path.isabs(self.languages_dir):
            raise ConfigError(f"program.languages_dir must be an absolute path, got {self.languages_dir!r}")
        if len(set(self.languages)) != len(self.languages):
            raise ConfigError("program.languages names a language twice")
        described = load_languages(self.languages_dir)
        unknown = [name for name in self.languages if name not in described]
        if unknown:
            raise ConfigError(f"program.languages names {', '.join(unknown)}, which no language file describes "
                              f"(described: {', '.join(sorted(described))})")

    def validate_with(self, settings: CoreSettings) -> None:
        check_interpreter("program.interpreter", self.interpreter, settings)
