"""GRPO-RoC down-sampling (rStar2-Agent, "Resample-on-Correct"), as one pure function.

Each prompt's group was oversampled (e.g. 2G rollouts); `roc_downsample` keeps G of
them. Failures are kept uniformly at random (they show the model every kind of mistake);
successes are kept preferring the lowest penalty: the share of tool calls that failed
(`no_tool_penalty`, 0.5, when no tool was used) plus `format_penalty` when the rollout
had a format error. The kept mix keeps the group's success rate. Rollouts the
infrastructure failed (reward None) are kept only to fill a group. Nothing is mutated.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from typing import Protocol, Sequence, TypeVar

SUCCESS = 1.0


class RocItem(Protocol):
    group: int
    reward: float | None
    tool_calls: int
    tool_errors: int
    format_errors: int


T = TypeVar("T", bound=RocItem)


def roc_penalty(item: RocItem, *, no_tool_penalty: float = 0.5, format_penalty: float = 1.0) -> float:
    tool = item.tool_errors / item.tool_calls if item.tool_calls else no_tool_penalty
    return tool + (format_penalty if item.format_errors else 0.0)


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else 0.0


def roc_downsample(batch: Sequence[T], group_size: int, rng: random.Random, *, no_tool_penalty: float = 0.5,
                   format_penalty: float = 1.0) -> tuple[list[T], dict[str, float]]:
    """Keep `group_size` rollouts of each group (items share `group`); returns the kept
    items, group by group in first-seen order, and metrics of the selection."""
    groups: dict[int, list[T]] = defaultdict(list)
    for item in batch:
        groups[item.group].append(item)

    def penalty(item: RocItem) -> float:
        return roc_penalty(item, no_tool_penalty=no_tool_penalty, format_penalty=format_penalty)

    kept: list[T] = []
    for items in groups.values():
        successes = [it for it in items if it.reward is not None and it.reward >= SUCCESS]
        failures = [it for it in items if it.reward is not None and it.reward < SUCCESS]
        unscored = [it for it in items if it.reward is None]
        n = min(group_size, len(items))
        scored = len(successes) + len(failures)
        want_success = round(n * len(successes) / scored) if scored else 0
        ranked = sorted(successes, key=lambda it: (penalty(it), rng.random()))
        shuffled = rng.sample(failures, len(failures))
        take_s = min(want_success, len(ranked))
        take_f = min(n - take_s, len(shuffled))
        take_s = min(n - take_f, len(ranked))
        chosen = ranked[:take_s] + shuffled[:take_f]
        chosen += rng.sample(unscored, min(n - len(chosen), len(unscored)))
        kept.extend(chosen)
    all_s = [it for it in batch if it.reward is not None and it.reward >= SUCCESS]
    kept_s = [it for it in kept if it.reward is not None and it.reward >= SUCCESS]
    metrics = {
        "roc/groups": float(len(groups)),
        "roc/sampled": float(len(batch)),
        "roc/kept": float(len(kept)),
        "roc/success_rate_sampled": len(all_s) / len(batch) if batch else 0.0,
        "roc/success_rate_kept": len(kept_s) / len(kept) if kept else 0.0,
        "roc/success_penalty_sampled": _mean([penalty(it) for it in all_s]),
        "roc/success_penalty_kept": _mean([penalty(it) for it in kept_s]),
    }
    return kept, metrics
