"""A chat tokenizer made without the Hub: 256 byte-level tokens, ChatML's special tokens and
a chat template, so engines can render and parse tool-call conversations in tests."""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

END = "<|im_end|>"


def byte_chat_tokenizer(chat_template: str, added: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """Every byte is a token (text round-trips exactly); each of added is one token more."""
    vocab = {char: index for index, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=END, pad_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>"], chat_template=chat_template)
    if added:
        tokenizer.add_tokens(list(added))
    return tokenizer
