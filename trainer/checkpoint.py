"""Checkpoints in safetensors: model weights, AdamW state and the step, for resume.

One file per checkpoint, `step-000010.safetensors` in a directory: tensors named
`model.<param>` and `optim.<index>.<key>`, and in the metadata the step, the optimiser's
param groups (JSON) and any caller's notes. Weights that share memory (a language model's
output layer tied to its embedding) are stored once, the other names listed in the
`tied` note and filled in on load. No pickle is read back: loading a checkpoint
cannot run code. It does not choose when to save (the training loop does).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

NAME = re.compile(r"step-(\d+)\.safetensors$")


def checkpoint_path(directory: str | Path, step: int) -> Path:
    return Path(directory) / f"step-{step:06d}.safetensors"


def save_checkpoint(directory: str | Path, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None,
                    notes: dict[str, str] | None = None) -> Path:
    """Writes `step-NNNNNN.safetensors` atomically; without an optimiser, weights only."""
    tensors: dict[str, torch.Tensor] = {}
    tied: dict[str, str] = {}
    stored: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for name, value in model.state_dict().items():
        where = (value.untyped_storage().data_ptr(), value.storage_offset(), tuple(value.shape))
        if where in stored:
            tied[name] = stored[where]
        else:
            stored[where] = name
            tensors[f"model.{name}"] = value.detach().contiguous()
    metadata = {"step": str(step), **(notes or {})}
    if tied:
        metadata["tied"] = json.dumps(tied)
    if optimizer is not None:
        state = optimizer.state_dict()
        for index, slots in state["state"].items():
            for key, value in slots.items():
                tensors[f"optim.{index}.{key}"] = torch.as_tensor(value).detach().contiguous()
        metadata["param_groups"] = json.dumps(state["param_groups"])
    path = checkpoint_path(directory, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(path)
    return path


def read_metadata(path: str | Path) -> dict[str, str]:
    with safe_open(str(path), framework="pt") as f:
        return f.metadata() or {}


def latest_checkpoint(directory: str | Path) -> Path | None:
    found = [(int(m.group(1)), p) for p in Path(directory).glob("step-*.safetensors") if (m := NAME.search(p.name))]
    return max(found)[1] if found else None


def load_checkpoint(path: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None
                    ) -> tuple[int, dict[str, str]]:
    """Restores the model (and the optimiser, when the checkpoint has its state);
    returns the step and the metadata."""
    model_state: dict[str, torch.Tensor] = {}
    slots: dict[int, dict[str, torch.Tensor]] = {}
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
        for name in f.keys():
            kind, _, rest = name.partition(".")
            if kind == "model":
                model_state[rest] = f.get_tensor(name)
            else:
                index, _, key = rest.partition(".")
                slots.setdefault(int(index), {})[key] = f.get_tensor(name)
    for name, source in json.loads(metadata.get("tied", "{}")).items():
        model_state[name] = model_state[source]
    model.load_state_dict(model_state)
    if optimizer is not None and "param_groups" in metadata:
        optimizer.load_state_dict({"state": slots, "param_groups": json.loads(metadata["param_groups"])})
    return int(metadata["step"]), metadata
