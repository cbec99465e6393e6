"""A whole training recipe: a supervised warm start on tool-use traces the project makes,
then GRPO-RoC against the real tool server, with held-out accuracy measured on the way.

`run_recipe` takes any trainable policy (the demo's byte-level transformer, a Hugging
Face model such as SmolLM2-135M-Instruct) and: makes arithmetic problems it cannot do in
its head but can with code (`synthetic`), measures held-out accuracy of the untrained
model (optional), warm-starts it on traces in its own prompt format (its chat template
for an instruct model), measures again, runs the RL steps, measures again, and
optionally measures a slice of CHAMP before and after RL. Everything lands in the output
directory: `metrics.jsonl` (with `step_seconds`), `summary.json`, `curves.png`,
`sft_loss.png`, the warm-start and final checkpoints. `load_recipe` reads a recipe TOML:
`TrainerConfig` keys at the top level and the tables `[problems]`, `[warm_start]`,
`[held_out]`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from trainer.backends import build_policy, checkpoint_notes
from trainer.checkpoint import save_checkpoint
from trainer.config import ConfigError, TrainerConfig, config_from_mapping, read_toml
from trainer.evaluate import evaluate_config
from trainer.formats import get_format
from trainer.local_server import local_server
from trainer.policy import TrainablePolicy
from trainer.rewards import Task, task_from_row
from trainer.run_log import plot_series
from trainer.sft import supervised_train
from trainer.synthetic import DEMO_KINDS, KINDS, train_and_heldout, warm_start_traces
from trainer.tokenizer import Tokenizer
from trainer.train import train


@dataclass(frozen=True)
class Problems:
    kinds: tuple[str, ...] = DEMO_KINDS   # see synthetic.KINDS
    train: int = 4000
    held_out: int = 100


@dataclass(frozen=True)
class WarmStart:
    tool_share: float = 0.3     # share of traces that use the tool; the rest answer at once
    steps: int = 1000
    batch_size: int = 32
    learning_rate: float = 2e-3
    warmup: int = 50


@dataclass(frozen=True)
class HeldOut:
    samples: int = 4                # sampled rollouts per held-out problem
    untrained: bool = False         # also measure the model before the warm start
    champ_problems: int = 0         # first N CHAMP problems (champ-dataset) before and after RL; 0: none
    champ_samples: int = 2


@dataclass(frozen=True)
class Recipe:
    rl: TrainerConfig
    problems: Problems = Problems()
    warm_start: WarmStart = WarmStart()
    held_out: HeldOut = HeldOut()


TABLES: dict[str, type] = {"problems": Problems, "warm_start": WarmStart, "held_out": HeldOut}


def _table(name: str, values: Any) -> Any:
    kind = TABLES[name]
    if not isinstance(values, dict):
        raise ConfigError(f"[{name}] must be a table")
    known = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - known.keys())
    if unknown:
        raise ConfigError(f"unknown [{name}] keys: {', '.join(unknown)}")
    typed = {}
    for key, value in values.items():
        default = known[key].default
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"[{name}] {key}: expected a list of strings, got {value!r}")
            value = tuple(value)
        elif isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif type(value) is not type(default):
            raise ConfigError(f"[{name}] {key}: expected {type(default).__name__}, got {value!r}")
        typed[key] = value
    return kind(**typed)


def load_recipe(path: str | os.PathLike[str], **overrides: Any) -> Recipe:
    """The recipe TOML at `path`; `overrides` are TrainerConfig fields (None: not given)."""
    values = read_toml(path, "recipe")
    tables = {name: _table(name, values.pop(name)) for name in TABLES if name in values}
    recipe = Recipe(rl=config_from_mapping(values, **overrides), **tables)
    if recipe.problems.train < 1 or recipe.problems.held_out < 1:
        raise ConfigError("[problems] train and held_out must be at least 1")
    unknown = sorted(set(recipe.problems.kinds) - KINDS.keys())
    if unknown or not recipe.problems.kinds:
        raise ConfigError(f"[problems] kinds: {unknown or 'none given'}; known: {', '.join(sorted(KINDS))}")
    if not 0.0 <= recipe.warm_start.tool_share <= 1.0:
        raise ConfigError("[warm_start] tool_share must lie in [0, 1]")
    return recipe


def run_recipe(recipe: Recipe, out: Path, *, server: str | None = None, policy: TrainablePolicy | None = None,
               tokenizer: Tokenizer | None = None, progress: bool = True) -> dict[str, Any]:
    """Runs the recipe with `policy` (default: the backend `recipe.rl` names) against
    `server` (default: a tool server started for the run); returns (and writes) the
    summary. A recipe run is fresh: it never resumes an earlier run in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.jsonl").unlink(missing_ok=True)
    shutil.rmtree(out / "checkpoints", ignore_errors=True)
    started = time.monotonic()
    say: Callable[..., None] = partial(print, file=sys.stderr, flush=True) if progress else (lambda *_: None)
    rl = dataclasses.replace(recipe.rl, out_dir=str(out), reward="math")
    if policy is None or tokenizer is None:
        policy, tokenizer = build_policy(rl)
    say(f"model loaded in {time.monotonic() - started:.0f} s")
    fmt = get_format(rl.format, rl.instructions)
    train_set, held_out = train_and_heldout(recipe.problems.train, recipe.problems.held_out, rl.seed,
                                            recipe.problems.kinds)
    warm = recipe.warm_start
    traces = warm_start_traces(train_set, fmt, tokenizer, tool_share=warm.tool_share,
                               observation_budget=rl.max_observation_tokens, seed=rl.seed)
    tasks = [p.task() for p in held_out]
    champ = champ_tasks(recipe.held_out.champ_problems)
    seconds: dict[str, float] = {}
    summary: dict[str, Any] = {}
    server_cm = nullcontext(server) if server else local_server(out / "server")
    with server_cm as target:
        rl = dataclasses.replace(rl, server=target)

        def measure(name: str, on: list[Task], samples: int) -> dict[str, float]:
            began = time.monotonic()
            result = asyncio.run(evaluate_config(rl, on, samples=samples, ks=(1, samples), policy=policy,
                                                 tokenizer=tokenizer))
            seconds[name] = round(time.monotonic() - began, 1)
            say(f"{name}: accuracy {result['accuracy']:.3f}, tool use {result['tool_use']:.2f}, "
                f"tool errors {result['tool_error_rate']:.2f} ({seconds[name]:.0f} s)")
            summary[name] = result
            return result

        if recipe.held_out.untrained:
            measure("eval_untrained", tasks, recipe.held_out.samples)
        say(f"warm start: {warm.steps} supervised steps on {len(traces)} traces "
            f"({warm.tool_share:.0%} use the tool)")
        began = time.monotonic()
        losses = supervised_train(policy, traces, steps=warm.steps, batch_size=warm.batch_size,
                                  learning_rate=warm.learning_rate, seed=rl.seed, warmup=warm.warmup,
                                  on_step=lambda s, loss: say(f"  step {s + 1}: loss {loss:.3f}")
                                  if (s + 1) % max(warm.steps // 10, 1) == 0 else None)
        seconds["warm_start"] = round(time.monotonic() - began, 1)
        plot_series({"supervised loss": list(enumerate(losses, 1))}, out / "sft_loss.png")
        save_checkpoint(out / "warm_start", warm.steps, policy.model, None, checkpoint_notes(policy))
        before = measure("eval_before", tasks, recipe.held_out.samples)
        if champ:
            measure("champ_before", champ, recipe.held_out.champ_samples)
        began = time.monotonic()
        metrics = asyncio.run(train(rl, [p.task() for p in train_set], policy=policy, tokenizer=tokenizer,
                                    progress=progress))
        seconds["rl"] = round(time.monotonic() - began, 1)
        after = measure("eval_after", tasks, recipe.held_out.samples)
        if champ:
            measure("champ_after", champ, recipe.held_out.champ_samples)
    seconds["total"] = round(time.monotonic() - started, 1)
    step_seconds = [m["step_seconds"] for m in metrics]
    summary.update({
        "accuracy_gain": after["accuracy"] - before["accuracy"],
        "seconds": seconds,
        "rl_step_seconds_mean": sum(step_seconds) / len(step_seconds) if step_seconds else None,
        "warm_start": {**dataclasses.asdict(warm), "traces": len(traces),
                       "final_loss": losses[-1] if losses else None},
        "problems": dataclasses.asdict(recipe.problems),
        "rl_config": dataclasses.asdict(rl),
        "threads": rl.torch_threads,
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def champ_tasks(count: int) -> list[Task]:
    """The first `count` CHAMP problems (none when 0)."""
    if count <= 0:
        return []
    from trainer.datasets import champ_rows
    return [task_from_row({"problem": r["problem"], "answer": r["answer"]}) for r in champ_rows()[:count]]

