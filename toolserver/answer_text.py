"""What a model reads of a tool call's answer, for every front and adapter that hands
answers to a model as text (MCP, the engine adapters)."""

from __future__ import annotations

from toolserver.tools import TOOLS
from toolserver.v1 import toolserver_pb2 as pb

# Each tool's lines for its result, by the name of its field of ExecuteResponse's `result`.
RESULT_LINES = {tool.name: tool.answer for tool in TOOLS if tool.answer is not None}


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
    if kind in RESULT_LINES:
        parts += RESULT_LINES[kind](getattr(response, kind))
    if response.truncated:
        parts.append("(output truncated at the server's cap)")
    text = "\n".join(parts) or "(no output)"
    if not max_chars or len(text) <= max_chars:
        return text
    note = f"\n...(truncated: {len(text) - max_chars} more characters)"
    return text[: max(0, max_chars - len(note))] + note
