"""Slot memory cgroups on this host's real cgroup v1 hierarchy (skipped where there is none)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from sandbox.cgroups import CgroupUnavailable, MemoryCgroups, SlotCgroups

HOG = ("import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\ntime.sleep(30)")


@pytest.fixture
def cgroup():
    try:
        groups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    group = groups.for_slot(f"unit-test-{os.getpid()}")
    yield group
    group.remove()


def test_a_process_past_the_cap_is_ended_and_counted(cgroup):
    cgroup.set_limit_mb(64)
    before = cgroup.oom_kills()
    hog = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + HOG], stdin=subprocess.PIPE)
    try:
        cgroup.adopt([hog.pid])
        hog.stdin.write(b"g")
        hog.stdin.flush()
        assert hog.wait(30) == -signal.SIGKILL
    finally:
        if hog.poll() is None:
            hog.kill()
            hog.wait()
    assert cgroup.oom_kills() == before + 1


def test_limits_go_up_and_down_and_off(cgroup):
    for megabytes in (128, 512, 96, 0, 256):
        cgroup.set_limit_mb(megabytes)
        value = int((cgroup.path / "memory.limit_in_bytes").read_text())
        assert value == (megabytes << 20) if megabytes else value > 1 << 50


def test_gone_processes_are_skipped_and_an_empty_cgroup_is_removed(cgroup):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    cgroup.adopt([gone.pid])  # exited and reaped: nothing to move
    assert (cgroup.path / "cgroup.procs").read_text() == ""
    cgroup.remove()
    assert not cgroup.path.exists()


def test_a_pool_makes_each_slots_cgroup_once_and_removes_them_all():
    assert SlotCgroups(None).of("tsbox0") is None  # no cgroups: processes are capped alone
    try:
        groups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    pool = SlotCgroups(groups)
    name = f"unit-pool-{os.getpid()}"
    first = pool.of(name)
    assert first is not None and pool.of(name) is first and first.path.is_dir()
    pool.remove_all()
    assert not first.path.exists()


def test_all_but_the_kept_processes_are_killed_and_the_charge_is_reset(cgroup):
    """What recycling a session's jail does to its slot's cgroup: the jail's own processes
    stay, every other is killed, and the peak the last session reached is forgotten."""
    kept = subprocess.Popen(["sleep", "60"])
    hog = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + HOG], stdin=subprocess.PIPE)
    others = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    try:
        cgroup.adopt([kept.pid, hog.pid, *(other.pid for other in others)])
        hog.stdin.write(b"g")
        hog.stdin.flush()
        while int((cgroup.path / "memory.max_usage_in_bytes").read_text()) < 150 << 20:
            assert hog.poll() is None
        assert cgroup.kill_all_but(frozenset({kept.pid}))
        assert [process.wait(10) for process in (hog, *others)] == [-signal.SIGKILL] * 4
        assert cgroup.pids() == [kept.pid] and kept.poll() is None
        cgroup.reset_charge()
        assert int((cgroup.path / "memory.max_usage_in_bytes").read_text()) < 50 << 20
        assert int((cgroup.path / "memory.failcnt").read_text()) == 0
    finally:
        for process in (kept, hog, *others):
            if process.poll() is None:
                process.kill()
                process.wait()
