"""What a model reads of a Lean result: whether the proof is complete, and its messages
(toolserver/answer_text.py)."""

from __future__ import annotations

from toolserver.v1 import toolserver_pb2 as pb


def answer_lines(result: pb.LeanResult) -> list[str]:
    return [f"complete: {result.complete}; sorries: {result.sorries}"] + [
        f"{m.severity} at line {m.line}, column {m.column}: {m.text}" for m in result.messages]
