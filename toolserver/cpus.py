"""How many CPUs this process may use: the cores it may run on, capped by a cgroup CPU
quota (a container's `--cpus`, a pod's CPU limit), which the affinity mask does not show."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs the cgroup quota allows (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), None without one."""
    try:
        quota, period = (root / "cpu.max").read_text().split()
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def available_cpus() -> int:
    cores = len(os.sched_getaffinity(0))
    quota = cgroup_cpu_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else cores


class CpuMeter:
    """The share of the machine's CPU time that ran work at full weight (user, system,
    interrupts; not niced work, which yields to it) since the last sample, from /proc/stat."""

    def __init__(self, stat: Path = Path("/proc/stat")) -> None:
        self.stat = stat
        self._last = self._read()

    def _read(self) -> tuple[int, int] | None:
        """(busy, total) clock ticks since boot, None where /proc/stat is unreadable."""
        try:
            fields = [int(value) for value in self.stat.read_text().split("\n", 1)[0].split()[1:9]]
        except (OSError, ValueError):
            return None
        user, _nice, system, _idle, _iowait, irq, softirq, steal = fields
        return user + system + irq + softirq + steal, sum(fields)

    def busy_share(self) -> float:
        """0 to 1 since the previous call; 1 where nothing can be read (counted as busy)."""
        now, last = self._read(), self._last
        self._last = now
        if now is None or last is None or now[1] <= last[1]:
            return 1.0
        return (now[0] - last[0]) / (now[1] - last[1])
