"""GRPO's pieces as functions: group-normalised advantages, dynamic sampling, and the
token-level PPO clipped loss with clip-higher and an optional k3 KL penalty.

Rollouts of one prompt sit next to each other (`group_size` in a row). No model, no
optimiser, no data here: the caller computes logprobs and steps the optimiser.
"""

from __future__ import annotations

import statistics
from typing import Sequence, TypeVar

import torch

T = TypeVar("T")


def _groups(values: Sequence[T], group_size: int) -> list[Sequence[T]]:
    if group_size < 1 or len(values) % group_size:
        raise ValueError(f"{len(values)} rollouts do not split into groups of {group_size}")
    return [values[i:i + group_size] for i in range(0, len(values), group_size)]


def group_advantages(rewards: Sequence[float | None], group_size: int, *, scale_by_std: bool = True,
                     eps: float = 1e-6) -> list[float]:
    """(r - mean) / (std + eps) within each group (GRPO); without the division when
    `scale_by_std` is False (Dr. GRPO). An unscored rollout (None: the infrastructure
    failed) gets advantage 0 and is left out of its group's statistics."""
    out: list[float] = []
    for group in _groups(rewards, group_size):
        scored = [r for r in group if r is not None]
        mean = statistics.fmean(scored) if scored else 0.0
        std = statistics.pstdev(scored) if len(scored) > 1 else 0.0
        for r in group:
            if r is None:
                out.append(0.0)
            else:
                out.append((r - mean) / (std + eps) if scale_by_std else r - mean)
    return out


def dynamic_sampling_keep(rewards: Sequence[float | None], group_size: int) -> list[bool]:
    """Per rollout: False when its group's scored rewards are all equal (no gradient;
    DAPO drops such groups)."""
    keep: list[bool] = []
    for group in _groups(rewards, group_size):
        scored = {r for r in group if r is not None}
        keep.extend([len(scored) > 1] * len(group))
    return keep


def clipped_token_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor,
                       mask: torch.Tensor, *, clip_low: float = 0.2, clip_high: float = 0.28,
                       ref_logprobs: torch.Tensor | None = None, kl_coef: float = 0.0
                       ) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate, averaged over every trainable token of the batch (token
    level, DAPO), with the ratio clipped to [1 - clip_low, 1 + clip_high] (clip-higher).

    Shapes: logprobs, old_logprobs, mask, ref_logprobs [B, T]; advantages [B]. `mask` is
    1 on tokens the policy generated and 0 on prompt, observation and padding tokens.
    With `kl_coef` > 0, adds kl_coef * the k3 estimate of KL(policy || reference)."""
    mask = mask.to(logprobs.dtype)
    tokens = mask.sum().clamp(min=1.0)
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    surrogate = torch.minimum(unclipped, clipped)
    loss = -(surrogate * mask).sum() / tokens
    with torch.no_grad():
        was_clipped = ((clipped < unclipped).to(mask.dtype) * mask).sum() / tokens
        metrics = {"clip_fraction": float(was_clipped), "ratio_mean": float((ratio * mask).sum() / tokens),
                   "policy_loss": float(loss.detach())}
    if kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs")
        delta = ref_logprobs - logprobs
        kl = ((torch.exp(delta) - delta - 1.0) * mask).sum() / tokens
        loss = loss + kl_coef * kl
        metrics["kl"] = float(kl.detach())
    return loss, metrics
