"""`python -m trainer train | eval | dataset` as a user runs them, against the real server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def trainer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainer", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def small_run(tmp_path: Path) -> Path:
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"problem": "What is 6*7?", "answer": "42"}) + "\n"
                    + json.dumps({"problem": "Print hi.", "tests": [{"input": "", "output": "hi"}]}) + "\n")
    config = tmp_path / "run.toml"
    config.write_text(f'dataset = "{data}"\nprompts_per_step = 2\ngroup_size = 2\nroc = false\n'
                      "max_completion_tokens = 24\nmax_observation_tokens = 8\ninstructions = false\n"
                      "torch_threads = 1\nlearning_rate = 1e-4\n")
    return config


def test_train_then_eval_its_checkpoint(trainer_server, tmp_path):
    config = small_run(tmp_path)
    out = tmp_path / "run"
    done = trainer("train", "--config", str(config), "--server", trainer_server.target, "--out", str(out),
                   "--steps", "2")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["train/rollouts"] == 4.0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    checkpoint = out / "checkpoints" / "step-000002.safetensors"
    assert checkpoint.exists()

    evaluated = trainer("eval", "--config", str(config), "--server", trainer_server.target, "--model",
                        str(checkpoint), "--samples", "2", "--k", "1,2")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert result["problems"] == 2 and result["samples"] == 2 and 0 <= result["pass@1"] <= result["pass@2"] <= 1


def test_bad_config_is_a_clear_error(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("stepz = 3\n")
    done = trainer("train", "--config", str(config))
    assert done.returncode == 2 and "unknown trainer config keys: stepz" in done.stderr
    done = trainer("eval", "--config", str(small_run(tmp_path)), "--model", str(tmp_path / "missing.safetensors"))
    assert done.returncode == 2 and "no checkpoint at" in done.stderr
    done = trainer("train")
    assert done.returncode == 2 and "dataset" in done.stderr


RECIPE = """backend = "torch"
instructions = false
steps = 1
prompts_per_step = 2
group_size = 2
roc = false
max_completion_tokens = 24
max_observation_tokens = 8
torch_threads = 1

[problems]
kinds = ["product", "binomial"]
train = 8
held_out = 2

[warm_start]
steps = 2
batch_size = 2

[held_out]
samples = 2
untrained = true
"""


def test_recipe_runs_warm_start_rl_and_held_out_from_one_file(trainer_server, tmp_path):
    config = tmp_path / "recipe.toml"
    config.write_text(RECIPE)
    out = tmp_path / "run"
    done = trainer("recipe", "--config", str(config), "--server", trainer_server.target, "--out", str(out))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert {"eval_untrained", "eval_before", "eval_after", "accuracy_gain", "seconds"} <= printed.keys()
    for phase in ("eval_untrained", "eval_before", "eval_after"):
        assert printed[phase]["problems"] == 2 and 0 <= printed[phase]["tool_error_rate"] <= 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problems"]["kinds"] == ["product", "binomial"] and summary["warm_start"]["steps"] == 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1] and rows[0]["step_seconds"] > 0
    assert rows[0]["step_seconds"] >= rows[0]["rollout/seconds"] + rows[0]["train/seconds"]


def test_a_bad_recipe_is_a_clear_error(tmp_path):
    config = tmp_path / "recipe.toml"
    for text, message in (("[warm_start]\nstepz = 3\n", "unknown [warm_start] keys: stepz"),
                          ("[problems]\nkinds = [\"riddles\"]\n", "riddles"),
                          ("[held_out]\nsamples = \"four\"\n", "[held_out] samples: expected int"),
                          ("[problems]\nheld_out = 0\n", "at least 1")):
        config.write_text(text)
        done = trainer("recipe", "--config", str(config))
        assert done.returncode == 2 and message in done.stderr, (text, done.stderr)
