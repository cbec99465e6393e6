"""Batched sampling, shared by the in-process backends (torch, hf).

`sample_batch` runs the token-by-token loop: it samples every context together, and a
context that finishes leaves the batch (and its KV cache rows) at once, so the rest do
not pay for it. Each round, `sample_round` draws one token per row from
softmax(logits / temperature), appends it and its logprob to that row's `Generation`,
and says which rows go on: not those that ended (EOS), hit their budget, or whose new
tokens the stop test accepts. A backend is a `Decoder`: its own model calls and KV
cache; this holds only the part that must behave the same in both.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, TypeVar

import torch
import torch.nn.functional as F

from trainer.rollout import Generation, StopFn

Cache = TypeVar("Cache")
# Called with the cache, the mask, the batch positions of the rows that stopped this
# round, the context index of every batch position, and the generations so far; before
# the stopped rows leave the cache.
Finished = Callable[[Cache, torch.Tensor, list[int], list[int], list[Generation]], None]


class Decoder(Protocol[Cache]):
    """A backend's model calls over a batch and its KV cache."""

    def first_logits(self, contexts: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, Cache]:
        """Logits [B, V] after each context, the real-token mask [B, S] of the cache,
        and the cache."""
        ...

    def next_logits(self, ids: torch.Tensor, mask: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
        """Logits [B, V] after `ids` [B, T] that follow `cache` (`mask` covers both), and
        the grown cache."""
        ...

    def select_rows(self, cache: Cache, keep: torch.Tensor) -> Cache:
        """The cache of the batch positions in `keep` only."""
        ...


def sample_round(logits: torch.Tensor, rows: Sequence[int], out: list[Generation], *, temperature: float,
                 generator: torch.Generator, eos_id: int, max_new_tokens: Sequence[int], stop: StopFn
                 ) -> tuple[torch.Tensor, list[int]]:
    """`logits` [len(rows), vocab]; returns the sampled ids [len(rows), 1] and the
    positions (into `rows`) of the rows still generating."""
    logp = F.log_softmax(logits.float() / temperature, dim=-1)
    nxt = torch.multinomial(logp.exp(), 1, generator=generator)
    chosen = logp.gather(-1, nxt).squeeze(-1).tolist()
    live = []
    for j, (i, token) in enumerate(zip(rows, nxt.squeeze(-1).tolist())):
        gen = out[i]
        gen.tokens.append(token)
        gen.logprobs.append(chosen[j])
        if token != eos_id and len(gen.tokens) < max_new_tokens[i] and not stop(gen.tokens):
            live.append(j)
    return nxt, live


@torch.no_grad()
def sample_batch(decoder: Decoder[Cache], contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int], *, temperature: float, generator: torch.Generator, eos_id: int,
                 finished: Finished[Cache] | None = None) -> list[Generation]:
    """Continues every context (those with a budget) together until each ends; finished,
    where given, sees the rows that end each round while their cache is still there."""
    out = [Generation([], []) for _ in contexts]
    rows = [i for i, n in enumerate(max_new_tokens) if n > 0]
    if not rows:
        return out
    logits, mask, cache = decoder.first_logits([contexts[i] for i in rows])
    while True:
        nxt, live = sample_round(logits, rows, out, temperature=temperature, generator=generator, eos_id=eos_id,
                                 max_new_tokens=max_new_tokens, stop=stop)
        if finished is not None:
            finished(cache, mask, sorted(set(range(len(rows))) - set(live)), rows, out)
        if not live:
            return out
        if len(live) < len(rows):
            keep = torch.tensor(live, device=mask.device)
            cache = decoder.select_rows(cache, keep)
            mask, nxt, rows = mask[keep], nxt[keep], [rows[j] for j in live]
        mask = torch.cat([mask, mask.new_ones(len(rows), 1)], dim=1)
        logits, cache = decoder.next_logits(nxt, mask, cache)
