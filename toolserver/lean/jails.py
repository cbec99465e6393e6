"""How a Lean REPL's jail starts: the server's sandbox spec (toolserver/jails.py) with
Lean's memory, process and file limits and start-up time."""

from __future__ import annotations

import dataclasses

from sandbox.worker import ZygoteSpec
from toolserver.lean.settings import LeanSettings


def repl_spec(sandbox: ZygoteSpec, lean: LeanSettings) -> ZygoteSpec:
    """A Lean REPL's: the sandbox's jail with Lean's memory, process and file limits."""
    jail = dataclasses.replace(sandbox.jail, memory_mb=lean.memory_mb, max_processes=lean.max_processes,
                               max_open_files=lean.max_open_files)
    return dataclasses.replace(sandbox, jail=jail, start_timeout_s=lean.start_timeout_s)
