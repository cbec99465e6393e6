"""`python -m trainer demo`: shows on a 2-core CPU, in minutes, that the RL loop learns.

The run: make arithmetic problems a small model cannot do in its head but can with
code (`synthetic`); build a small byte-level transformer; warm-start it by supervised
training on traces in the tool protocol, only some of which use the tool; measure
held-out accuracy; run GRPO-RoC against the real tool server; measure again. What it
shows is the RL signal at work: rollouts that call the tool are right, so the policy
learns to call it, and held-out accuracy rises. Everything lands in the output
directory: `metrics.jsonl`, `summary.json`, `curves.png`, `sft_loss.png`, checkpoints.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainer.config import TrainerConfig
from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy
from trainer.recipe import HeldOut, Problems, Recipe, WarmStart, run_recipe
from trainer.synthetic import DEMO_KINDS
from trainer.tokenizer import ByteTokenizer


def demo_rl_config() -> TrainerConfig:
    """The RL half of the demo: GRPO-RoC as in rStar2-Agent, sized for a 2-core CPU. The
    learning rate suits a model this small (the papers' 1e-6 is for billions of weights)."""
    return TrainerConfig(instructions=False, steps=40, prompts_per_step=8, group_size=8, roc=True, roc_oversample=2,
                         learning_rate=2e-4, max_tool_calls=2, max_completion_tokens=96,
                         max_observation_tokens=32, micro_batch_size=64, checkpoint_every=0,
                         tool_timeout_ms=5000)


@dataclass(frozen=True)
class DemoConfig:
    out: Path
    server: str | None = None          # None: start a local tool server for the run
    seed: int = 0
    threads: int = 1                   # torch threads; the tool server uses the other core
    train_problems: int = 4000
    heldout_problems: int = 100
    tool_share: float = 0.3            # share of warm-start traces that use the tool
    sft_steps: int = 1000
    sft_batch: int = 32
    sft_learning_rate: float = 2e-3
    eval_samples: int = 4              # sampled rollouts per held-out problem (temperature 1)
    model: TinyConfig = TinyConfig(d_model=128, n_layers=2, n_heads=4, max_len=320)
    rl: TrainerConfig = field(default_factory=demo_rl_config)


def run_demo(cfg: DemoConfig, *, progress: bool = True) -> dict[str, Any]:
    """Runs the whole demo; returns (and writes) the summary."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    tokenizer = ByteTokenizer()
    model = TinyTransformer(dataclasses.replace(cfg.model, vocab_size=tokenizer.vocab_size))
    policy = TorchPolicy(model, tokenizer.eos_id, temperature=cfg.rl.temperature, threads=cfg.threads,
                         seed=cfg.seed)
    if progress:
        print(f"{sum(p.numel() for p in model.parameters()):,} weights", file=sys.stderr)
    recipe = Recipe(rl=dataclasses.replace(cfg.rl, seed=cfg.seed, torch_threads=cfg.threads),
                    problems=Problems(DEMO_KINDS, cfg.train_problems, cfg.heldout_problems),
                    warm_start=WarmStart(cfg.tool_share, cfg.sft_steps, cfg.sft_batch, cfg.sft_learning_rate),
                    held_out=HeldOut(samples=cfg.eval_samples))
    summary = run_recipe(recipe, cfg.out, server=cfg.server, policy=policy, tokenizer=tokenizer, progress=progress)
    summary["model"] = dataclasses.asdict(model.cfg)
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
