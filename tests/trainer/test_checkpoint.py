from __future__ import annotations

import torch

from trainer.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer.policy_torch import TinyConfig, TinyTransformer

CFG = TinyConfig(d_model=16, n_layers=1, n_heads=2, max_len=32)


def trained(seed: int) -> tuple[TinyTransformer, torch.optim.AdamW]:
    torch.manual_seed(seed)
    model = TinyTransformer(CFG)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.tensor([[1, 2, 3, 4]])
    for _ in range(3):
        logits, _ = model(ids, torch.ones_like(ids))
        opt.zero_grad()
        logits.sum().backward()
        opt.step()
    return model, opt


def test_resume_restores_weights_and_optimizer(tmp_path):
    model, opt = trained(0)
    save_checkpoint(tmp_path, 3, model, opt, {"config": "{}"})
    save_checkpoint(tmp_path, 12, model, opt)
    assert latest_checkpoint(tmp_path).name == "step-000012.safetensors"
    other, other_opt = trained(1)
    step, meta = load_checkpoint(tmp_path / "step-000003.safetensors", other, other_opt)
    assert step == 3 and meta["config"] == "{}"
    for a, b in zip(model.parameters(), other.parameters()):
        assert torch.equal(a, b)
    for p, q in zip(model.parameters(), other.parameters()):
        sa, sb = opt.state[p], other_opt.state[q]
        assert torch.equal(sa["exp_avg"], sb["exp_avg"]) and float(sa["step"]) == float(sb["step"])
    assert other_opt.param_groups[0]["lr"] == 1e-2


def test_no_checkpoint_yet(tmp_path):
    assert latest_checkpoint(tmp_path) is None


class Tied(torch.nn.Module):
    """An embedding and an output layer sharing one weight, as most language models do."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight


def test_tied_weights_are_stored_once_and_stay_tied(tmp_path):
    torch.manual_seed(0)
    model = Tied()
    path = save_checkpoint(tmp_path, 1, model, torch.optim.AdamW(model.parameters()))
    other = Tied()
    _, meta = load_checkpoint(path, other)
    assert meta["tied"] == '{"head.weight": "embed.weight"}'
    assert torch.equal(other.embed.weight, model.embed.weight)
    assert other.head.weight is other.embed.weight
