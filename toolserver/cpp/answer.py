"""What a model reads of a C++ result: the compile, then each case's verdict
(toolserver/answer_text.py). A single run's streams are the answer's own."""

from __future__ import annotations

from toolserver.v1 import toolserver_pb2 as pb


def answer_lines(result: pb.CppResult) -> list[str]:
    compile = result.compile
    lines = ["compiled" + (" (cached)" if compile.cached else "") if compile.ok
             else f"compile failed (exit status {compile.exit_code})"]
    if len(result.cases) > 1:
        lines.append(f"passed {result.passed} of {len(result.cases)} cases")
        for case in sorted(result.cases, key=lambda case: case.index):
            line = f"case {case.index}: {pb.Verdict.Name(case.verdict)}"
            if case.verdict != pb.SKIPPED:
                line += f" ({case.elapsed_us / 1000:.0f} ms)" + (f": {case.error}" if case.error else "")
            lines.append(line)
    elif result.cases and result.cases[0].verdict not in (pb.FINISHED, pb.SKIPPED):
        lines.append(f"verdict: {pb.Verdict.Name(result.cases[0].verdict)}")
    return lines
