"""The program tool: a ProgramCall and its Limits in, an ExecuteResponse out.

Each language is its file's data (`languages`), served by the same code: a call's source
is compiled once where its language compiles (`toolserver.judging.compiler`: in the jail,
with the language's compile allowances, cached by language, source and caller), then runs
once per test case (`toolserver.judging.cases`: each run a fresh jailed process on the
tool's zygotes, judged as C++'s are). All languages share the tool's workers: a worker
only runs a launcher that runs the compiler or execs the program. A language whose
toolchain does not run here, or that needs memory cgroups the server lacks, is listed
unavailable with the reason, and its calls are refused with it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass

from sandbox.calls import CallLimits
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.errors import InvalidRequest, ToolUnavailable
from toolserver.judging.cases import Run, check_call, compile_failed, judged, run_cases
from toolserver.judging.compiler import Compiler, compile_limits, compile_timeout_ms
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.program.ahead import build_ahead
from toolserver.program.languages import Language, hidden_toolchain, load_languages, toolchain_version
from toolserver.program.launchers import ARTIFACT, PRELOAD, compile_step, run_program, start_ahead
from toolserver.program.schema import program_call_from_json, program_tool_spec
from toolserver.program.settings import ProgramSettings
from toolserver.registry import BuildContext
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.tool import NoPool, PooledTool, no_slots, start_tool_pool

log = logging.getLogger(__name__)


@dataclass
class Served:
    """A language as this server serves it: its toolchain's version and its compiler, or
    why it is unavailable."""

    language: Language
    version: str = ""
    reason: str = ""
    compiler: Compiler | None = None
    ahead_dir: str = ""  # its [ahead] process's files, built; "": its runs start their own process

    @property
    def available(self) -> bool:
        return not self.reason


class ProgramExecutor(PooledTool):
    name = "program"

    def __init__(self, settings: CoreSettings, pool: WorkerPool | None, served: list[Served],
                 reason: str = "") -> None:
        """pool None: calls are refused for reason."""
        super().__init__(settings, pool, reason)
        self.served_languages = served
        self.by_name = {name: each for each in served for name in each.language.names}

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.by_name)

    def available_versions(self) -> dict[str, str]:
        return {served.language.name: served.version for served in self.served_languages if served.available}

    def status(self) -> str:
        if self.pool is None:
            return self.reason
        compilers = [served.compiler for served in self.served_languages if served.compiler is not None]
        ready = ", ".join(f"{name} ({version})" for name, version in self.available_versions().items()) or "none"
        unavailable = "; ".join(f"{served.language.name} unavailable: {served.reason}"
                                for served in self.served_languages if not served.available)
        ahead = ", ".join(served.language.name for served in self.served_languages if served.ahead_dir)
        return (f"ready: {ready}; {self.pool_status()}; {sum(each.compiles for each in compilers)} compiles, "
                f"{sum(each.cache.hits for each in compilers)} cached" + (f"; started ahead: {ahead}" if ahead else "")
                + (f"; {unavailable}" if unavailable else ""))

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        return program_tool_spec(self.available_versions())

    @staticmethod
    def call_from_json(arguments: str) -> pb.ProgramCall:
        return program_call_from_json(arguments)

    def served(self, name: str) -> Served:
        """The language a call names; InvalidRequest for one not described, ToolUnavailable
        for one not served here."""
        served = self.by_name.get(name)
        if served is None:
            known = ", ".join(sorted(self.by_name))
            raise InvalidRequest(f"unknown language {name!r}; the program tool knows {known}")
        if not served.available:
            raise ToolUnavailable(f"language {served.language.name} is not available: {served.reason}")
        return served

    def check(self, call: pb.ProgramCall) -> None:
        section = self.settings.section(ProgramSettings)
        check_call(call, "program", section.max_source_kb, section.max_cases)

    async def run(self, call: pb.ProgramCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        granted = self.grant(limits, caller)
        self.check(call)
        if self.pool is None:
            raise ToolUnavailable(f"the program tool is not available: {self.reason}")
        served = self.served(call.language)
        language = served.language
        if language.memory == "cgroup":
            granted = dataclasses.replace(granted, address_space_mb=language.address_space_mb)
        compiled = None
        if served.compiler is None:
            files, kept_files = {language.source_sent: call.source.encode("utf-8", errors="surrogateescape")}, {}
        else:
            timeout_ms = compile_timeout_ms(call.compile_timeout_ms, language.compile_timeout_ms,
                                            self.settings.section(ProgramSettings).max_compile_timeout_ms)
            compiled = await served.compiler.compile(call.source, timeout_ms, request_id, caller.name)
            if not compiled.ok:
                return compile_failed(request_id, compiled, "program")
            files, kept_files = {}, {ARTIFACT: compiled.kept()}
        run = Run(run_program(language, granted.memory_mb), files, kept_files, language.out_of_memory,
                  start_ahead(language, served.ahead_dir, granted.memory_mb) if served.ahead_dir else None)
        cases = list(call.cases) or [pb.CppCase(stdin=call.stdin)]
        results, queued_us = await run_cases(self.pool, run, cases, granted, call.compare, call.stop_on_failure,
                                             request_id)
        return judged(request_id, compiled, results, queued_us, "program")


def probe(language: Language, has_cgroups: bool) -> Served:
    """The language as this host can serve it (its compiler comes once the pool runs)."""
    hidden = hidden_toolchain(language)
    if hidden:
        return Served(language, reason=hidden)
    if language.memory == "cgroup" and not has_cgroups:
        return Served(language, reason="its runtime reserves more address space than it uses, so only the "
                                       "slots' memory cgroups cap it, and this server has none "
                                       "([sandbox] memory_cgroup)")
    version = toolchain_version(language.version)
    if not version:
        return Served(language, reason=f"{language.version[0]} does not run: install {language.installs()} "
                                       "(scripts/setup.sh does)")
    return Served(language, version=version)


def language_compile_limits(language: Language, settings: CoreSettings) -> CallLimits:
    return compile_limits(language.compile_timeout_ms, language.compile_memory_mb, settings.limits,
                          language.address_space_mb if language.memory == "cgroup" else 0)


async def build_program(context: BuildContext, stack: AsyncExitStack) -> ProgramExecutor:
    """The program tool on the slots the tools before it leave, serving each language its
    settings name whose toolchain runs here (else it serves nothing and says why)."""
    settings = context.settings
    program = settings.section(ProgramSettings)
    slots = context.slots.take(program.slots().wanted)
    if not program.enabled:
        return ProgramExecutor(settings, None, [], reason="off by config ([program] enabled = false)")
    if not slots:
        return ProgramExecutor(settings, None, [], reason=no_slots("program"))  # nothing to probe for
    described = load_languages(program.languages_dir)
    chosen = [described[name] for name in program.languages] if program.languages else list(described.values())
    loop = asyncio.get_running_loop()
    languages = list(await asyncio.gather(*(loop.run_in_executor(None, probe, language, context.cgroups is not None)
                                            for language in chosen)))
    if not any(served.available for served in languages):
        return ProgramExecutor(settings, None, languages, reason="no language's toolchain runs here: " + "; ".join(
            f"{served.language.name}: {served.reason}" for served in languages))
    for served in languages:  # before the workers start: their jails show only the files there are then
        if served.available and program.ahead and served.language.ahead is not None:
            served.ahead_dir = await loop.run_in_executor(None, build_ahead, served.language, program.ahead_dir,
                                                          served.version)
    try:
        pool = await start_tool_pool("program", context, slots, stack, runtime=program.runtime(),
                                     max_queue=program.max_queue, grace_s=program.worker_grace_s,
                                     recycle_after=program.recycle_after, preload=PRELOAD,
                                     kept_files_mb=program.kept_mb, longest_idle_first=program.ahead)
    except NoPool as exc:
        return ProgramExecutor(settings, None, languages, str(exc))
    cache_bytes = (program.cache_mb << 20) // max(1, len(languages))
    for served in languages:
        if served.available and served.language.compiles:
            served.compiler = Compiler(compile_step(served.language), pool,
                                       language_compile_limits(served.language, settings), cache_bytes)
    executor = ProgramExecutor(settings, pool, languages)
    log.info("program: %s, %d workers", executor.status(), len(slots))
    return executor
