"""The program tool: programs in the languages code-RL data uses beside Python and C++
(Java, Go, Rust, JavaScript, TypeScript, ...), each language a file of data, compiled
once where it compiles and judged against test cases as C++ is, on the tool's own warm
zygotes in the same jail.

`executor.ProgramExecutor` is the entry point; `settings` holds [program] (its workers,
which languages it serves, where more of them are described), `languages` reads a
language's file (`languages/*.toml`: its toolchain's packages, source file, compile and
run command lines, version probe, compile and memory allowances), `launchers` makes the
programs a compile's and a run's jailed process run from it, `schema` the tool as
callers see it. The executor loads when a server builds the tool.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.program.settings import ProgramSettings
from toolserver.registry import BuildContext, Tool, ToolPackage


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.program.executor import build_program

    return await build_program(context, stack)


TOOL = ToolPackage(name="program", build=build, sections={"program": ProgramSettings})
