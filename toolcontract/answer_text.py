"""What a model reads of a tool call's answer, for every front and adapter that hands
answers to a model as text (MCP, the engine adapters).

A result message is read by its tool's lines below; a tool without lines of its own has
its result read as JSON of the fields it sets (a new tool needs nothing here to be read).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from toolcontract.displays import image_type
from toolcontract.v1 import toolserver_pb2 as pb

TEXT_TYPES = ("text/markdown", "text/plain")  # a display's text for a reader of text, the first one it has


def python_lines(result: pb.PythonResult) -> list[str]:
    """The value, then what the cell displayed: an image by its type and size, anything
    else by its text (the value's own rich form adds nothing to a text reader)."""
    lines = [f"value: {result.value}"] if result.value else []
    for display in result.displays:
        image = image_type(display)
        if image is not None:
            lines.append(f"display: {image}, {len(display.data[image])} bytes")
        elif display.kind != "execute_result":
            text = next((display.data[mime] for mime in TEXT_TYPES if mime in display.data), b"")
            lines.append(f"display: {text.decode('utf-8', errors='replace')}")
    return lines


def search_lines(result: pb.SearchResult) -> list[str]:
    return [json.dumps([{"id": h.id, "title": h.title, "text": h.text, "score": round(h.score, 4)}
                        for h in result.hits], ensure_ascii=False, indent=1)]


def lean_lines(result: pb.LeanResult) -> list[str]:
    return [f"complete: {result.complete}; sorries: {result.sorries}"] + [
        f"{m.severity} at line {m.line}, column {m.column}: {m.text}" for m in result.messages]


def cpp_lines(result: pb.CppResult) -> list[str]:
    """The compile (where the language compiles), then each case's verdict; a single run's
    streams are the answer's own. The program tool's results have the same shape."""
    compile = result.compile
    lines = [] if not result.HasField("compile") else [
        "compiled" + (" (cached)" if compile.cached else "") if compile.ok
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


def bash_lines(result: pb.BashResult) -> list[str]:
    return []  # the streams and the outcome say it all


def json_lines(result: Message) -> list[str]:
    fields = MessageToDict(result, preserving_proto_field_name=True)
    return [json.dumps(fields, ensure_ascii=False)] if fields else []


# Each tool's lines for its result, by the name of its field of ExecuteResponse's `result`.
RESULT_LINES: dict[str, Callable[[Any], list[str]]] = {
    "python": python_lines, "search": search_lines, "lean": lean_lines, "cpp": cpp_lines, "bash": bash_lines,
    "program": cpp_lines}


def answer_text(response: pb.ExecuteResponse, max_chars: int = 0) -> str:
    """The answer's outcome when not OK, its streams and its result (as its tool writes
    it); cut to max_chars (0: whole) with a note that says how much is gone."""
    parts = []
    if response.outcome != pb.OK:
        parts.append(f"outcome: {pb.Outcome.Name(response.outcome)}" + (f": {response.error}" if response.error else ""))
    if response.stdout:
        parts.append(f"stdout:\n{response.stdout}")
    if response.stderr:
        parts.append(f"stderr:\n{response.stderr}")
    kind = response.WhichOneof("result")
    if kind:
        parts += RESULT_LINES.get(kind, json_lines)(getattr(response, kind))
    if response.truncated:
        parts.append("(output truncated at the server's cap)")
    text = "\n".join(parts) or "(no output)"
    if not max_chars or len(text) <= max_chars:
        return text
    note = f"\n...(truncated: {len(text) - max_chars} more characters)"
    return text[: max(0, max_chars - len(note))] + note
