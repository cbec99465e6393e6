"""Settings of the bash tool ([bash] in the server's TOML): the shell and its workers.

Only the values and their checks live here; running scripts is the executor's job.
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
    require_positive,
)
from toolserver.errors import ConfigError
from toolserver.jails import Runtime


@dataclass(frozen=True)
class BashSettings(ToolSection):
    enabled: bool = True                 # off: the tool is listed as unavailable and calls are refused
    shell: str = "/bin/bash"             # Debian's bash; visible inside the jail
    workers: int = 1                     # jailed zygotes that run scripts (a script's own programs
                                         # run in its process tree, capped with it)
    interpreter: str = RUNTIME_INTERPRETER  # what those zygotes run on: a Python that forks each
                                         # script's process, which execs the shell
    max_script_kb: int = 256             # longer scripts are a request error
    max_queue: int = 1024                # scripts waiting for a worker; past it RESOURCE_EXHAUSTED
    worker_grace_s: float = 5.0          # a worker that overruns a script's timeout by this is hung
    recycle_after: int = 20_000          # scripts before a worker is replaced by a fresh one

    def slots(self) -> SlotClaim:
        """Its workers run on the slots the tools before it leave."""
        return SlotClaim(wanted=self.workers if self.enabled else 0)

    def jail_paths(self) -> tuple[str, ...]:
        """The interpreter its zygotes start on."""
        return interpreter_paths(self.interpreter)

    def runtime(self) -> Runtime:
        return Runtime(interpreter=self.interpreter)

    def validate(self) -> None:
        require_positive("bash", self, ("workers", "max_script_kb", "max_queue", "worker_grace_s", "recycle_after"))
        if not os.path.isabs(self.shell):
            raise ConfigError(f"bash.shell must be an absolute path (the jail has no PATH), got {self.shell!r}")

    def validate_with(self, settings: CoreSettings) -> None:
        check_interpreter("bash.interpreter", self.interpreter, settings)
