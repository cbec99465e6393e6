"""One test case's run, judged the way a competitive-programming judge judges it.

The zygote reports a run as it reports any call; here it becomes the case's Outcome (an
exec'd program's: `toolserver.zygotes.programs.program_outcome`) and its Verdict: ACCEPTED or WRONG_ANSWER for a
run that ended well (its stdout held to the expected one by the call's comparison),
RUNTIME_ERROR, TIME_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, OUTPUT_LIMIT_EXCEEDED (output
past the cap cannot be judged), or SYSTEM_ERROR when the sandbox failed.
"""

from __future__ import annotations

from sandbox.calls import CallReply
from toolcontract.output_match import same_output
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.text import valid_text
from toolserver.zygotes.programs import OUT_OF_MEMORY, program_outcome


def same(stdout: str, expected: str, compare: int) -> bool:
    if compare == pb.COMPARE_EXACT:
        return stdout == expected
    if compare == pb.COMPARE_TOKENS:
        return stdout.split() == expected.split()
    return same_output(stdout, expected)


def verdict_of(outcome: pb.Outcome, truncated: bool, stdout: str, case: pb.CppCase, compare: int) -> pb.Verdict:
    if outcome == pb.OK:
        if not case.HasField("expected_stdout"):
            return pb.FINISHED
        if truncated:
            return pb.OUTPUT_LIMIT_EXCEEDED
        return pb.ACCEPTED if same(stdout, case.expected_stdout, compare) else pb.WRONG_ANSWER
    return {pb.ERROR: pb.RUNTIME_ERROR, pb.TIMEOUT: pb.TIME_LIMIT_EXCEEDED, pb.MEMORY_LIMIT: pb.MEMORY_LIMIT_EXCEEDED,
            pb.OUTPUT_LIMIT: pb.OUTPUT_LIMIT_EXCEEDED}.get(outcome, pb.SYSTEM_ERROR)


def case_result(index: int, case: pb.CppCase, reply: CallReply, compare: int,
                out_of_memory: tuple[str, ...] = (OUT_OF_MEMORY,)) -> pb.CppCaseResult:
    """out_of_memory: what the language's runtime writes when an allocation is refused."""
    outcome, error = program_outcome(reply, out_of_memory)
    stdout = valid_text(reply.stdout)
    return pb.CppCaseResult(index=index, verdict=verdict_of(outcome, reply.truncated, stdout, case, compare),
                            outcome=outcome, stdout=stdout, stderr=valid_text(reply.stderr),
                            exit_code=reply.exit_code, elapsed_us=max(0, reply.elapsed_us),
                            error=valid_text(error), truncated=reply.truncated)


def passed(verdict: pb.Verdict) -> bool:
    return verdict in (pb.ACCEPTED, pb.FINISHED)
