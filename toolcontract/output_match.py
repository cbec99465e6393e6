"""Whether a program's output is the expected one, for every place that judges stdout
against a test case's answer (code-judge's `/judge`, the verl code reward)."""

from __future__ import annotations


def same_output(stdout: str, expected: str) -> bool:
    """code-judge's comparison: equal once trailing whitespace of each line and the end is dropped."""
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.rstrip().splitlines()]
    return lines(stdout) == lines(expected)
