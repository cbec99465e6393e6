"""The python tool's schema as callers see it, and parsing of its JSON arguments."""

from __future__ import annotations

import json
from typing import Any

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments

PYTHON_PROPERTIES: dict[str, Any] = {
    "code": {"type": "string", "description": "Python 3 source. The repr of a last bare expression is returned as the value."},
    "stdin": {"type": "string", "description": "Text fed to the program's standard input."},
    "session_id": {"type": "string", "description": "A session from OpenSession: variables and imports persist between its calls. Empty: a fresh interpreter."},
}
PYTHON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": PYTHON_PROPERTIES,
    "required": ["code"],
    "additionalProperties": False,
}

PYTHON_DESCRIPTION = ("Run a Python 3 program in an isolated sandbox with no network, as `python3 main.py` runs "
                      "it, with the scientific stack installed (numpy, scipy, sympy, pandas, scikit-learn, ...). "
                      "Nothing persists between calls unless a session_id is given. Returns stdout, stderr, the "
                      "exit status and the value of the last expression.")


def python_tool_spec(profile: str, allowed: tuple[str, ...] | None, denied: tuple[str, ...],
                     refuse_actions: bool) -> pb.ToolSpec:
    """The python tool as a caller with this import profile sees it."""
    if allowed is None:
        imports = f"Imports (profile {profile!r}): the whole standard library and the installed packages"
        imports += f", except {', '.join(denied)}." if denied else "."
    else:
        imports = f"Imports (profile {profile!r}): only {', '.join(sorted(allowed))}."
    if refuse_actions:
        imports += " New processes and sockets are refused."
    return pb.ToolSpec(name="python", description=f"{PYTHON_DESCRIPTION} {imports}",
                       parameters=json.dumps(PYTHON_SCHEMA))


def python_call_from_json(arguments: str) -> pb.PythonCall:
    """Parses JsonCall arguments for the python tool; raises InvalidRequest."""
    values = json_arguments(arguments, "python", dict.fromkeys(PYTHON_PROPERTIES, str), "code")
    return pb.PythonCall(code=values["code"], stdin=values.get("stdin", ""), session_id=values.get("session_id", ""))

