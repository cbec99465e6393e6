"""The cpp tool: a CppCall and its Limits in, an ExecuteResponse out.

A call's source is compiled once (`compiler`: in the jail, with the compile's own limits,
cached by source and flags), then the binary runs once per test case, each run a fresh
jailed process on the tool's zygotes with the limits the request asked for (time,
memory, output: the same grant as a python call's), all cases at once as workers free
up, or in rounds of one per worker with stop_on_failure. Each case is judged
(`judge`) and answered in the order it finished. A compile that fails is the program's
fault: the call's Outcome is COMPILE_ERROR with the compiler's messages.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
from contextlib import AsyncExitStack

from sandbox.calls import CallLimits, CallRequest
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.cpp.compiler import COMPILER_OUTPUT_BYTES, Compiled, Compiler
from toolserver.cpp.gauges import watch_cpp
from toolserver.cpp.judge import case_result, passed
from toolserver.cpp.precompiled import precompiled_header
from toolserver.cpp.programs import BINARY_FILE, run_program
from toolserver.cpp.schema import cpp_call_from_json, cpp_tool_spec
from toolserver.cpp.settings import CppSettings
from toolserver.errors import InvalidRequest, ToolUnavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import BuildContext
from toolserver.text import valid_text
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.tool import NoPool, PooledTool, start_tool_pool

log = logging.getLogger(__name__)
COMPILE_FAULTS = ("ERROR", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT")  # a compile that ends so is the program's fault


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
        cpp = self.settings.section(CppSettings)
        if not call.source.strip():
            raise InvalidRequest("source is empty")
        if len(call.source.encode("utf-8", errors="surrogateescape")) > cpp.max_source_kb << 10:
            raise InvalidRequest(f"source is longer than cpp.max_source_kb ({cpp.max_source_kb} KiB)")
        if len(call.cases) > cpp.max_cases:
            raise InvalidRequest(f"{len(call.cases)} cases; cpp.max_cases is {cpp.max_cases}")
        if call.cases and call.stdin:
            raise InvalidRequest("stdin is the input of the one run without cases: give each case its stdin")

    async def run(self, call: pb.CppCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        granted = self.grant(limits, caller)
        self.check(call)
        if self.pool is None or self.compiler is None:
            raise ToolUnavailable(f"the cpp tool is not available: {self.reason}")
        cpp = self.settings.section(CppSettings)
        timeout_ms = min(call.compile_timeout_ms or cpp.compile_timeout_ms, cpp.max_compile_timeout_ms)
        compiled = await self.compiler.compile(call.source, timeout_ms, request_id, caller.name)
        if not compiled.ok:
            return compile_failed(request_id, compiled)
        cases = list(call.cases) or [pb.CppCase(stdin=call.stdin)]
        results, queued_us = await self.run_cases(cases, compiled.binary, granted, call, request_id)
        return judged(request_id, compiled, results, queued_us)

    async def run_cases(self, cases: list[pb.CppCase], binary: bytes, limits: CallLimits, call: pb.CppCall,
                        request_id: str) -> tuple[list[pb.CppCaseResult], int]:
        """Each case's result in the order it finished, and the time the runs waited."""
        assert self.pool is not None
        program = run_program(limits.memory_mb)
        results: list[pb.CppCaseResult] = []
        queued_us = 0
        step = len(self.pool.slots) if call.stop_on_failure else len(cases)
        for start in range(0, len(cases), step):
            indexes = range(start, min(start + step, len(cases)))
            runs = [asyncio.ensure_future(self.pool.run(CallRequest(f"{request_id}/{index}", program, limits,
                                                                    stdin=cases[index].stdin,
                                                                    files={BINARY_FILE: binary})))
                    for index in indexes]
            index_of = dict(zip(runs, indexes))
            try:
                pending = set(runs)
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for run in sorted(done, key=index_of.__getitem__):
                        reply = run.result()
                        queued_us += reply.queued_us
                        results.append(case_result(index_of[run], cases[index_of[run]], reply, call.compare))
            finally:
                for run in runs:
                    run.cancel()
            if call.stop_on_failure and not all(passed(result.verdict) for result in results):
                results += [pb.CppCaseResult(index=index, verdict=pb.SKIPPED)
                            for index in range(indexes.stop, len(cases))]
                break
        return results, queued_us


