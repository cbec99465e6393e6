"""What a model reads of a tool call's answer, for every front and adapter that hands
answers to a model as text (MCP, the engine adapters)."""

from __future__ import annotations

import json

from toolserver.v1 import toolserver_pb2 as pb


def answer_text(response: pb.ExecuteResponse, max_chars: int = 0) -> str:
    """The answer's outcome when not OK, its streams and its result (a value, search hits,
    Lean messages); cut to max_chars (0: whole) with a note that says how much is gone."""
    parts = []
    if response.outcome != pb.OK:
        parts.append(f"outcome: {pb.Outcome.Name(response.outcome)}" + (f": {response.error}" if response.error else ""))
    if response.stdout:
        parts.append(f"stdout:\n{response.stdout}")
    if response.stderr:
        parts.append(f"stderr:\n{response.stderr}")
    kind = response.WhichOneof("result")
    if kind == "python" and response.python.value:
        parts.append(f"value: {response.python.value}")
    elif kind == "search":
        parts.append(json.dumps([{"id": h.id, "title": h.title, "text": h.text, "score": round(h.score, 4)}
                                 for h in response.search.hits], ensure_ascii=False, indent=1))
    elif kind == "lean":
        lean = response.lean
        parts.append(f"complete: {lean.complete}; sorries: {lean.sorries}")
        parts += [f"{m.severity} at line {m.line}, column {m.column}: {m.text}" for m in lean.messages]
    if response.truncated:
        parts.append("(output truncated at the server's cap)")
    text = "\n".join(parts) or "(no output)"
    if not max_chars or len(text) <= max_chars:
        return text
    note = f"\n...(truncated: {len(text) - max_chars} more characters)"
    return text[: max(0, max_chars - len(note))] + note
