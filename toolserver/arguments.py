"""Tool arguments as JSON: parsing a JsonCall's arguments and the OpenAI function shape.

Every tool parses its arguments with `json_arguments`, so a bad argument reads the same
whichever tool or front it reached.
"""

from __future__ import annotations

import json
from typing import Any

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.text import is_valid_text


def openai_function(spec: pb.ToolSpec) -> dict[str, Any]:
    """A ToolSpec in the OpenAI function-calling shape."""
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": json.loads(spec.parameters)}}


KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "an object"}


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
        kind = kinds[name]
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise InvalidRequest(f"argument {name!r} must be {KIND_NAMES[kind]}")
        if isinstance(value, str) and not is_valid_text(value):
            raise InvalidRequest(f"argument {name!r} is not valid Unicode (a lone surrogate)")
    if required not in values:
        raise InvalidRequest(f"argument {required!r} is required")
    return values
