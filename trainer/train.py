"""The training run: tasks in, a trained policy, `metrics.jsonl`, curves and checkpoints out.

`train` builds the pieces from a `TrainerConfig` (the backend it names, or a policy the
caller built, e.g. after a supervised warm start), resumes from the newest checkpoint in
`out_dir`, and runs `cfg.steps` steps with a progress bar. It does not parse a command
line or start the tool server: the server must already be serving at `cfg.server`.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from trainer.backends import checkpoint_notes
from trainer.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer.config import TrainerConfig
from trainer.learner import Learner
from trainer.policy import TrainablePolicy
from trainer.rewards import Task, task_from_row
from trainer.run_log import RunLog, plot_curves
from trainer.tokenizer import Tokenizer
from trainer.wiring import connect, run_policy


def load_tasks(path: str | Path) -> list[Task]:
    """A JSONL file of {problem, answer} or {problem, tests} rows."""
    lines = Path(path).read_text().splitlines()
    return [task_from_row(json.loads(line)) for line in lines if line.strip()]


def step_tasks(tasks: Sequence[Task], step: int, cfg: TrainerConfig) -> list[Task]:
    """The prompts of a step: a function of (seed, step), so a resumed run sees the
    same data it would have seen without stopping."""
    rng = random.Random(cfg.seed * 1_000_003 + step)
    return rng.sample(list(tasks), min(cfg.prompts_per_step, len(tasks)))


async def train(cfg: TrainerConfig, tasks: Sequence[Task], *, policy: TrainablePolicy | None = None,
                tokenizer: Tokenizer | None = None, progress: bool = True) -> list[dict[str, float]]:
    """Runs steps until `cfg.steps`; returns the metrics of the steps it ran."""
    cfg.validate()
    policy, tokenizer = run_policy(cfg, policy, tokenizer)
    model = policy.model
    out = Path(cfg.out_dir)
    log = RunLog(out)
    ran: list[dict[str, float]] = []
    try:
        async with connect(cfg) as wiring:
            learner = Learner(cfg, policy, tokenizer, wiring.fmt, wiring.runner, wiring.reward_ctx)
            start = 0
            latest = latest_checkpoint(out / "checkpoints")
            if latest is not None:
                start, _ = load_checkpoint(latest, model, learner.optimizer)
                policy.weights_updated()
            notes = {"config": json.dumps(dataclasses.asdict(cfg)), **checkpoint_notes(policy)}
            bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, disable=not progress)
            for step in bar:
                metrics = await learner.step(step_tasks(tasks, step, cfg))
                metrics["tool/infra_errors_total"] = float(wiring.runner.stats.infra_errors)
                log.log(step + 1, metrics)
                ran.append(metrics)
                bar.set_postfix(reward=f"{metrics['reward_mean']:.2f}", calls=f"{metrics['tool_calls_per_rollout']:.1f}")
                done = step + 1
                if done == cfg.steps or (cfg.checkpoint_every and done % cfg.checkpoint_every == 0):
                    save_checkpoint(out / "checkpoints", done, model, learner.optimizer, notes)
    finally:
        log.close()
    plot_curves(log.path, out / "curves.png")
    return ran
