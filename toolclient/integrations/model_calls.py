"""The tool calls a model writes in its text, for the adapters whose engine hands over text
(SkyRL, OpenRLHF): Hermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
blocks, SkyRL's `<tool><name>text</name></tool>` and fenced ```python blocks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

HERMES_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
TAGGED_CALL = re.compile(r"<tool>\s*<(\w+)>(.*?)</\1>\s*</tool>", re.DOTALL)
FENCED_PYTHON = re.compile(r"```python[ \t]*\n(.*?)```", re.DOTALL)
FIRST_ARGUMENT = {"python": "code", "search": "query", "lean": "code"}  # what a <tool><name> call's text is


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # why the call could not be read; the model reads it


def hermes_call(payload: str) -> ToolCall:
    """One `<tool_call>` body: {"name", "arguments"} (arguments also as a JSON string, or
    both under "function", as models write them)."""
    try:
        call = json.loads(payload)
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            call = call["function"]
        if not isinstance(call, dict):
            raise ValueError("a tool call is a JSON object")
        arguments = call.get("arguments", {})
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        if not isinstance(call.get("name"), str) or not isinstance(arguments, dict):
            raise ValueError('a tool call is {"name": "...", "arguments": {...}}')
    except ValueError as exc:
        return ToolCall("", error=f"could not read the tool call: {exc}")
    return ToolCall(call["name"], arguments)


def hermes_calls(text: str) -> list[ToolCall]:
    return [hermes_call(payload) for payload in HERMES_CALL.findall(text)]


def tagged_calls(text: str) -> list[ToolCall]:
    """SkyRL's `<tool><name>text</name></tool>` (searchcode's format): the text is the
    tool's first argument."""
    return [ToolCall(name, {FIRST_ARGUMENT.get(name, "code"): body.strip()}) for name, body in TAGGED_CALL.findall(text)]


def fenced_calls(text: str) -> list[ToolCall]:
    return [ToolCall("python", {"code": code}) for code in FENCED_PYTHON.findall(text)]
