"""The Lean 4 tool: proofs checked on pooled, jailed leanprover-community/repl processes.

`executor.LeanExecutor` is the entry point; `pool` holds the pool policy, `repl` one
REPL process, `header` the header/body split, `guard` the anti-cheat checks, `settings`
the [lean] settings, `rules` a caller's headers and time and `jails` a REPL's
spec. The executor loads when a server builds the tool.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.lean.rules import LeanRules
from toolserver.lean.settings import LeanSettings
from toolserver.registry import BuildContext, Tool, ToolPackage


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.lean.executor import build_lean

    return await build_lean(context, stack)


TOOL = ToolPackage(name="lean", build=build, sections={"lean": LeanSettings}, rules=LeanRules)
