"""The cpp tool: C++ programs compiled once and judged against test cases, each run in
the jail on the tool's own warm zygotes.

`executor.CppExecutor` is the entry point; `settings` holds [cpp] (the pinned compiler
and flags), `precompiled` its precompiled header, `programs` the launchers a call's
process execs through, `schema` the tool as callers see it and `gauges` its metrics; the
compile and its cache, the cases and a case's verdict are `toolserver.judging`'s, which
the program tool shares. Its zygotes run on the sandbox's own spec, with no preload and no
Python-level guard (`toolserver.zygotes.tool`): a call's process only execs the compiler
or the program, and the jail is the boundary. The executor loads when a server builds
the tool.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.cpp.settings import CppSettings
from toolserver.registry import BuildContext, Tool, ToolPackage


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.cpp.executor import build_cpp

    return await build_cpp(context, stack)


TOOL = ToolPackage(name="cpp", build=build, sections={"cpp": CppSettings})
