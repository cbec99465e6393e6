from __future__ import annotations

import math

import pytest
import torch

from trainer.grpo import clipped_token_loss, dynamic_sampling_keep, group_advantages


def test_advantages_are_normalised_within_each_group():
    adv = group_advantages([1, 0, 0, 1, 1, 1, 1, 1], 4)
    assert adv[:4] == pytest.approx([1, -1, -1, 1], abs=1e-4)
    assert adv[4:] == [0.0] * 4


def test_advantages_without_std_scaling():
    assert group_advantages([1.0, 0.0, 0.0, 0.0], 4, scale_by_std=False) == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_unscored_rollouts_get_zero_and_leave_the_statistics():
    adv = group_advantages([1.0, None, 0.0, 1.0], 4, scale_by_std=False)
    assert adv == pytest.approx([1 / 3, 0.0, -2 / 3, 1 / 3])


def test_groups_must_divide_the_batch():
    with pytest.raises(ValueError):
        group_advantages([1.0, 0.0, 1.0], 2)


def test_dynamic_sampling_drops_groups_with_equal_rewards():
    assert dynamic_sampling_keep([1, 1, 0, 1, 0, 0, None, 1], 2) == [False, False, True, True,
                                                                     False, False, False, False]


def loss_of(logprob: float, adv: float, mask=(1.0,), **kw):
    lp = torch.tensor([[logprob] * len(mask)], requires_grad=True)
    loss, metrics = clipped_token_loss(lp, torch.zeros_like(lp), torch.tensor([adv]), torch.tensor([list(mask)]), **kw)
    loss.backward()
    return loss, metrics, lp.grad


def test_clip_higher_bounds_ratio_asymmetrically():
    # positive advantage: the ratio counts up to 1.28, then the gradient is zero
    loss, metrics, grad = loss_of(math.log(1.5), 1.0)
    assert loss.item() == pytest.approx(-1.28)
    assert float(grad.abs().sum()) == 0.0 and metrics["clip_fraction"] == 1.0
    loss, _, grad = loss_of(math.log(1.2), 1.0)
    assert loss.item() == pytest.approx(-1.2) and float(grad.abs().sum()) > 0
    # negative advantage: the ratio is clipped below at 0.8
    loss, _, grad = loss_of(math.log(0.5), -1.0)
    assert loss.item() == pytest.approx(0.8) and float(grad.abs().sum()) == 0.0


def test_loss_is_token_level_and_masked():
    lp = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    loss, _ = clipped_token_loss(lp, lp.detach(), torch.tensor([1.0, -2.0]), mask)
    assert loss.item() == pytest.approx(-(1 + 1 - 2) / 3)
    loss.backward()
    assert lp.grad[0, 2] == 0 and lp.grad[1, 1] == 0 and lp.grad[1, 2] == 0
    assert lp.grad[0, 0] == pytest.approx(-1 / 3) and lp.grad[1, 0] == pytest.approx(2 / 3)


def test_kl_is_off_by_default_and_k3_when_on():
    lp = torch.tensor([[0.0]])
    ref = torch.tensor([[math.log(0.5)]])
    base, metrics = clipped_token_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 1))
    assert "kl" not in metrics
    loss, metrics = clipped_token_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 1), ref_logprobs=ref, kl_coef=0.1)
    k3 = 0.5 - math.log(0.5) - 1
    assert metrics["kl"] == pytest.approx(k3) and loss.item() == pytest.approx(float(base) + 0.1 * k3)
    with pytest.raises(ValueError):
        clipped_token_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 1), kl_coef=0.1)
