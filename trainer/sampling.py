"""One round of batched sampling, shared by the in-process backends (torch, hf).

Given the last logits of the rows still generating, `sample_round` draws one token per
row from softmax(logits / temperature), appends it and its logprob to that row's
`Generation`, and says which rows go on: not those that ended (EOS), hit their budget,
or whose new tokens the stop test accepts. Backends keep their own model calls and KV
caches; this holds only the part that must behave the same in both.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from trainer.rollout import Generation, StopFn


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
