"""What a model reads of a search result: its hits as JSON (toolserver/answer_text.py)."""

from __future__ import annotations

import json

from toolserver.v1 import toolserver_pb2 as pb


def answer_lines(result: pb.SearchResult) -> list[str]:
    return [json.dumps([{"id": h.id, "title": h.title, "text": h.text, "score": round(h.score, 4)}
                        for h in result.hits], ensure_ascii=False, indent=1)]
