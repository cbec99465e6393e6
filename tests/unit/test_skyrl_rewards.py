"""The SkyRL adapter's reward rule on ground truths that name no target: they score 0.0,
as a missing ground truth does, instead of failing the episode's last step."""

from __future__ import annotations

import pytest

pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed (extra skyrl)")
from toolclient.integrations import skyrl  # noqa: E402


@pytest.mark.parametrize("ground_truth", [{"answer": "42"}, {"target": None}, {}])
def test_a_mapping_without_a_target_scores_zero(ground_truth):
    assert skyrl.answer_matches("<answer>42</answer>", ground_truth) == 0.0


def test_a_mapping_with_a_target_still_matches():
    assert skyrl.answer_matches("<answer>42</answer>", {"target": 42}) == 1.0
    assert skyrl.answer_matches("<answer>42</answer>", {"target": ["41", "42"]}) == 1.0
