"""pass@k of a policy on a set of tasks: sampled rollouts against the server, scored by
the run's reward, summarised with the unbiased pass@k estimator (Codex, Chen et al. 2021).

It changes no weights and writes no files; `python -m trainer eval` and the demo's
before/after figures use it.
"""

from __future__ import annotations

import statistics
from math import comb
from typing import Sequence

from trainer.config import TrainerConfig
from trainer.policy import TrainablePolicy
from trainer.rewards import RewardContext, RewardFn, Task, get_reward
from trainer.rollout import Rollout, RolloutLimits, RolloutLoop
from trainer.tokenizer import Tokenizer
from trainer.wiring import connect, run_policy


def pass_at_k(n: int, correct: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (of which `correct` are
    right) is right: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= samples ({n})")
    if n - correct < k:
        return 1.0
    return 1.0 - comb(n - correct, k) / comb(n, k)


async def evaluate(loop: RolloutLoop, tokenizer: Tokenizer, tasks: Sequence[Task], reward_fn: RewardFn,
                   ctx: RewardContext, *, samples: int, ks: Sequence[int] = (1,), batch_size: int = 64
                   ) -> dict[str, float]:
    """`samples` rollouts per task, `batch_size` rollouts generated at a time. A rollout
    the infrastructure failed counts as wrong and is reported in `unscored`."""
    fmt = ctx.fmt
    jobs = [(t, task) for t, task in enumerate(tasks) for _ in range(samples)]
    rollouts: list[Rollout] = []
    scores: list[float | None] = []
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start:start + batch_size]
        done = await loop.run([tokenizer.prompt_ids(fmt.prompt(task.problem)) for _, task in chunk],
                              [t for t, _ in chunk])
        texts = [r.model_text(tokenizer) for r in done]
        chunk_scores = await reward_fn(texts, [task for _, task in chunk], ctx)
        rollouts += done
        scores += [s if r.scorable else None for r, s in zip(done, chunk_scores)]
    correct = [0] * len(tasks)
    for r, s in zip(rollouts, scores):
        correct[r.group] += int(s is not None and s >= 1.0)
    calls = sum(r.tool_calls for r in rollouts)
    result = {f"pass@{k}": statistics.fmean(pass_at_k(samples, c, k) for c in correct) for k in ks}
    result.update({
        "accuracy": sum(correct) / len(rollouts),
        "tool_use": statistics.fmean(r.tool_calls > 0 for r in rollouts),
        "tool_calls_per_rollout": statistics.fmean(r.tool_calls for r in rollouts),
        "tool_error_rate": sum(r.tool_errors for r in rollouts) / calls if calls else 0.0,
        "unscored": float(sum(s is None for s in scores)),
        "problems": float(len(tasks)),
        "samples": float(samples),
    })
    return result


async def evaluate_config(cfg: TrainerConfig, tasks: Sequence[Task], *, samples: int, ks: Sequence[int] = (1,),
                          policy: TrainablePolicy | None = None, tokenizer: Tokenizer | None = None
                          ) -> dict[str, float]:
    """`evaluate` with the backend, server, limits and reward a `TrainerConfig` names
    (or the policy given), opening its own connection and answer checker."""
    policy, tokenizer = run_policy(cfg, policy, tokenizer)
    async with connect(cfg) as wiring:
        limits = RolloutLimits(cfg.max_tool_calls, cfg.max_completion_tokens, cfg.max_observation_tokens)
        loop = RolloutLoop(policy, wiring.runner, wiring.fmt, tokenizer, limits)
        return await evaluate(loop, tokenizer, tasks, get_reward(cfg.reward), wiring.reward_ctx,
                              samples=samples, ks=ks)
