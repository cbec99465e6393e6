"""The record of a training run: one JSON line of metrics per step in `metrics.jsonl`,
TensorBoard events when tensorboard is installed, and PNG curves of the main figures.

Reading it back (`read_metrics`) is how a resumed run continues its curves. It does not
compute metrics (the learner does) or print progress (the training loop does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CURVES = (("reward_mean", "reward"), ("accuracy", "accuracy"), ("tool_calls_per_rollout", "tool calls per rollout"),
          ("tool_error_rate", "tool error rate"))


class RunLog:
    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self.writer: Any = None
        try:
            from torch.utils.tensorboard import SummaryWriter
            self.writer = SummaryWriter(str(self.dir / "tensorboard"))
        except ImportError:
            self.writer = None

    def log(self, step: int, metrics: dict[str, float]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        if self.writer is not None:
            for name, value in metrics.items():
                self.writer.add_scalar(name, value, step)
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def read_metrics(path: str | Path) -> list[dict[str, float]]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def plot_series(series: dict[str, list[tuple[float, float]]], png_path: str | Path, xlabel: str = "step") -> bool:
    """One panel per named series of (x, y) points; False (and nothing written) when
    matplotlib is not installed or there is nothing to plot."""
    if not any(series.values()):
        return False
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(series), figsize=(4 * len(series), 3), squeeze=False)
    for ax, (title, points) in zip(axes[0], series.items()):
        if points:
            ax.plot(*zip(*points))
        ax.set_title(title)
        ax.set_xlabel(xlabel)
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
    return True


def plot_curves(metrics_path: str | Path, png_path: str | Path) -> bool:
    """Reward, accuracy, tool calls and tool errors per step from `metrics.jsonl`."""
    rows = read_metrics(metrics_path)
    return plot_series({title: [(r["step"], r[key]) for r in rows if key in r] for key, title in CURVES}, png_path)
