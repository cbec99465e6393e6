from __future__ import annotations

import pytest

from trainer.run_log import RunLog, plot_curves, read_metrics


def test_metrics_lines_and_curves(tmp_path):
    log = RunLog(tmp_path)
    for step in range(3):
        log.log(step, {"reward_mean": step / 2, "accuracy": step / 4, "tool_calls_per_rollout": 1.0})
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[2]["reward_mean"] == 1.0
    pytest.importorskip("matplotlib")
    png = tmp_path / "curves.png"
    assert plot_curves(tmp_path / "metrics.jsonl", png)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_nothing_to_plot(tmp_path):
    assert read_metrics(tmp_path / "metrics.jsonl") == []
    assert not plot_curves(tmp_path / "metrics.jsonl", tmp_path / "c.png")
