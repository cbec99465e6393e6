"""The cpp tool's schema as callers see it, and parsing of its JSON arguments."""

from __future__ import annotations

import json
from typing import Any

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments
from toolserver.cpp.settings import CppSettings
from toolserver.judging.schema import ARGUMENTS, CASES_PROPERTIES, judged_fields


def cpp_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "One C++ source file with main(); it reads stdin and "
                                                        "writes stdout."},
            **CASES_PROPERTIES,
        },
        "required": ["source"],
        "additionalProperties": False,
    }


def cpp_tool_spec(settings: CppSettings, compiler: str) -> pb.ToolSpec:
    """compiler: the compiler's name and version, as its description gives them."""
    description = (f"Compile a C++ program ({compiler} {' '.join(settings.command()[1:])}) and run "
                   "it on stdin or on test cases, each in an isolated sandbox with no network. Returns each case's "
                   "verdict (ACCEPTED, WRONG_ANSWER, RUNTIME_ERROR, TIME_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, "
                   "...), output and time, or the compiler's errors.")
    return pb.ToolSpec(name="cpp", description=description, parameters=json.dumps(cpp_schema()))


def cpp_call_from_json(arguments: str) -> pb.CppCall:
    """Parses JsonCall arguments for the cpp tool; raises InvalidRequest."""
    return pb.CppCall(**judged_fields(json_arguments(arguments, "cpp", ARGUMENTS, "source")))
