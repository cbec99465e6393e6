"""`python -m trainer demo | recipe | train | eval | dataset`: the trainer's command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from trainer.config import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trainer", description="Tool-integrated RL against the tool server")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="show on a CPU, in minutes, that RL with the tool raises held-out accuracy")
    demo.add_argument("--out", required=True, type=Path, help="directory of metrics.jsonl, summary.json, curves")
    demo.add_argument("--server", help="tool server target; default: start one for the run")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--threads", type=int, default=1, help="torch threads (the tool server needs a core too)")
    demo.add_argument("--steps", type=int, help="RL steps (default 40)")
    demo.add_argument("--sft-steps", type=int, help="supervised warm-start steps (default 1000)")
    demo.add_argument("--heldout", type=int, help="held-out problems (default 100)")

    recipe = sub.add_parser("recipe", help="warm start, then RL, with held-out accuracy before and after "
                                           "(e.g. examples/smollm2_tool_use.toml)")
    recipe.add_argument("--config", required=True, help="recipe TOML: TrainerConfig keys and the tables "
                                                        "[problems], [warm_start], [held_out] (trainer/recipe.py)")
    recipe.add_argument("--server", help="tool server target; default: start one for the run")
    recipe.add_argument("--out", dest="out_dir", help="output directory (default: the config's out_dir)")
    recipe.add_argument("--steps", type=int, help="RL steps")
    recipe.add_argument("--threads", dest="torch_threads", type=int)

    for name, text in (("train", "RL on a JSONL dataset with any backend"),
                       ("eval", "pass@k of a policy on a JSONL dataset")):
        command = sub.add_parser(name, help=text)
        command.add_argument("--config", help="TOML of TrainerConfig fields (see trainer/config.py)")
        command.add_argument("--dataset", help="JSONL of {problem, answer} or {problem, tests} rows")
        command.add_argument("--backend", choices=("torch", "hf", "vllm"))
        command.add_argument("--model", help="'tiny', a checkpoint, a model directory or .gguf, or 'smollm2'")
        command.add_argument("--device")
        command.add_argument("--server", help="tool server target")
        command.add_argument("--local-server", action="store_true",
                             help="start a tool server for the run (slot users 59-63) instead of --server")
        command.add_argument("--out", dest="out_dir", help="output directory")
        command.add_argument("--steps", type=int)
        command.add_argument("--threads", dest="torch_threads", type=int)
    dataset = sub.add_parser("dataset", help="export a dataset a registry package ships as JSONL rows")
    dataset.add_argument("name", choices=("champ",))
    dataset.add_argument("out", type=Path)

    evaluate = sub.choices["eval"]
    evaluate.add_argument("--samples", type=int, default=4, help="rollouts per problem")
    evaluate.add_argument("--k", default="1", help="comma-separated k of pass@k, each at most --samples")
    evaluate.add_argument("--limit", type=int, help="only the first N problems")
    return parser


def run_demo_command(args: argparse.Namespace) -> int:
    from trainer.demo import DemoConfig, run_demo

    cfg = DemoConfig(out=args.out, server=args.server, seed=args.seed, threads=args.threads)
    if args.sft_steps is not None:
        cfg = dataclasses.replace(cfg, sft_steps=args.sft_steps)
    if args.heldout is not None:
        cfg = dataclasses.replace(cfg, heldout_problems=args.heldout)
    if args.steps is not None:
        cfg = dataclasses.replace(cfg, rl=dataclasses.replace(cfg.rl, steps=args.steps))
    summary = run_demo(cfg)
    print(json.dumps({k: summary[k] for k in ("eval_before", "eval_after", "accuracy_gain", "seconds")}, indent=2))
    return 0


def run_recipe_command(args: argparse.Namespace) -> int:
    from trainer.recipe import load_recipe, run_recipe

    recipe = load_recipe(args.config, out_dir=args.out_dir, steps=args.steps, torch_threads=args.torch_threads)
    summary = run_recipe(recipe, Path(recipe.rl.out_dir), server=args.server)
    keys = [k for k in summary if k.startswith(("eval_", "champ_"))] + ["accuracy_gain", "seconds"]
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    return 0


def run_train_or_eval(args: argparse.Namespace) -> int:
    from trainer.config import load_config
    from trainer.local_server import local_server
    from trainer.train import load_tasks

    keys = ("dataset", "backend", "model", "device", "server", "out_dir", "steps", "torch_threads")
    cfg = load_config(args.config, **{k: getattr(args, k) for k in keys})
    if not cfg.dataset:
        raise ConfigError("dataset: give --dataset or set `dataset` in the config")
    tasks = load_tasks(cfg.dataset)
    server_cm = local_server(Path(cfg.out_dir) / "server") if args.local_server else nullcontext(cfg.server)
    with server_cm as server:
        cfg = dataclasses.replace(cfg, server=server)
        if args.command == "train":
            from trainer.train import train
            metrics = asyncio.run(train(cfg, tasks))
            print(json.dumps(metrics[-1] if metrics else {}, indent=2))
            return 0
        from trainer.evaluate import evaluate_config
        ks = tuple(int(k) for k in args.k.split(","))
        result = asyncio.run(evaluate_config(cfg, tasks[:args.limit] if args.limit else tasks,
                                             samples=args.samples, ks=ks))
        print(json.dumps(result, indent=2))
        return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo_command(args)
        if args.command == "recipe":
            return run_recipe_command(args)
        if args.command == "dataset":
            from trainer.datasets import export
            print(f"{export(args.name, args.out)} rows written to {args.out}")
            return 0
        return run_train_or_eval(args)
    except (ConfigError, FileNotFoundError, ImportError, ValueError) as exc:
        print(f"python -m trainer {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
