"""The cpp tool: a CppCall and its Limits in, an ExecuteResponse out.

A call's source is compiled once (`toolserver.judging.compiler`: in the jail, with the
compile's own limits, cached by source and flags), then the binary runs once per test
case (`toolserver.judging.cases`: each run a fresh jailed process on the tool's zygotes,
judged as a competitive-programming judge judges it).
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
from contextlib import AsyncExitStack

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.cpp.gauges import watch_cpp
from toolserver.cpp.precompiled import precompiled_header
from toolserver.cpp.programs import BINARY_FILE, compile_step, run_program
from toolserver.cpp.schema import cpp_call_from_json, cpp_tool_spec
from toolserver.cpp.settings import CppSettings
from toolserver.errors import ToolUnavailable
from toolserver.judging.cases import Run, check_call, compile_failed, judged, run_cases
from toolserver.judging.compiler import Compiler, compile_limits, compile_timeout_ms
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import BuildContext
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.tool import NoPool, PooledTool, start_tool_pool

log = logging.getLogger(__name__)


class CppExecutor(PooledTool):
    name = "cpp"

    def __init__(self, settings: CoreSettings, pool: WorkerPool | None, compiler: Compiler | None,
                 compiler_name: str = "", reason: str = "") -> None:
        """pool and compiler None: calls are refused for reason."""
        super().__init__(settings, pool, reason)
        self.compiler = compiler
        self.compiler_name = compiler_name or settings.section(CppSettings).compiler

    def status(self) -> str:
        if self.pool is None or self.compiler is None:
            return self.reason
        return (f"ready: {self.compiler_name}; {self.pool_status()}; {self.compiler.compiles} compiles, "
                f"{self.compiler.cache.hits} cached")

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        return cpp_tool_spec(self.settings.section(CppSettings), self.compiler_name)

    @staticmethod
    def call_from_json(arguments: str) -> pb.CppCall:
        return cpp_call_from_json(arguments)

    def check(self, call: pb.CppCall) -> None:
        section = self.settings.section(CppSettings)
        check_call(call, "cpp", section.max_source_kb, section.max_cases)

    async def run(self, call: pb.CppCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        granted = self.grant(limits, caller)
        self.check(call)
        if self.pool is None or self.compiler is None:
            raise ToolUnavailable(f"the cpp tool is not available: {self.reason}")
        cpp = self.settings.section(CppSettings)
        timeout_ms = compile_timeout_ms(call.compile_timeout_ms, cpp.compile_timeout_ms, cpp.max_compile_timeout_ms)
        compiled = await self.compiler.compile(call.source, timeout_ms, request_id, caller.name)
        if not compiled.ok:
            return compile_failed(request_id, compiled, "cpp")
        cases = list(call.cases) or [pb.CppCase(stdin=call.stdin)]
        run = Run(run_program(granted.memory_mb), kept_files={BINARY_FILE: compiled.kept()})
        results, queued_us = await run_cases(self.pool, run, cases, granted, call.compare, call.stop_on_failure,
                                             request_id)
        return judged(request_id, compiled, results, queued_us, "cpp")


def compiler_version(command: str) -> str:
    """The compiler's name and version ("g++ 12.2.0"), or "" when it does not run."""
    try:
        found = subprocess.run([command, "-dumpfullversion"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{command.rsplit('/', 1)[-1]} {found.stdout.strip()}" if found.returncode == 0 else ""


async def build_cpp(context: BuildContext, stack: AsyncExitStack) -> CppExecutor:
    """The cpp tool on the slots the tools before it leave, started once the sandbox is
    proven and the compiler runs (else it serves nothing and says why)."""
    settings = context.settings
    cpp = settings.section(CppSettings)
    slots = context.slots.take(cpp.slots().wanted)
    if not cpp.enabled:
        return CppExecutor(settings, None, None, reason="off by config ([cpp] enabled = false)")
    name = await asyncio.get_running_loop().run_in_executor(None, compiler_version, cpp.compiler)
    if not name:
        return CppExecutor(settings, None, None, reason=f"compiler {cpp.compiler} does not run: install g++ "
                                                        "(scripts/setup.sh does) or set [cpp] compiler")
    command = cpp.command()
    if cpp.precompiled_header:  # before the workers start: their jails show only the files there are then
        directory = await asyncio.get_running_loop().run_in_executor(None, precompiled_header, command,
                                                                     cpp.precompiled_dir)
        command += ["-I", directory] if directory else []
    try:
        pool = await start_tool_pool("cpp", context, slots, stack, runtime=cpp.runtime(),
                                     max_queue=cpp.max_queue, grace_s=cpp.worker_grace_s,
                                     recycle_after=cpp.recycle_after, kept_files_mb=cpp.kept_mb)
    except NoPool as exc:
        return CppExecutor(settings, None, None, name, str(exc))
    limits = compile_limits(cpp.compile_timeout_ms, cpp.compile_memory_mb, settings.limits)
    executor = CppExecutor(settings, pool, Compiler(compile_step(command), pool, limits, cpp.cache_mb << 20), name)
    watch_cpp(context.metrics, executor)
    log.info("cpp: %s, %d workers", name, len(slots))
    return executor
