"""A compiled program's cases, run and answered: each case a fresh jailed process on the
tool's zygotes with the limits the request asked for (time, memory, output: the same
grant as a python call's), all cases at once as workers free up, or in rounds of one per
worker with stop_on_failure; each judged (`judge`) and answered in the order it finished.
A compile that fails is the program's fault: the call's Outcome is COMPILE_ERROR with the
compiler's messages.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sandbox.calls import CallLimits, CallRequest, KeptFile, StartAhead
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.judging.compiler import COMPILE_OUTCOMES, Compiled
from toolserver.judging.judge import case_result, passed
from toolserver.outcomes import contract_outcome
from toolserver.text import valid_text
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.programs import OUT_OF_MEMORY

COMPILE_FAULTS = ("ERROR", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT")  # a compile that ends so is the program's fault


@dataclass(frozen=True)
class Run:
    """How each case runs: the program its jailed process runs, the files it gets (the
    compile's artifact, kept by the workers, or the source of a language that does not
    compile), what its runtime writes when an allocation is refused, and the process the
    workers start ahead of each run, which its program takes over (None: it starts its own)."""

    program: str
    files: dict[str, bytes] = field(default_factory=dict)
    kept_files: dict[str, KeptFile] = field(default_factory=dict)
    out_of_memory: tuple[str, ...] = (OUT_OF_MEMORY,)
    ahead: StartAhead | None = None


def check_call(call: pb.CppCall | pb.ProgramCall, section: str, max_source_kb: int, max_cases: int) -> None:
    """InvalidRequest for a judged call its tool's section ([cpp], [program]) refuses."""
    if not call.source.strip():
        raise InvalidRequest("source is empty")
    if len(call.source.encode("utf-8", errors="surrogateescape")) > max_source_kb << 10:
        raise InvalidRequest(f"source is longer than {section}.max_source_kb ({max_source_kb} KiB)")
    if len(call.cases) > max_cases:
        raise InvalidRequest(f"{len(call.cases)} cases; {section}.max_cases is {max_cases}")
    if call.cases and call.stdin:
        raise InvalidRequest("stdin is the input of the one run without cases: give each case its stdin")


async def run_cases(pool: WorkerPool, run: Run, cases: list[pb.CppCase], limits: CallLimits, compare: int,
                    stop_on_failure: bool, request_id: str) -> tuple[list[pb.CppCaseResult], int]:
    """Each case's result in the order it finished, and the time the runs waited."""
    results: list[pb.CppCaseResult] = []
    queued_us = 0
    step = len(pool.slots) if stop_on_failure else len(cases)
    for start in range(0, len(cases), step):
        indexes = range(start, min(start + step, len(cases)))
        runs = [asyncio.ensure_future(pool.run(CallRequest(f"{request_id}/{index}", run.program, limits,
                                                           stdin=cases[index].stdin, files=run.files,
                                                           kept_files=run.kept_files, ahead=run.ahead)))
                for index in indexes]
        index_of = dict(zip(runs, indexes))
        try:
            pending = set(runs)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for finished in sorted(done, key=index_of.__getitem__):
                    reply = finished.result()
                    queued_us += reply.queued_us
                    index = index_of[finished]
                    results.append(case_result(index, cases[index], reply, compare, run.out_of_memory))
        finally:
            for each in runs:
                each.cancel()
        if stop_on_failure and not all(passed(result.verdict) for result in results):
            results += [pb.CppCaseResult(index=index, verdict=pb.SKIPPED) for index in range(indexes.stop, len(cases))]
            break
    return results, queued_us


def compile_result(compiled: Compiled) -> pb.CppCompile:
    return pb.CppCompile(ok=compiled.ok, cached=compiled.cached, stderr=valid_text(compiled.messages),
                         exit_code=compiled.exit_code, elapsed_us=max(0, compiled.elapsed_us),
                         outcome=contract_outcome(compiled.outcome, COMPILE_OUTCOMES))


def compile_failed(request_id: str, compiled: Compiled, result_field: str) -> pb.ExecuteResponse:
    """The answer to a call whose program did not compile (or whose compile's sandbox
    failed); result_field: the tool's field of ExecuteResponse's `result`."""
    outcome = pb.COMPILE_ERROR if compiled.outcome in COMPILE_FAULTS else pb.CRASHED
    error = compiled.error if compiled.outcome == "ERROR" else f"compile: {compiled.error}"
    response = pb.ExecuteResponse(request_id=request_id, outcome=outcome, stderr=valid_text(compiled.messages),
                                  error=valid_text(error), elapsed_us=max(0, compiled.elapsed_us),
                                  queued_us=max(0, compiled.queued_us))
    getattr(response, result_field).compile.CopyFrom(compile_result(compiled))
    return response


def judged(request_id: str, compiled: Compiled | None, results: list[pb.CppCaseResult], queued_us: int,
           result_field: str) -> pb.ExecuteResponse:
    """The answer to a call whose cases ran: OK unless a run did not end well (the first
    such case's outcome, in case order); the streams are the run's when there was one.
    compiled: None for a language that runs its source."""
    ordered = sorted(results, key=lambda result: result.index)
    faults = [result for result in ordered if result.outcome not in (pb.OK, pb.OUTCOME_UNSPECIFIED)]
    compile_us, compile_queued_us = (compiled.elapsed_us, compiled.queued_us) if compiled is not None else (0, 0)
    response = pb.ExecuteResponse(
        request_id=request_id,
        outcome=faults[0].outcome if faults else pb.OK,
        error=f"case {faults[0].index}: {faults[0].error}" if faults else "",
        truncated=any(result.truncated for result in results),
        elapsed_us=max(0, compile_us) + sum(result.elapsed_us for result in results),
        queued_us=max(0, compile_queued_us) + queued_us)
    result = pb.CppResult(cases=results, passed=sum(passed(result.verdict) for result in results))
    if compiled is not None:
        result.compile.CopyFrom(compile_result(compiled))
    getattr(response, result_field).CopyFrom(result)
    if len(results) == 1:
        response.stdout, response.stderr = results[0].stdout, results[0].stderr
    return response
