from __future__ import annotations

import random
from dataclasses import dataclass

from trainer.roc import roc_downsample, roc_penalty


@dataclass
class Item:
    group: int
    reward: float | None
    tool_calls: int = 1
    tool_errors: int = 0
    format_errors: int = 0
    name: str = ""


def test_penalty_terms():
    assert roc_penalty(Item(0, 1.0, tool_calls=4, tool_errors=1)) == 0.25
    assert roc_penalty(Item(0, 1.0, tool_calls=0)) == 0.5
    assert roc_penalty(Item(0, 1.0, tool_calls=2, format_errors=1)) == 1.0


def test_keeps_g_per_group_preferring_clean_successes():
    group = [Item(0, 1.0, 2, 2, name="s_bad"), Item(0, 1.0, 2, 0, name="s_clean"), Item(0, 1.0, 0, name="s_notool"),
             Item(0, 1.0, 2, 1, name="s_half"), Item(0, 0.0, name="f1"), Item(0, 0.0, name="f2"),
             Item(0, 0.0, name="f3"), Item(0, 0.0, name="f4")]
    kept, metrics = roc_downsample(group, 4, random.Random(0))
    names = [it.name for it in kept]
    assert len(kept) == 4
    assert sorted(n for n in names if n.startswith("s")) == ["s_clean", "s_half"]
    assert sum(n.startswith("f") for n in names) == 2
    assert metrics["roc/success_penalty_kept"] < metrics["roc/success_penalty_sampled"]
    assert metrics["roc/success_rate_kept"] == metrics["roc/success_rate_sampled"] == 0.5


def test_failures_are_sampled_uniformly():
    group = [Item(0, 0.0, name=str(i)) for i in range(4)]
    seen = {tuple(sorted(it.name for it in roc_downsample(group, 2, random.Random(seed))[0])) for seed in range(40)}
    assert len(seen) == 6


def test_groups_stay_contiguous_and_unscored_only_fill():
    batch = [Item(g, r) for g in (0, 1) for r in (1.0, 0.0, None, None)]
    kept, metrics = roc_downsample(batch, 2, random.Random(1))
    assert [it.group for it in kept] == [0, 0, 1, 1]
    assert all(it.reward is not None for it in kept)
    all_unscored = [Item(5, None) for _ in range(4)]
    kept, _ = roc_downsample(all_unscored, 2, random.Random(1))
    assert len(kept) == 2


def test_pure_and_deterministic_for_a_seed():
    batch = [Item(0, float(i % 2), tool_calls=i) for i in range(8)]
    before = list(batch)
    a, _ = roc_downsample(batch, 4, random.Random(7))
    b, _ = roc_downsample(batch, 4, random.Random(7))
    assert a == b and batch == before
