"""The tools this server offers: their OpenAI-style JSON schemas and JsonCall parsing."""

from __future__ import annotations

import json
from typing import Any

from toolserver.errors import InvalidRequest, ToolUnavailable
from toolserver.text import is_valid_text
from toolserver.v1 import toolserver_pb2 as pb

PYTHON_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python 3 source. The repr of a last bare expression is returned as the value."},
        "stdin": {"type": "string", "description": "Text fed to the program's standard input."},
        "session_id": {"type": "string", "description": "A session from OpenSession: variables and imports persist between its calls. Empty: a fresh interpreter."},
    },
    "required": ["code"],
    "additionalProperties": False,
}

PYTHON_DESCRIPTION = ("Run Python 3 code in an isolated sandbox with sympy, numpy and mpmath pre-imported "
                      "for use. Nothing persists between calls unless a session_id is given. Returns stdout, "
                      "stderr and the value of the last expression.")

KNOWN_TOOLS = ("python", "search", "lean")


def python_tool_spec(profile: str, allowed: tuple[str, ...] | None, denied: tuple[str, ...]) -> pb.ToolSpec:
    """The python tool as a caller with this import profile sees it."""
    if allowed is None:
        imports = (f"Imports (profile {profile!r}): the whole standard library and the installed packages, "
                   f"except {', '.join(denied)}; network access and new processes are refused.")
    else:
        imports = f"Imports (profile {profile!r}): only {', '.join(sorted(allowed))}."
    return pb.ToolSpec(name="python", description=f"{PYTHON_DESCRIPTION} {imports}",
                       parameters=json.dumps(PYTHON_SCHEMA))


def openai_function(spec: pb.ToolSpec) -> dict:
    """A ToolSpec in the OpenAI function-calling shape."""
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": json.loads(spec.parameters)}}


def json_arguments(arguments: str, tool: str, kinds: dict[str, type], required: str) -> dict[str, Any]:
    """JsonCall arguments as a dict whose keys and value types match kinds; raises
    InvalidRequest naming what is wrong."""
    try:
        values = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from exc
    except RecursionError as exc:
        raise InvalidRequest("arguments are nested too deeply") from exc
    except ValueError as exc:  # an integer past Python's digit limit
        raise InvalidRequest(f"arguments hold a value that cannot be read: {str(exc)[:200]}") from exc
    if not isinstance(values, dict):
        raise InvalidRequest("arguments must be a JSON object")
    if not all(is_valid_text(key) for key in values):
        raise InvalidRequest("an argument name is not valid Unicode (a lone surrogate)")
    unknown = sorted(set(values) - set(kinds))
    if unknown:
        raise InvalidRequest(f"unknown argument(s) for {tool}: {', '.join(unknown)}")
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, kinds[name]):
            raise InvalidRequest(f"argument {name!r} must be {'a string' if kinds[name] is str else 'an integer'}")
        if isinstance(value, str) and not is_valid_text(value):
            raise InvalidRequest(f"argument {name!r} is not valid Unicode (a lone surrogate)")
    if required not in values:
        raise InvalidRequest(f"argument {required!r} is required")
    return values


def python_call_from_json(arguments: str) -> pb.PythonCall:
    """Parses JsonCall arguments for the python tool; raises InvalidRequest."""
    values = json_arguments(arguments, "python", dict.fromkeys(PYTHON_SCHEMA["properties"], str), "code")
    return pb.PythonCall(code=values["code"], stdin=values.get("stdin", ""), session_id=values.get("session_id", ""))


def unavailable(tool: str) -> ToolUnavailable:
    return ToolUnavailable(f"tool {tool!r} is not enabled on this server; ListTools says which are")
