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

import asyncio
import dataclasses
import json
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainer.backends import tiny_notes
from trainer.checkpoint import save_checkpoint
from trainer.config import TrainerConfig
from trainer.evaluate import evaluate_config
from trainer.formats import get_format
from trainer.local_server import local_server
from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy
from trainer.run_log import plot_series
from trainer.sft import supervised_train
from trainer.synthetic import train_and_heldout, warm_start_traces
from trainer.tokenizer import ByteTokenizer
from trainer.train import train


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
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "metrics.jsonl").unlink(missing_ok=True)  # a demo is a fresh run: it never resumes
    shutil.rmtree(cfg.out / "checkpoints", ignore_errors=True)
    started = time.monotonic()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    tokenizer = ByteTokenizer()
    fmt = get_format(cfg.rl.format, cfg.rl.instructions)
    train_set, heldout = train_and_heldout(cfg.train_problems, cfg.heldout_problems, cfg.seed)
    traces = warm_start_traces(train_set, fmt, tokenizer, tool_share=cfg.tool_share,
                               observation_budget=cfg.rl.max_observation_tokens, seed=cfg.seed)
    model = TinyTransformer(dataclasses.replace(cfg.model, vocab_size=tokenizer.vocab_size))
    policy = TorchPolicy(model, tokenizer.eos_id, temperature=cfg.rl.temperature, threads=cfg.threads,
                         seed=cfg.seed)
    say = print if progress else (lambda *_: None)
    say(f"warm start: {cfg.sft_steps} supervised steps on {len(traces)} traces "
        f"({cfg.tool_share:.0%} use the tool), {sum(p.numel() for p in model.parameters()):,} weights")
    losses = supervised_train(policy, traces, steps=cfg.sft_steps, batch_size=cfg.sft_batch,
                              learning_rate=cfg.sft_learning_rate, seed=cfg.seed,
                              on_step=lambda s, loss: say(f"  step {s + 1}: loss {loss:.3f}")
                              if (s + 1) % 100 == 0 else None)
    plot_series({"supervised loss": list(enumerate(losses, 1))}, cfg.out / "sft_loss.png")
    save_checkpoint(cfg.out / "warm_start", cfg.sft_steps, model, None, tiny_notes(model))
    sft_s = time.monotonic() - started
    rl_cfg = dataclasses.replace(cfg.rl, out_dir=str(cfg.out), seed=cfg.seed, torch_threads=cfg.threads)
    tasks = [p.task() for p in heldout]
    server_cm = nullcontext(cfg.server) if cfg.server else local_server(cfg.out / "server")
    with server_cm as server:
        rl_cfg = dataclasses.replace(rl_cfg, server=server, reward="math")
        held_out = lambda: asyncio.run(evaluate_config(rl_cfg, tasks, samples=cfg.eval_samples,
                                                       ks=(1, cfg.eval_samples), policy=policy, tokenizer=tokenizer))
        before = held_out()
        say(f"held-out before RL: accuracy {before['accuracy']:.3f}, tool use {before['tool_use']:.2f}")
        rl_started = time.monotonic()
        asyncio.run(train(rl_cfg, [p.task() for p in train_set], policy=policy, tokenizer=tokenizer,
                          progress=progress))
        rl_s = time.monotonic() - rl_started
        after = held_out()
        say(f"held-out after RL: accuracy {after['accuracy']:.3f}, tool use {after['tool_use']:.2f}")
    summary = {
        "eval_before": before,
        "eval_after": after,
        "accuracy_gain": after["accuracy"] - before["accuracy"],
        "seconds": {"warm_start": round(sft_s, 1), "rl": round(rl_s, 1),
                    "total": round(time.monotonic() - started, 1)},
        "warm_start": {"steps": cfg.sft_steps, "traces": len(traces), "tool_share": cfg.tool_share,
                       "final_loss": losses[-1] if losses else None},
        "model": dataclasses.asdict(model.cfg),
        "rl_config": dataclasses.asdict(rl_cfg),
        "threads": cfg.threads,
    }
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
