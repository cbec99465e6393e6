"""A small decoder-only transformer in torch, and a KV-cache sampler over it that
implements `rollout.Policy`: the CPU default policy of the trainer.

`TorchPolicy.generate` samples a batch of contexts together (left-padded, one KV cache)
and returns each new token's logprob under the sampling distribution (logits divided by
the temperature); `token_logprobs` recomputes the same quantity with gradients for the
loss. torch's thread count is set explicitly (`threads`): at its default, torch on a
2-core machine shared with the tool server is many times slower. This module does not
load pretrained weights or tokenizers (a Hugging Face backend does that).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from trainer.rollout import Generation, StopFn
from trainer.sampling import sample_batch


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 257      # ByteTokenizer: 256 bytes + EOS
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    max_len: int = 2048        # prompt plus completion
    pad_id: int = 0            # left padding of a batch; masked out of attention


KVCache = list[tuple[torch.Tensor, torch.Tensor]]


class Block(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)

        def heads(z: torch.Tensor) -> torch.Tensor:
            return z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), (k, v)


class TinyTransformer(nn.Module):
    def __init__(self, cfg: TinyConfig = TinyConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor, key_mask: torch.Tensor, cache: KVCache | None = None
                ) -> tuple[torch.Tensor, KVCache]:
        """Logits of `ids` [B, T] that follow the cache. `key_mask` [B, S] marks the real
        (non-padding) tokens of cache plus ids; positions count real tokens only."""
        b, t = ids.shape
        s = key_mask.shape[1]
        positions = (key_mask.long().cumsum(dim=1) - 1).clamp(min=0)[:, s - t:]
        if int(positions.max()) >= self.cfg.max_len:
            raise ValueError(f"context longer than max_len={self.cfg.max_len}")
        causal = torch.ones(t, s, dtype=torch.bool, device=ids.device).tril(diagonal=s - t)
        allowed = (causal.unsqueeze(0) & key_mask.bool().unsqueeze(1)).unsqueeze(1)
        allowed = allowed | ~allowed.any(dim=-1, keepdim=True)  # a padding query attends to all: no NaN
        x = self.tok(ids) + self.pos(positions)
        new_cache: KVCache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, allowed, cache[i] if cache is not None else None)
            new_cache.append(kv)
        return self.head(self.ln(x)), new_cache


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], dtype=torch.long)
    return ids, mask


def token_logprobs(model: TinyTransformer, seqs: Sequence[Sequence[int]], temperature: float = 1.0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of every token given the ones before it, with gradients: [B, L-1] for
    left-padded sequences of width L, and the matching real-token mask."""
    ids, mask = left_pad(seqs, model.cfg.pad_id)
    logits, _ = model(ids, mask)
    logp = F.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
    return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1), mask[:, 1:] * mask[:, :-1]


class TorchPolicy:
    """`policy.TrainablePolicy` over a TinyTransformer: batched sampling with a KV cache
    (`sampling.sample_batch`, this policy its `Decoder`)."""

    def __init__(self, model: TinyTransformer, eos_id: int, *, temperature: float = 1.0, threads: int = 1,
                 seed: int = 0) -> None:
        torch.set_num_threads(threads)
        self.model = model
        self.eos_id = eos_id
        self.temperature = temperature
        self.generator = torch.Generator().manual_seed(seed)
        self.max_len = model.cfg.max_len

    def sequence_logprobs(self, model: torch.nn.Module, seqs: Sequence[Sequence[int]], temperature: float,
                          last: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        assert isinstance(model, TinyTransformer)
        logprobs, mask = token_logprobs(model, seqs, temperature)
        start = 0 if last is None else max(logprobs.shape[1] - last, 0)
        return logprobs[:, start:], mask[:, start:]

    def weights_updated(self) -> None:
        """Sampling reads the same module the optimiser updates: nothing to copy."""

    def generate(self, contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int]) -> list[Generation]:
        self.model.eval()
        return sample_batch(self, contexts, stop, max_new_tokens, temperature=self.temperature,
                            generator=self.generator, eos_id=self.eos_id)

    def first_logits(self, contexts: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, KVCache]:
        ids, mask = left_pad(contexts, self.model.cfg.pad_id)
        logits, cache = self.model(ids, mask)
        return logits[:, -1], mask, cache

    def next_logits(self, ids: torch.Tensor, mask: torch.Tensor, cache: KVCache) -> tuple[torch.Tensor, KVCache]:
        logits, cache = self.model(ids, mask, cache)
        return logits[:, -1], cache

    def select_rows(self, cache: KVCache, keep: torch.Tensor) -> KVCache:
        return [(k[keep], v[keep]) for k, v in cache]


def default_model(vocab_size: int, seed: int = 0) -> TinyTransformer:
    """The CPU default model with freshly initialised weights (seeded)."""
    torch.manual_seed(seed)
    return TinyTransformer(TinyConfig(vocab_size=vocab_size))
