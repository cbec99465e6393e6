"""The arguments a judged program's call shares with every language's (its input or cases,
how output is compared, whether to stop at the first failure) as a model sends them in
JSON: their schema and parsing."""

from __future__ import annotations

from typing import Any

from toolcontract.names import UINT32_MAX
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.text import is_valid_text

COMPARISONS = {"lines": pb.COMPARE_LINES, "exact": pb.COMPARE_EXACT, "tokens": pb.COMPARE_TOKENS}
CASE_KEYS = ("stdin", "expected_stdout")
ARGUMENTS = {"source": str, "stdin": str, "cases": list, "compare": str, "stop_on_failure": bool,
             "compile_timeout_ms": int}  # a judged program's JSON arguments, and their types
CASES_PROPERTIES: dict[str, Any] = {
    "stdin": {"type": "string", "description": "The input of one run, when no cases are given."},
    "cases": {"type": "array", "description": "Test cases, each run in a fresh process: its input and, to judge it, "
                                              "the output expected.",
              "items": {"type": "object", "properties": {"stdin": {"type": "string"},
                                                         "expected_stdout": {"type": "string"}},
                        "additionalProperties": False}},
    "compare": {"type": "string", "enum": list(COMPARISONS),
                "description": "How output is held to expected_stdout: lines (trailing whitespace ignored, the "
                               "default), exact, or tokens."},
    "stop_on_failure": {"type": "boolean", "description": "Skip the cases not yet started once one fails."},
}


def case_from_json(item: Any, index: int) -> pb.CppCase:
    where = f"cases[{index}]"
    if not isinstance(item, dict):
        raise InvalidRequest(f"{where} must be an object with stdin and expected_stdout")
    unknown = sorted(set(item) - set(CASE_KEYS))
    if unknown:
        raise InvalidRequest(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key, value in item.items():
        if not isinstance(value, str):
            raise InvalidRequest(f"{where}.{key} must be a string")
        if not is_valid_text(value):
            raise InvalidRequest(f"{where}.{key} is not valid Unicode (a lone surrogate)")
    return pb.CppCase(**item)


def judged_fields(values: dict[str, Any]) -> dict[str, Any]:
    """The fields of a CppCall (or ProgramCall) that values (parsed JSON arguments of
    ARGUMENTS) ask for; raises InvalidRequest."""
    compare = values.get("compare", "lines")
    if compare not in COMPARISONS:
        raise InvalidRequest(f"argument 'compare' must be one of {', '.join(COMPARISONS)}, got {compare!r}")
    timeout = values.get("compile_timeout_ms", 0)
    if not 0 <= timeout <= UINT32_MAX:
        raise InvalidRequest(f"argument 'compile_timeout_ms' must be 0 to {UINT32_MAX}, got {timeout}")
    return {"source": values["source"], "stdin": values.get("stdin", ""),
            "cases": [case_from_json(item, index) for index, item in enumerate(values.get("cases", []))],
            "compare": COMPARISONS[compare], "stop_on_failure": values.get("stop_on_failure", False),
            "compile_timeout_ms": timeout}
