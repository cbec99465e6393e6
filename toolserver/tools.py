"""The tools this server serves: one line per tool, and the registry built from them.

A new tool is its own package implementing `toolserver.registry.Tool` with a builder,
a message of its own in ExecuteRequest's `call` oneof, and one line in `BUILDERS`.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.lean.executor import build_lean
from toolserver.python.executor import build_python
from toolserver.registry import BuildContext, ToolBuilder, ToolRegistry
from toolserver.search.executor import build_search

# In the order their slots are handed out: Lean REPLs take what python leaves.
BUILDERS: tuple[ToolBuilder, ...] = (
    build_python,
    build_search,
    build_lean,
)


async def build_tools(context: BuildContext, stack: AsyncExitStack) -> ToolRegistry:
    """Every tool, built and started; stack closes them in the reverse order."""
    tools = []
    for build in BUILDERS:
        tool = await build(context, stack)
        if tool is not None:
            tools.append(tool)
    return ToolRegistry(tools)
