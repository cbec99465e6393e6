"""Signals through pidfds: only to processes that are still the ones meant."""

from __future__ import annotations

import signal
import subprocess

from sandbox.pidfds import signal_pids


def test_a_process_still_wanted_is_signalled():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert signal_pids([child.pid], signal.SIGKILL, lambda pid: True) == 1
        assert child.wait(10) == -signal.SIGKILL
    finally:
        child.kill()


def test_a_process_no_longer_wanted_is_left_alone():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert signal_pids([child.pid], signal.SIGKILL, lambda pid: False) == 0
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_processes_that_ended_on_their_own_are_skipped():
    ended = subprocess.Popen(["true"])
    ended.wait()  # reaped: its pid names nothing now, or a process nobody meant
    checked: list[int] = []
    assert signal_pids([ended.pid], signal.SIGKILL, lambda pid: checked.append(pid) is None and False) == 0
