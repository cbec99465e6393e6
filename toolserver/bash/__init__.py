"""The bash tool: shell scripts for agents that need a shell, run in the jail on the
tool's own warm zygotes.

`executor.BashExecutor` is the entry point; `settings` holds [bash]. The executor loads
when a server builds the tool.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.bash.settings import BashSettings
from toolserver.registry import BuildContext, Tool, ToolPackage


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.bash.executor import build_bash

    return await build_bash(context, stack)


TOOL = ToolPackage(name="bash", build=build, sections={"bash": BashSettings})
