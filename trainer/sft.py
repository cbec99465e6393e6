"""Supervised warm start: maximise the likelihood of traces' mask-1 tokens.

The loss is the mean negative logprob over the traces' trainable tokens (observation
tokens, mask 0, are context only), computed by the backend's `sequence_logprobs` exactly
as the RL loss sees them, with AdamW, linear warm-up then cosine decay, and gradient
clipping. It returns the loss curve; it does not write files or make data.
"""

from __future__ import annotations

import math
import random
from typing import Callable, Sequence

import torch

from trainer.learner import loss_inputs
from trainer.policy import TrainablePolicy
from trainer.rollout import Rollout
from trainer.synthetic import Trace


def learning_rate_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(steps - warmup, 1)
    return peak * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def supervised_train(policy: TrainablePolicy, traces: Sequence[Trace], *, steps: int, batch_size: int,
                     learning_rate: float, seed: int = 0, warmup: int = 50,
                     on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """`steps` optimiser steps over batches drawn without replacement (reshuffled each
    pass); returns each step's loss."""
    model = policy.model
    model.train()
    trained = [p for p in model.parameters() if p.requires_grad]  # all weights, or LoRA adapters only
    optimizer = torch.optim.AdamW(trained, lr=learning_rate, weight_decay=0.01)
    rng = random.Random(seed)
    order: list[int] = []
    losses = []
    for step in range(steps):
        if len(order) < batch_size:
            fresh = list(range(len(traces)))
            rng.shuffle(fresh)
            order += fresh
        batch, order = order[:batch_size], order[batch_size:]
        rollouts = [Rollout(traces[i].prompt, tokens=traces[i].tokens, mask=traces[i].mask,
                            logprobs=[0.0] * len(traces[i].tokens)) for i in batch]
        logprobs, _, mask = loss_inputs(policy, model, rollouts, 1.0)
        loss = -(logprobs * mask).sum() / mask.sum().clamp(min=1)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, steps, learning_rate, warmup)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, losses[-1])
    policy.weights_updated()
    return losses
