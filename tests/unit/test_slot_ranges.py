"""The test run's slot lender: disjoint ranges, within a run and across runs."""

from __future__ import annotations

import pytest

from tests.conftest import SlotRanges


def test_ranges_are_disjoint_and_come_back(tmp_path):
    slots = SlotRanges(6, tmp_path)
    assert [slots.take(2), slots.take(3)] == [0, 2]
    slots.give_back(0, 2)
    assert slots.take(1) == 0 and slots.take(1) == 1


def test_two_runs_on_one_machine_never_share_a_slot(tmp_path):
    mine, theirs = SlotRanges(5, tmp_path), SlotRanges(5, tmp_path, wait_s=0)
    assert mine.take(2) == 0
    assert theirs.take(2) == 2  # slots 0-1 are locked by the other lender
    with pytest.raises(RuntimeError, match="no 2 free sandbox slots"):
        theirs.take(2)
    mine.give_back(0, 2)
    assert theirs.take(2) == 0
