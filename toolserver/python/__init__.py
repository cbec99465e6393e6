"""The python tool: jailed warm zygotes for stateless calls, processes forked into jails made ahead for sessions.

`executor.PythonExecutor` is the entry point; `settings` holds [python] and [sessions],
`rules` a caller's python keys, `jails` its processes' specs and `gauges` its metrics.
The executor loads when a server builds the tool, so that reading the settings loads no
pool.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolserver.python.rules import PythonRules
from toolserver.python.settings import PythonSettings, SessionSettings
from toolserver.registry import BuildContext, Tool, ToolPackage


async def build(context: BuildContext, stack: AsyncExitStack) -> Tool | None:
    from toolserver.python.executor import build_python

    return await build_python(context, stack)


TOOL = ToolPackage(name="python", build=build, sections={"python": PythonSettings, "sessions": SessionSettings},
                   rules=PythonRules)
