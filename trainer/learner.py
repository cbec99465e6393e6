"""One GRPO / GRPO-RoC step of a trainable policy backend: rollouts, rewards,
down-sampling, advantages, clipped update. Returns the step's metrics.

It wires the other modules together and holds the model's optimiser; it does not write
metrics, checkpoints or curves, load data, or run a training loop (the caller does).
"""

from __future__ import annotations

import copy
import random
import statistics
import time
from typing import Sequence

import torch

from trainer.config import TrainerConfig
from trainer.formats import ToolFormat
from trainer.grpo import clipped_token_loss, dynamic_sampling_keep, group_advantages
from trainer.policy import TrainablePolicy
from trainer.rewards import RewardContext, Task, get_reward
from trainer.roc import roc_downsample
from trainer.rollout import Rollout, RolloutLimits, RolloutLoop, rollout_metrics
from trainer.tokenizer import Tokenizer
from trainer.tool_runner import ToolRunner


def loss_inputs(policy: TrainablePolicy, model: torch.nn.Module, rollouts: Sequence[Rollout], temperature: float
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logprobs under `model` (with gradients), sampling logprobs and the loss mask, each
    [B, C] over the last C positions of left-padded prompt + completion (C: the longest
    completion): only completion tokens the policy generated have mask 1."""
    last = max(len(r.tokens) for r in rollouts)
    logprobs, _ = policy.sequence_logprobs(model, [r.prompt + r.tokens for r in rollouts], temperature, last)
    old = torch.zeros_like(logprobs)
    mask = torch.zeros_like(logprobs)
    for i, r in enumerate(rollouts):
        n = len(r.tokens)
        if n:
            old[i, -n:] = torch.tensor(r.logprobs)
            mask[i, -n:] = torch.tensor(r.mask, dtype=mask.dtype)
    return logprobs, old, mask


class Learner:
    def __init__(self, cfg: TrainerConfig, policy: TrainablePolicy, tokenizer: Tokenizer, fmt: ToolFormat,
                 runner: ToolRunner, reward_ctx: RewardContext) -> None:
        cfg.validate()
        self.cfg = cfg
        self.policy = policy
        self.model = policy.model
        self.tokenizer = tokenizer
        self.fmt = fmt
        self.reward_ctx = reward_ctx
        self.reward_fn = get_reward(cfg.reward)
        self.rng = random.Random(cfg.seed)
        limits = RolloutLimits(cfg.max_tool_calls, cfg.max_completion_tokens, cfg.max_observation_tokens)
        self.loop = RolloutLoop(self.policy, runner, fmt, tokenizer, limits)
        self.trained = [p for p in self.model.parameters() if p.requires_grad]  # all, or LoRA adapters only
        self.optimizer = torch.optim.AdamW(self.trained, lr=cfg.learning_rate)
        self.reference = copy.deepcopy(self.model).eval() if cfg.kl_coef > 0 else None

    async def step(self, tasks: Sequence[Task]) -> dict[str, float]:
        """One step; its metrics include where its time went: `step_seconds`, and of it
        `rollout/seconds` (sampling and tool calls), `reward/seconds`, `train/seconds`,
        and the tokens the policy generated per second of rollout."""
        cfg = self.cfg
        started = time.monotonic()
        n = cfg.rollouts_per_prompt
        prompts = [self.tokenizer.prompt_ids(self.fmt.prompt(t.problem)) for t in tasks]
        longest = max(len(p) for p in prompts) + cfg.max_completion_tokens
        if longest > self.policy.max_len:
            raise ValueError(f"a prompt plus max_completion_tokens is {longest} tokens, over the model's "
                             f"max_len {self.policy.max_len}")
        rollouts = await self.loop.run([p for p in prompts for _ in range(n)],
                                       [g for g in range(len(tasks)) for _ in range(n)])
        rolled = time.monotonic()
        scores = await self.reward_fn([r.model_text(self.tokenizer) for r in rollouts],
                                      [t for t in tasks for _ in range(n)], self.reward_ctx)
        scored_at = time.monotonic()
        for r, score in zip(rollouts, scores):
            r.reward = score if r.scorable else None
        metrics = rollout_metrics(rollouts)
        scored = [r.reward for r in rollouts if r.reward is not None]
        metrics["reward_mean"] = statistics.fmean(scored) if scored else 0.0
        metrics["accuracy"] = sum(s >= 1.0 for s in scored) / len(scored) if scored else 0.0
        metrics["reward/unscored"] = float(len(rollouts) - len(scored))
        kept = rollouts
        if cfg.roc:
            kept, roc_metrics = roc_downsample(rollouts, cfg.group_size, self.rng,
                                               no_tool_penalty=cfg.roc_no_tool_penalty,
                                               format_penalty=cfg.roc_format_penalty)
            metrics.update(roc_metrics)
        rewards = [r.reward for r in kept]
        advantages = group_advantages(rewards, cfg.group_size, scale_by_std=cfg.scale_by_std)
        if cfg.dynamic_sampling:
            keep = dynamic_sampling_keep(rewards, cfg.group_size)
            kept = [r for r, k in zip(kept, keep) if k]
            advantages = [a for a, k in zip(advantages, keep) if k]
        metrics["train/rollouts"] = float(len(kept))
        if kept:
            metrics.update(self.update(kept, torch.tensor(advantages)))
        done = time.monotonic()
        generated = sum(sum(r.mask) for r in rollouts)
        metrics.update({"step_seconds": done - started, "rollout/seconds": rolled - started,
                        "rollout/generated_tokens_per_s": generated / max(rolled - started, 1e-9),
                        "reward/seconds": scored_at - rolled, "train/seconds": done - scored_at})
        return metrics

    def update(self, rollouts: Sequence[Rollout], advantages: torch.Tensor) -> dict[str, float]:
        """`updates_per_step` optimiser steps on the batch. Gradients accumulate over
        micro-batches, each loss weighted by its share of the batch's trainable tokens,
        so the step equals one token-level loss over the whole batch."""
        self.model.train()
        size = self.cfg.micro_batch_size
        chunks = [range(i, min(i + size, len(rollouts))) for i in range(0, len(rollouts), size)]
        total = max(sum(sum(r.mask) for r in rollouts), 1)
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.updates_per_step):
            self.optimizer.zero_grad()
            sums: dict[str, float] = {}
            for chunk in chunks:
                part = [rollouts[i] for i in chunk]
                logprobs, old, mask = loss_inputs(self.policy, self.model, part, self.cfg.temperature)
                reference = None
                if self.reference is not None:
                    with torch.no_grad():
                        reference = loss_inputs(self.policy, self.reference, part, self.cfg.temperature)[0]
                part_advantages = advantages[chunk.start:chunk.stop].to(logprobs.device)  # the model's device
                loss, parts = clipped_token_loss(logprobs, old, part_advantages, mask,
                                                 clip_low=self.cfg.clip_low, clip_high=self.cfg.clip_high,
                                                 ref_logprobs=reference, kl_coef=self.cfg.kl_coef)
                weight = float(mask.sum()) / total
                (loss * weight).backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
                for k, v in parts.items():
                    sums[k] = sums.get(k, 0.0) + v * weight
            metrics = {f"train/{k}": v for k, v in sums.items()}
            metrics["train/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.trained, 1.0))
            self.optimizer.step()
            self.policy.weights_updated()
        return metrics
