"""A short run against a real server, stopped and resumed."""

from __future__ import annotations

import dataclasses
import json

from trainer.config import TrainerConfig
from trainer.run_log import read_metrics
from trainer.train import load_tasks, step_tasks, train


def test_step_tasks_depend_only_on_seed_and_step():
    tasks = list(range(20))
    cfg = TrainerConfig(prompts_per_step=4, seed=1)
    assert step_tasks(tasks, 5, cfg) == step_tasks(tasks, 5, cfg) != step_tasks(tasks, 6, cfg)


async def test_run_then_resume(trainer_server, tmp_path):
    data = tmp_path / "tasks.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in [{"problem": "1+1", "answer": "2"},
                                                       {"problem": "f", "tests": ["assert f(0) == 1"]}]) + "\n")
    tasks = load_tasks(data)
    cfg = TrainerConfig(server=trainer_server.target, out_dir=str(tmp_path / "run"), steps=2, prompts_per_step=2,
                        group_size=2, max_completion_tokens=32, max_observation_tokens=16, checkpoint_every=1)
    first = await train(cfg, tasks, progress=False)
    assert len(first) == 2
    resumed = await train(dataclasses.replace(cfg, steps=3), tasks, progress=False)
    assert len(resumed) == 1
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == [
        "step-000001.safetensors", "step-000002.safetensors", "step-000003.safetensors"]
    assert (tmp_path / "run" / "curves.png").exists()
