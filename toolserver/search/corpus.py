"""Reading a corpus to index: JSONL, one document per line, in either of two layouts.

- `{"id": ..., "title": ..., "text": ...}` (title optional);
- the Search-R1 / FlashRAG wiki-18 layout `{"id": ..., "contents": "\"Title\"\ntext"}`,
  whose first line is the (quoted) title.

Every fault is a CorpusError that names the file and line. This module does not index.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from toolserver.text import valid_text


class CorpusError(ValueError):
    """The corpus cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    text: str


def split_contents(contents: str) -> tuple[str, str]:
    """Title and text of a wiki-18 `contents` field: a first line holding the quoted title."""
    first, newline, rest = contents.partition("\n")
    if not newline:
        return "", contents
    title = first.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, rest.strip()


def document_from(record: object) -> Document:
    """The Document of one parsed JSONL record; raises ValueError saying what is wrong."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    doc_id = record.get("id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise ValueError("'id' must be a string or an integer")
    doc_id = str(doc_id).strip()
    if not doc_id:
        raise ValueError("'id' is empty")
    if "text" in record and "contents" in record:
        raise ValueError("has both 'text' and 'contents': use one layout")
    if "contents" in record:
        if not isinstance(record["contents"], str):
            raise ValueError("'contents' must be a string")
        title, text = split_contents(record["contents"])
    elif "text" in record:
        text, title = record["text"], record.get("title", "")
        if not isinstance(text, str):
            raise ValueError("'text' must be a string")
        if not isinstance(title, str):
            raise ValueError("'title' must be a string")
    else:
        raise ValueError("needs 'text' (with optional 'title') or 'contents'")
    if not (title.strip() or text.strip()):
        raise ValueError("has neither title nor text")
    return Document(valid_text(doc_id), valid_text(title.strip()), valid_text(text.strip()))


def read_corpus(path: str | Path) -> Iterator[Document]:
    """Yields the documents of a JSONL file in order; blank lines are skipped.

    Raises CorpusError for an unreadable file, a bad line, a duplicate id or no documents.
    """
    path = Path(path)
    seen: set[str] = set()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise CorpusError(f"cannot read corpus {path}: {exc.strerror}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path} line {number}: not UTF-8 text") from exc
            if not line.strip():
                continue
            try:
                document = document_from(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path} line {number}: not valid JSON: {exc.msg} at column {exc.colno}") from exc
            except ValueError as exc:
                raise CorpusError(f"{path} line {number}: {exc}") from exc
            if document.id in seen:
                raise CorpusError(f"{path} line {number}: duplicate id {document.id!r}")
            seen.add(document.id)
            yield document
    if not seen:
        raise CorpusError(f"{path} holds no documents")
