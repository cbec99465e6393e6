"""The KV cache of a rollout kept between its turns, so a turn after a tool call only
feeds the observation's tokens instead of the whole context again.

When a sequence stops at a tool call, `PrefixStore.put` keeps its keys and values
(real tokens only, left padding stripped) under the token ids they cover. The next
`generate` looks each context up (`take`: the longest stored prefix, removed from the
store) and `batch_cache` lays the prefixes of a batch side by side in one cache:

    row i:  [pad .. pad][prefix_i (cached)][pad .. pad][suffix_i (fed now)]

The attention mask is 0 on the pads and position ids count real tokens only, so each
row sees exactly its own tokens at their own positions, as if it had been fed whole.
Keys are stored after their rotary embedding, at the positions they had, which this
layout keeps. The store holds at most `max_tokens` tokens (oldest dropped first) and is
cleared whenever the weights change: a cache computed under old weights is not reused.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import torch
from transformers.cache_utils import Cache, DynamicCache


@dataclass(frozen=True)
class Prefix:
    """Per layer, keys and values [heads, tokens, head_dim] of one sequence's real tokens."""

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]

    @property
    def length(self) -> int:
        return self.keys[0].shape[1]

    def cut(self, length: int) -> "Prefix":
        """The first `length` tokens: a causal model's cache of a prefix is a prefix of its cache."""
        return Prefix(tuple(k[:, :length] for k in self.keys), tuple(v[:, :length] for v in self.values))


def row_prefix(cache: Cache, row: int, real: torch.Tensor) -> Prefix:
    """Row `row` of a batch cache, only the positions where `real` (its attention mask) is 1."""
    keep = real.bool()
    layers = [_keys_values(layer) for layer in cache.layers]
    return Prefix(tuple(keys[row][:, keep].clone() for keys, _ in layers),
                  tuple(values[row][:, keep].clone() for _, values in layers))


def _keys_values(layer: object) -> tuple[torch.Tensor, torch.Tensor]:
    """An attention layer's keys and values; a layer without them (linear attention, or
    one never filled) cannot be cached as a prefix."""
    keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
    if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
        raise ValueError(f"a {type(layer).__name__} of the cache holds no keys and values to keep as a prefix")
    return keys, values


class PrefixStore:
    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.entries: OrderedDict[tuple[int, ...], Prefix] = OrderedDict()
        self.tokens = 0

    def put(self, ids: Sequence[int], prefix: Prefix) -> None:
        if prefix.length != len(ids):
            raise ValueError(f"a cached prefix of {prefix.length} positions stored under {len(ids)} token ids")
        if not 0 < len(ids) <= self.max_tokens:
            return
        key = tuple(ids)
        self._drop(key)
        self.entries[key] = prefix
        self.tokens += len(key)
        while self.tokens > self.max_tokens:
            self._drop(next(iter(self.entries)))

    def take(self, context: Sequence[int]) -> Prefix | None:
        """The longest stored prefix of `context`, cut to leave at least one token to
        feed (the next logits come from it), removed from the store; None if none."""
        lengths = sorted({len(k) for k in self.entries if len(k) <= len(context)}, reverse=True)
        for length in lengths:
            key = tuple(context[:length])
            if key in self.entries:
                prefix = self.entries[key]
                self._drop(key)
                return prefix.cut(len(context) - 1) if length == len(context) else prefix
        return None

    def clear(self) -> None:
        self.entries.clear()
        self.tokens = 0

    def _drop(self, key: tuple[int, ...]) -> None:
        if key in self.entries:
            del self.entries[key]
            self.tokens -= len(key)


def batch_cache(prefixes: Sequence[Prefix | None], suffixes: Sequence[Sequence[int]], pad_id: int,
                device: torch.device) -> tuple[torch.Tensor, torch.Tensor, DynamicCache | None]:
    """Ids [B, S] to feed, the attention mask [B, P + S] and the cache [B, heads, P, dim]
    of a batch whose row i continues `prefixes[i]` (None: nothing cached) with
    `suffixes[i]`; P and S are the longest prefix and suffix, shorter ones left-padded."""
    cached = [p.length if p is not None else 0 for p in prefixes]
    width = max(cached)
    span = max(len(s) for s in suffixes)
    ids = torch.tensor([[pad_id] * (span - len(s)) + list(s) for s in suffixes], dtype=torch.long, device=device)
    mask = torch.tensor([[0] * (width - n) + [1] * n + [0] * (span - len(s)) + [1] * len(s)
                         for n, s in zip(cached, suffixes)], dtype=torch.long, device=device)
    if width == 0:
        return ids, mask, None
    sample = next(p for p in prefixes if p is not None)
    layers = []
    for layer in range(len(sample.keys)):
        per_kind = []
        for kind in ("keys", "values"):
            heads, _, dim = getattr(sample, kind)[layer].shape
            tensor = torch.zeros(len(prefixes), heads, width, dim, dtype=sample.keys[layer].dtype, device=device)
            for row, prefix in enumerate(prefixes):
                if prefix is not None:
                    tensor[row, :, width - prefix.length:] = getattr(prefix, kind)[layer]
            per_kind.append(tensor)
        layers.append((per_kind[0], per_kind[1]))
    return ids, mask, DynamicCache(ddp_cache_data=layers)
