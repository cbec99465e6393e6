"""The tools this server serves: one line per tool, and what the shared modules get of them.

A new tool is its own package that declares a `toolserver.registry.ToolPackage` (its
builder, settings sections, callers' rules, answer text), a message of its own in
ExecuteRequest's `call` oneof, and one line in `TOOLS`.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver import bash, cpp, lean, program, python, search
from toolserver.registry import BuildContext, ToolPackage, ToolRegistry

# In the order their slots are handed out: Lean REPLs, C++, bash and program workers take what python leaves.
TOOLS: tuple[ToolPackage, ...] = (
    python.TOOL,
    search.TOOL,
    lean.TOOL,
    cpp.TOOL,
    bash.TOOL,
    program.TOOL,
)

# The tools' settings sections, by table name, and their callers' rules, by tool.
SECTIONS: dict[str, type] = {name: kind for tool in TOOLS for name, kind in tool.sections.items()}
RULES: tuple[tuple[str, type], ...] = tuple((tool.name, tool.rules) for tool in TOOLS if tool.rules is not None)


async def build_tools(context: BuildContext, stack: AsyncExitStack) -> ToolRegistry:
    """Every tool, built and started; stack closes them in the reverse order."""
    tools = []
    for package in TOOLS:
        tool = await package.build(context, stack)
        if tool is not None:
            tools.append(tool)
    return ToolRegistry(tools)
