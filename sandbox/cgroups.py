"""One memory cgroup per slot: a cap on all the memory a call or a session adds, however
many processes it starts.

RLIMIT_AS caps each process alone; a call that starts four processes would get four
times its limit. A worker slot's cgroup holds the process forked for each call, moved
there before its request is sent (so every process the call starts is born there), and
not the warm zygote, which the OOM killer must never pick over a call's process; a
session's holds every process of its jail, its own process moved there as it is forked (before
any untrusted code runs). Memory charged before a move stays where it was, so the
cgroup's limit is exactly what the caller's code may add: its allocations, its
copy-on-write copies and the files it writes to its tmpfs mounts. Past the limit the
kernel's OOM killer ends a process of the slot, and the host reads the cgroup's kill
counter to answer MEMORY_LIMIT.

cgroup v1's memory controller is used (these hosts have no v2 memory controller); the
host must be root and the hierarchy writable. Where it is not, `MemoryCgroups.open`
says why and the server runs with per-process limits only (`sandbox.memory_cgroup`).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import time
from pathlib import Path

from sandbox.pidfds import signal_pids

log = logging.getLogger(__name__)

V1_ROOT = Path("/sys/fs/cgroup/memory")
GROUP = "toolserver"


class CgroupUnavailable(OSError):
    """No writable memory cgroup hierarchy here; the message says why."""


class MemoryCgroup:
    """The cgroup of one slot."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.limit_mb = 0

    def adopt(self, pids: list[int]) -> None:
        """Moves pids (a jail's processes) into this cgroup; gone processes are skipped."""
        for pid in pids:
            try:
                (self.path / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                continue
            except OSError as exc:
                if exc.errno != errno.ESRCH:
                    raise

    def pids(self) -> list[int]:
        """The processes in this cgroup now."""
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def holds(self, pid: int) -> bool:
        """Whether process pid is in this cgroup now."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return False
        return any("memory" in controllers.split(",") and V1_ROOT / path.lstrip("/") == self.path
                   for _, controllers, path in (line.split(":", 2) for line in lines))

    def kill_all(self, rounds: int = 50) -> bool:
        """SIGKILLs every process in this cgroup until none is left (a process cannot leave
        it: the hierarchy is root's); returns whether it emptied."""
        return self.kill_all_but(frozenset(), rounds)

    def kill_all_but(self, keep: frozenset[int], rounds: int = 50) -> bool:
        """SIGKILLs every process in this cgroup but those of keep (a jail's own, kept for the
        next session) until no other is left, or rounds times (1: at once, without waiting);
        returns whether that came to pass."""
        for done in range(1, rounds + 1):
            others = [pid for pid in self.pids() if pid not in keep]
            if not others:
                return True
            signal_pids(others, signal.SIGKILL, self.holds)
            if done < rounds:
                time.sleep(0.005)
        return not [pid for pid in self.pids() if pid not in keep]

    def reset_charge(self) -> None:
        """Reclaims what the cgroup's processes left charged to it (page cache; a wiped
        tmpfs's pages are freed with its files) and zeroes its peak and its count of
        refused charges, so that the next session on the slot reads nothing of the last
        one's use. Raises OSError."""
        (self.path / "memory.force_empty").write_text("0")
        for name in ("memory.max_usage_in_bytes", "memory.failcnt", "memory.memsw.max_usage_in_bytes",
                     "memory.memsw.failcnt"):
            if (self.path / name).exists():
                (self.path / name).write_text("0")

    def set_limit_mb(self, megabytes: int) -> None:
        """Caps the memory charged to this cgroup (0: no cap); the kernel reclaims what it
        can first and refuses (OSError EBUSY) a cap below what it cannot reclaim."""
        if megabytes == self.limit_mb:
            return
        value = str(megabytes << 20) if megabytes else "-1"
        swap = self.path / "memory.memsw.limit_in_bytes"
        raising = not megabytes or (self.limit_mb and megabytes > self.limit_mb)
        # memory+swap must stay at least memory: raise it first, lower it last.
        if swap.exists() and raising:
            swap.write_text(value)
        (self.path / "memory.limit_in_bytes").write_text(value)
        if swap.exists() and not raising:
            swap.write_text(value)
        self.limit_mb = megabytes

    def open_procs(self) -> int:
        """A descriptor of this cgroup's procs: a process that writes 0 to it moves itself
        in (a session's, before it joins its jail). Raises OSError."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def open_for_jail(self) -> dict[str, int]:
        """Descriptors of this cgroup's files a zygote in the slot's jail writes itself:
        `procs` (the process forked for each call moves in), `limit` and, where the
        kernel has it, `memsw` (each call's cap). Opened by the server (writes through
        them are then allowed), inherited by nothing but that zygote. Raises OSError."""
        names = {"procs": "cgroup.procs", "limit": "memory.limit_in_bytes", "memsw": "memory.memsw.limit_in_bytes"}
        fds: dict[str, int] = {}
        try:
            for key, name in names.items():
                if key == "memsw" and not (self.path / name).exists():
                    continue
                fds[key] = os.open(self.path / name, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            for fd in fds.values():
                os.close(fd)
            raise
        self.limit_mb = -1  # set from inside from now on: unknown here
        return fds

    def oom_kills(self) -> int:
        """How many processes the OOM killer has ended in this cgroup so far."""
        try:
            for line in (self.path / "memory.oom_control").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
        except OSError:
            pass
        return 0

    def usage_mb(self) -> int:
        try:
            return int((self.path / "memory.usage_in_bytes").read_text()) >> 20
        except OSError:
            return 0

    def remove(self) -> None:
        """Removes the cgroup once its processes are gone (their charges go to the parent)."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot remove cgroup %s: %s", self.path, exc)


class MemoryCgroups:
    """Where slot cgroups are made: below this server's own memory cgroup."""

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    @classmethod
    def open(cls) -> "MemoryCgroups":
        """The hierarchy for slot cgroups; raises CgroupUnavailable with the reason."""
        if os.geteuid() != 0:
            raise CgroupUnavailable("the server is not root")
        own = own_memory_cgroup()
        if own is None:
            raise CgroupUnavailable("no cgroup v1 memory controller is mounted at /sys/fs/cgroup/memory")
        parent = V1_ROOT / own.lstrip("/") / GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create {parent}: {exc.strerror}") from exc
        return cls(parent)

    def for_slot(self, name: str) -> MemoryCgroup:
        """The slot's cgroup, made empty of limits; raises OSError."""
        path = self.parent / name
        path.mkdir(exist_ok=True)
        group = MemoryCgroup(path)
        group.limit_mb = -1  # unknown: whatever an earlier server left
        group.set_limit_mb(0)
        return group


class SlotCgroups:
    """The cgroups of one pool's slots: each made once, on first use, kept for every
    process tree the slot runs, and removed together when the pool closes."""

    def __init__(self, cgroups: MemoryCgroups | None) -> None:
        self._cgroups = cgroups
        self._made: dict[str, MemoryCgroup] = {}

    def of(self, slot_name: str) -> MemoryCgroup | None:
        """The slot's cgroup; None without memory cgroups. Raises OSError."""
        if self._cgroups is None:
            return None
        if slot_name not in self._made:
            self._made[slot_name] = self._cgroups.for_slot(slot_name)
        return self._made[slot_name]

    def remove_all(self) -> None:
        for cgroup in self._made.values():
            cgroup.remove()


def own_memory_cgroup() -> str | None:
    """This process's path in the v1 memory hierarchy, when that hierarchy is mounted."""
    if not (V1_ROOT / "cgroup.procs").exists():
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return None
