"""A byte-level tokenizer: the smallest one that round-trips any text, no download.

Ids 0..255 are the UTF-8 bytes; `EOS` (256) ends a completion. It is the tokenizer of
the in-process torch policy and of tests. It is not a subword tokenizer: a Hugging Face
model brings its own, which satisfies the same `Tokenizer` protocol.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class Tokenizer(Protocol):
    eos_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def prompt_ids(self, text: str) -> list[int]:
        """A task's prompt as ids: the text itself, or wrapped in a chat model's template."""
        ...


class ByteTokenizer:
    """UTF-8 bytes as ids; special ids (EOS) decode to nothing."""

    eos_id = 256
    vocab_size = 257

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")

    def prompt_ids(self, text: str) -> list[int]:
        return self.encode(text)
