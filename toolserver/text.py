"""Text that the wire can carry.

Python strings may hold lone surrogates (from `json.loads` of a "\\ud800" escape, from a
program's repr or error message); protobuf refuses them, and so does gRPC in a status
message. Every string a response or a status carries passes through `valid_text`.
"""

from __future__ import annotations


def is_valid_text(text: str) -> bool:
    """Whether text encodes as UTF-8 (holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def valid_text(text: str) -> str:
    """text with each lone surrogate replaced by U+FFFD; a well-formed pair of surrogates
    becomes the character it stands for."""
    if is_valid_text(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
