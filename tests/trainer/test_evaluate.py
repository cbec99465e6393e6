from __future__ import annotations

import pytest

from trainer.evaluate import pass_at_k


def test_pass_at_k_estimator():
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    assert pass_at_k(5, 4, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)
