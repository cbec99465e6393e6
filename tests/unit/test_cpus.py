"""CPUs this process may use: the affinity mask, capped by a cgroup CPU quota."""

from __future__ import annotations

import os

import pytest

from toolserver import cpus


def test_cgroup_v2_quota(tmp_path):
    (tmp_path / "cpu.max").write_text("250000 100000\n")
    assert cpus.cgroup_cpu_quota(tmp_path) == 2.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpus.cgroup_cpu_quota(tmp_path) is None


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("150000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpus.cgroup_cpu_quota(tmp_path) == 1.5
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpus.cgroup_cpu_quota(tmp_path) is None
    assert cpus.cgroup_cpu_quota(tmp_path / "nothing") is None


@pytest.mark.parametrize("quota, expected", [(None, None), (0.5, 1), (1.5, 2), (1000.0, None)])
def test_available_cpus_is_the_quota_rounded_up_within_the_cores(monkeypatch, quota, expected):
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda: quota)
    cores = len(os.sched_getaffinity(0))
    assert cpus.available_cpus() == (cores if expected is None else min(expected, cores))


def test_cpu_meter_counts_work_at_full_weight_only(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 50 100 700 50 0 0 0 0 0\ncpu0 50 25 50 350 25 0 0 0 0 0\n")
    meter = cpus.CpuMeter(stat)
    stat.write_text("cpu  160 150 120 740 50 0 0 0 0 0\n")  # +60 user, +100 nice, +20 system, +40 idle
    assert meter.busy_share() == pytest.approx(80 / 220)
    assert meter.busy_share() == 1.0  # nothing elapsed: no room is claimed
    stat.unlink()
    assert meter.busy_share() == 1.0
