"""The demo's whole pipeline, shrunk to seconds, against the real server. The demo's
claim (held-out accuracy up by 0.20) is measured by running it; see the README."""

from __future__ import annotations

import dataclasses
import json

from trainer.demo import DemoConfig, run_demo
from trainer.policy_torch import TinyConfig
from trainer.run_log import read_metrics


def test_demo_writes_metrics_summary_and_curves(trainer_server, tmp_path):
    base = DemoConfig(out=tmp_path)
    cfg = dataclasses.replace(base, server=trainer_server.target, train_problems=64, heldout_problems=4,
                              sft_steps=20, sft_batch=8, eval_samples=2,
                              model=TinyConfig(d_model=32, n_layers=1, n_heads=2, max_len=160),
                              rl=dataclasses.replace(base.rl, steps=2, prompts_per_step=2, group_size=2))
    summary = run_demo(cfg, progress=False)
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("reward_mean", "tool_calls_per_rollout", "tool_error_rate", "accuracy"):
        assert all(key in r for r in rows)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["accuracy_gain"] == summary["accuracy_gain"]
    for phase in ("eval_before", "eval_after"):
        assert written[phase]["problems"] == 4 and written[phase]["samples"] == 2
        assert 0.0 <= written[phase]["accuracy"] <= 1.0 and "pass@2" in written[phase]
    for png in ("curves.png", "sft_loss.png"):
        assert (tmp_path / png).read_bytes().startswith(b"\x89PNG")
    assert list((tmp_path / "warm_start").glob("step-*.safetensors"))
    assert list((tmp_path / "checkpoints").glob("step-000002.safetensors"))

    again = run_demo(dataclasses.replace(cfg, rl=dataclasses.replace(cfg.rl, steps=1)), progress=False)
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1], "a demo never resumes"
    assert again["seconds"]["rl"] > 0
