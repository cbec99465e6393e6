"""How the cpp tool's zygotes start: the server's sandbox spec (toolserver/jails.py) as
it is, with no preload and no Python-level guard: a call's process only execs the
compiler or the program, and the jail (its seccomp layer, the slot's user, scratch and
memory cgroup, the call's rlimits) is the boundary, as for a Lean REPL."""

from __future__ import annotations

from sandbox.worker import ZygoteSpec
from toolserver.config import CoreSettings
from toolserver.jails import sandbox_spec


def cpp_spec(settings: CoreSettings) -> ZygoteSpec:
    return sandbox_spec(settings)
