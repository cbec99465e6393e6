"""What a model reads of a python result, besides the streams (toolserver/answer_text.py)."""

from __future__ import annotations

from toolserver.v1 import toolserver_pb2 as pb


def answer_lines(result: pb.PythonResult) -> list[str]:
    return [f"value: {result.value}"] if result.value else []