def compile_result(compiled: Compiled) -> pb.CppCompile:
    return pb.CppCompile(ok=compiled.ok, cached=compiled.cached, stderr=valid_text(compiled.messages),
                         exit_code=compiled.exit_code, elapsed_us=max(0, compiled.elapsed_us),
                         outcome=pb.Outcome.Value(compiled.outcome) if compiled.outcome in pb.Outcome.keys()
                         else pb.CRASHED)


def compile_failed(request_id: str, compiled: Compiled) -> pb.ExecuteResponse:
    """The answer to a call whose program did not compile (or whose compile's sandbox failed)."""
    outcome = pb.COMPILE_ERROR if compiled.outcome in COMPILE_FAULTS else pb.CRASHED
    error = compiled.error if compiled.outcome == "ERROR" else f"compile: {compiled.error}"
    return pb.ExecuteResponse(request_id=request_id, outcome=outcome, stderr=valid_text(compiled.messages),
                              error=valid_text(error), elapsed_us=max(0, compiled.elapsed_us),
                              queued_us=max(0, compiled.queued_us), cpp=pb.CppResult(compile=compile_result(compiled)))


def judged(request_id: str, compiled: Compiled, results: list[pb.CppCaseResult], queued_us: int
           ) -> pb.ExecuteResponse:
    """The answer to a call whose cases ran: OK unless a run did not end well (the first
    such case's outcome, in case order); the streams are the run's when there was one."""
    ordered = sorted(results, key=lambda result: result.index)
    faults = [result for result in ordered if result.outcome not in (pb.OK, pb.OUTCOME_UNSPECIFIED)]
    response = pb.ExecuteResponse(
        request_id=request_id,
        outcome=faults[0].outcome if faults else pb.OK,
        error=f"case {faults[0].index}: {faults[0].error}" if faults else "",
        truncated=any(result.truncated for result in results),
        elapsed_us=max(0, compiled.elapsed_us) + sum(result.elapsed_us for result in results),
        queued_us=max(0, compiled.queued_us) + queued_us,
        cpp=pb.CppResult(compile=compile_result(compiled), cases=results,
                         passed=sum(passed(result.verdict) for result in results)))
    if len(results) == 1:
        response.stdout, response.stderr = results[0].stdout, results[0].stderr
    return response


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
    try:
        pool = await start_tool_pool("cpp", context, slots, stack, runtime=cpp.runtime(),
                                     max_queue=cpp.max_queue, grace_s=cpp.worker_grace_s,
                                     recycle_after=cpp.recycle_after)
    except NoPool as exc:
        return CppExecutor(settings, None, None, name, str(exc))
    caps = settings.limits
    compile_limits = CallLimits(timeout_ms=cpp.compile_timeout_ms, memory_mb=cpp.compile_memory_mb,
                                max_output_bytes=COMPILER_OUTPUT_BYTES, max_processes=caps.max_processes,
                                max_file_mb=caps.max_file_mb, max_open_files=caps.max_open_files,
                                max_scratch_mb=caps.max_scratch_mb)
    command = cpp.command()
    if cpp.precompiled_header:
        directory = await asyncio.get_running_loop().run_in_executor(None, precompiled_header, command,
                                                                     cpp.precompiled_dir)
        command += ["-I", directory] if directory else []
    executor = CppExecutor(settings, pool, Compiler(command, pool, compile_limits, cpp.cache_mb << 20), name)
    watch_cpp(context.metrics, executor)
    log.info("cpp: %s, %d workers", name, len(slots))
    return executor
