"""The program tool as callers see it, and parsing of its JSON arguments."""

from __future__ import annotations

import json
from typing import Any

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments
from toolserver.errors import InvalidRequest
from toolserver.judging.schema import ARGUMENTS, CASES_PROPERTIES, judged_fields


def program_schema(languages: list[str]) -> dict[str, Any]:
    """languages: the names the tool serves now."""
    return {
        "type": "object",
        "properties": {
            "language": {"type": "string", "description": "The language of source.",
                         **({"enum": languages} if languages else {})},
            "source": {"type": "string", "description": "One source file; it reads stdin and writes stdout (Java: "
                                                        "its public class, else the class with main, of any name)."},
            **CASES_PROPERTIES,
        },
        "required": ["language", "source"],
        "additionalProperties": False,
    }


def program_tool_spec(versions: dict[str, str]) -> pb.ToolSpec:
    """versions: each language served now and its toolchain's version."""
    served = ", ".join(f"{name} ({version})" for name, version in versions.items()) or "none at present"
    description = (f"Compile (where the language compiles) and run a program in one of: {served}; on stdin or on "
                   "test cases, each in an isolated sandbox with no network. Returns each case's verdict (ACCEPTED, "
                   "WRONG_ANSWER, RUNTIME_ERROR, TIME_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, ...), output and time, "
                   "or the compiler's errors.")
    return pb.ToolSpec(name="program", description=description, parameters=json.dumps(program_schema(list(versions))))


def program_call_from_json(arguments: str) -> pb.ProgramCall:
    """Parses JsonCall arguments for the program tool; raises InvalidRequest."""
    values = json_arguments(arguments, "program", {"language": str, **ARGUMENTS}, "source")
    if "language" not in values:
        raise InvalidRequest("argument 'language' is required")
    return pb.ProgramCall(language=values["language"], **judged_fields(values))
