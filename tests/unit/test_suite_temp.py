"""The suite's temporary files lie under a root of its own (tests/conftest.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.conftest import SLOT_LOCKS, SUITE_ROOT, SUITE_TMP_PARENT, SUITE_TMP_PREFIX


def test_the_runs_temporary_files_lie_under_a_root_made_for_it(tmp_path, request):
    root = request.config.stash.get(SUITE_ROOT, None)
    if root is None:
        pytest.skip("run with a --basetemp of the caller's")
    assert Path(tempfile.gettempdir()) == root and root.parent == SUITE_TMP_PARENT and root.name.startswith(SUITE_TMP_PREFIX)
    assert os.environ["TMPDIR"] == str(root)
    assert tmp_path.is_relative_to(root)
    assert root.stat().st_mode & 0o777 == 0o700  # mkdtemp's: no other user writes there


def test_slots_are_lent_through_locks_every_run_on_the_machine_shares():
    assert not SLOT_LOCKS.is_relative_to(tempfile.gettempdir())
