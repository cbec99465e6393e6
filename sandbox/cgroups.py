"""One memory cgroup per slot: a cap on all the memory a call or a session adds, however
many processes it starts.

RLIMIT_AS caps each process alone; a call that starts four processes would get four
times its limit. A worker slot's cgroup holds the process forked for each call, moved
there before its request is sent (so every process the call starts is born there), and
not the warm zygote, which the OOM killer must never pick over a call's process; a
session's holds every process of its jail, its own process moved there as it is forked (before
any untrusted code runs); a Lean REPL's jail starts in it. Memory charged before a move stays
where it was, so the cgroup's limit is exactly what the caller's code may add: its allocations,
its copy-on-write copies and the files it writes to its tmpfs mounts. Past the limit the
kernel's OOM killer ends a process of the slot, and the host reads the cgroup's kill
counter to answer MEMORY_LIMIT.

Both hierarchies serve, behind one interface: cgroup v1's memory controller
(`memory.limit_in_bytes`, memory+swap capped alike, `memory.oom_control`), and cgroup v2's
unified one (`memory.max`, `memory.swap.max` 0, `pids.max`, `memory.events`), at the root or
in a subtree delegated to the server (systemd's `Delegate=yes`, a container with a cgroup
namespace and a writable cgroup mount, a Kubernetes pod's). The host must be root and the
hierarchy writable. Where neither serves, `MemoryCgroups.open` says why and the server runs
with per-process limits only (`sandbox.memory_cgroup`).
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
V2_ROOT = Path("/sys/fs/cgroup")
GROUP = "toolserver"
# cgroup v2 lets no cgroup but the root hold processes and hand controllers to children at
# once: the processes of the server's own cgroup move into this child of it first.
SERVER_LEAF = "server"
V2_CONTROLLERS = ("memory", "pids")


class CgroupUnavailable(OSError):
    """No writable memory cgroup hierarchy here; the message says why."""


# How long processes SIGKILLed in a cgroup may take to end (to free their memory) before it is
# declared not emptied: a busy host takes hundreds of milliseconds for a session's.
KILL_WAIT_S = 5.0


class MemoryCgroup:
    """The cgroup of one slot; what differs between the hierarchies is in its subclasses."""

    hierarchy = ""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.limit_mb = 0

    def prepare(self, max_processes: int) -> None:
        """Makes a new (or an earlier server's) cgroup empty of memory caps; a hierarchy that
        can also turns swap off and caps its processes. Raises OSError."""
        self.limit_mb = -1  # unknown: whatever an earlier server left
        self.set_limit_mb(0)

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
        return self.path_in(lines) == self.path

    def path_in(self, proc_cgroup: list[str]) -> Path | None:
        """The cgroup of this hierarchy a process's /proc/PID/cgroup lines name."""
        raise NotImplementedError

    def kill_all(self, wait_s: float = KILL_WAIT_S) -> bool:
        """SIGKILLs every process in this cgroup until none is left (a process cannot leave
        it: the hierarchy is root's); returns whether it emptied."""
        return self.kill_all_but(frozenset(), wait_s)

    def kill_all_but(self, keep: frozenset[int], wait_s: float = KILL_WAIT_S) -> bool:
        """SIGKILLs every process in this cgroup but those of keep (a jail's own, kept for the
        next session) until no other is left, for up to wait_s (0: once, without waiting);
        returns whether that came to pass."""
        deadline = time.monotonic() + wait_s
        while True:
            others = [pid for pid in self.pids() if pid not in keep]
            if not others:
                return True
            signal_pids(others, signal.SIGKILL, self.holds)
            if time.monotonic() >= deadline:
                return not [pid for pid in self.pids() if pid not in keep]
            time.sleep(0.005)

    def reset_charge(self) -> None:
        """Reclaims what the cgroup's processes left charged to it (page cache; a wiped
        tmpfs's pages are freed with its files), so that the next session on the slot
        starts from the jail's own use. Raises OSError."""
        raise NotImplementedError

    def set_limit_mb(self, megabytes: int) -> None:
        """Caps the memory charged to this cgroup (0: no cap)."""
        raise NotImplementedError

    def open_procs(self) -> int:
        """A descriptor of this cgroup's procs: a process that writes 0 to it moves itself
        in (a session's, before it joins its jail). Raises OSError."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def jail_files(self) -> dict[str, str]:
        """The files a zygote in the slot's jail writes itself, by the names it knows them
        by (`sandbox/inside/cgroup.py`): `procs`, `limit` and, where there is one to keep
        at the limit, `memsw`."""
        raise NotImplementedError

    def open_for_jail(self) -> dict[str, int]:
        """Descriptors of `jail_files`: the process forked for each call moves in through
        `procs`, and each call's cap is written to `limit` (and `memsw`). Opened by the server
        (writes through them are then allowed), inherited by nothing but that zygote.
        Raises OSError."""
        fds: dict[str, int] = {}
        try:
            for key, name in self.jail_files().items():
                fds[key] = os.open(self.path / name, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            for fd in fds.values():
                os.close(fd)
            raise
        self.limit_mb = -1  # set from inside from now on: unknown here
        return fds

    def oom_kills(self) -> int:
        """How many processes the OOM killer has ended in this cgroup so far."""
        raise NotImplementedError

    def usage_mb(self) -> int:
        raise NotImplementedError

    def remove(self) -> None:
        """Removes the cgroup once its processes are gone (their charges go to the parent)."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot remove cgroup %s: %s", self.path, exc)

    def _read_counter(self, name: str, key: str) -> int:
        """The value of key in a flat-keyed file of the cgroup (0 where it cannot be read)."""
        try:
            for line in (self.path / name).read_text().splitlines():
                field, _, value = line.partition(" ")
                if field == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def _read_bytes_mb(self, name: str) -> int:
        try:
            return int((self.path / name).read_text()) >> 20
        except (OSError, ValueError):
            return 0


class V1MemoryCgroup(MemoryCgroup):
    """A slot's cgroup in cgroup v1's memory hierarchy. Its processes are capped by their
    uid's RLIMIT_NPROC (the pids controller is another hierarchy there)."""

    hierarchy = "v1"

    def path_in(self, proc_cgroup: list[str]) -> Path | None:
        path = v1_memory_path(proc_cgroup)
        return None if path is None else V1_ROOT / path.lstrip("/")

    def reset_charge(self) -> None:
        """Also zeroes the cgroup's peak and its count of refused charges: the next session
        reads nothing of the last one's use."""
        (self.path / "memory.force_empty").write_text("0")
        for name in ("memory.max_usage_in_bytes", "memory.failcnt", "memory.memsw.max_usage_in_bytes",
                     "memory.memsw.failcnt"):
            if (self.path / name).exists():
                (self.path / name).write_text("0")

    def set_limit_mb(self, megabytes: int) -> None:
        """The kernel reclaims what it can first and refuses (OSError EBUSY) a cap below
        what it cannot reclaim."""
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

    def jail_files(self) -> dict[str, str]:
        files = {"procs": "cgroup.procs", "limit": "memory.limit_in_bytes"}
        if (self.path / "memory.memsw.limit_in_bytes").exists():
            files["memsw"] = "memory.memsw.limit_in_bytes"
        return files

    def oom_kills(self) -> int:
        return self._read_counter("memory.oom_control", "oom_kill")

    def usage_mb(self) -> int:
        return self._read_bytes_mb("memory.usage_in_bytes")


class V2MemoryCgroup(MemoryCgroup):
    """A slot's cgroup in the unified (v2) hierarchy: its memory (`memory.max`) with no swap
    (`memory.swap.max` 0, so the cap is a cap on memory and swap together), and its
    processes and threads (`pids.max`, where the pids controller is delegated)."""

    hierarchy = "v2"

    def prepare(self, max_processes: int) -> None:
        super().prepare(max_processes)
        if (self.path / "memory.swap.max").exists():
            (self.path / "memory.swap.max").write_text("0")
        if max_processes and (self.path / "pids.max").exists():
            (self.path / "pids.max").write_text(str(max_processes))

    def path_in(self, proc_cgroup: list[str]) -> Path | None:
        path = unified_path(proc_cgroup)
        return None if path is None else V2_ROOT / path.lstrip("/")

    def reset_charge(self) -> None:
        """cgroup v2 keeps its peak and event counts for the cgroup's life (the server reads
        OOM kills as differences); the charge is reclaimed through `memory.reclaim`, as much
        of it as the kernel can."""
        reclaim = self.path / "memory.reclaim"
        usage = self.usage_mb()
        if usage and reclaim.exists():
            try:
                reclaim.write_text(f"{usage}M")
            except OSError as exc:
                if exc.errno != errno.EAGAIN:  # less than asked for was reclaimable
                    raise

    def set_limit_mb(self, megabytes: int) -> None:
        """Past a lower cap the kernel reclaims, then OOM-kills in the cgroup until it fits."""
        if megabytes == self.limit_mb:
            return
        (self.path / "memory.max").write_text(str(megabytes << 20) if megabytes else "max")
        self.limit_mb = megabytes

    def jail_files(self) -> dict[str, str]:
        return {"procs": "cgroup.procs", "limit": "memory.max"}

    def oom_kills(self) -> int:
        return self._read_counter("memory.events", "oom_kill")

    def usage_mb(self) -> int:
        return self._read_bytes_mb("memory.current")


class MemoryCgroups:
    """Where slot cgroups are made: below this server's own cgroup of the hierarchy found;
    `description` says which, and what each slot's cgroup caps."""

    def __init__(self, parent: Path, kind: type[MemoryCgroup], description: str) -> None:
        self.parent = parent
        self.kind = kind
        self.description = description

    @classmethod
    def open(cls) -> "MemoryCgroups":
        """The hierarchy for slot cgroups: cgroup v1's memory controller where it is mounted,
        else the unified hierarchy; raises CgroupUnavailable with the reason."""
        if os.geteuid() != 0:
            raise CgroupUnavailable("the server is not root")
        own = own_memory_cgroup()
        if own is not None:
            parent = V1_ROOT / own.lstrip("/") / GROUP
            make_group(parent)
            return cls(parent, V1MemoryCgroup, f"cgroup v1: a memory cgroup per slot under {parent} "
                                               "(memory and memory+swap capped; processes by their uid's RLIMIT_NPROC)")
        unified = own_unified_cgroup()
        if unified is None:
            raise CgroupUnavailable(f"no cgroup v1 memory controller is mounted at {V1_ROOT}, "
                                    f"and {V2_ROOT} is not a cgroup v2 hierarchy")
        base = V2_ROOT / unified.lstrip("/")
        held = delegate_controllers(base, unified)
        parent = base / GROUP
        make_group(parent)
        delegate_controllers(parent, f"{unified.rstrip('/')}/{GROUP}")
        moved = own_unified_cgroup() != unified
        where = f"below {unified}" + (f", whose processes moved into {SERVER_LEAF}" if moved else "")
        caps = "memory.max, memory.swap.max 0" + (", pids.max" if "pids" in held else "; no pids controller")
        return cls(parent, V2MemoryCgroup, f"cgroup v2 ({where}): a cgroup per slot under {parent} ({caps})")

    def for_slot(self, name: str, max_processes: int = 0) -> MemoryCgroup:
        """The slot's cgroup, made empty of limits, with at most max_processes processes
        and threads where the hierarchy caps them (0: no cap); raises OSError."""
        path = self.parent / name
        path.mkdir(exist_ok=True)
        group = self.kind(path)
        group.prepare(max_processes)
        return group


def make_group(path: Path) -> None:
    """Makes the server's group of slot cgroups; raises CgroupUnavailable."""
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise CgroupUnavailable(f"cannot create {path}: {exc.strerror}") from exc


def delegate_controllers(base: Path, name: str) -> set[str]:
    """Hands the memory controller (and pids, where base has it) to base's children; returns
    those handed. Where base holds processes (the server's own cgroup: a delegated one, or a
    container's cgroup namespace), they move into its child `SERVER_LEAF` first, as
    cgroup v2 requires. Raises CgroupUnavailable."""
    try:
        available = set((base / "cgroup.controllers").read_text().split())
        enabled = set((base / "cgroup.subtree_control").read_text().split())
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read the controllers of cgroup {name}: {exc.strerror}") from exc
    if "memory" not in available:
        raise CgroupUnavailable(f"the memory controller is not delegated to cgroup {name} "
                                f"(it has: {' '.join(sorted(available)) or 'none'})")
    wanted = {controller for controller in V2_CONTROLLERS if controller in available}
    if wanted <= enabled:
        return wanted
    control = " ".join(f"+{controller}" for controller in sorted(wanted - enabled))
    try:
        try:
            (base / "cgroup.subtree_control").write_text(control)
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            move_processes_to_leaf(base)
            (base / "cgroup.subtree_control").write_text(control)
    except OSError as exc:
        raise CgroupUnavailable(f"cannot hand {control} to the children of cgroup {name}: {exc.strerror}") from exc
    return wanted


def move_processes_to_leaf(base: Path, rounds: int = 20) -> None:
    """Moves every process of cgroup base (forks while it moves included) into base's child
    `SERVER_LEAF`; raises OSError."""
    leaf = base / SERVER_LEAF
    leaf.mkdir(exist_ok=True)
    for _ in range(rounds):
        pids = (base / "cgroup.procs").read_text().split()
        if not pids:
            return
        for pid in pids:
            try:
                (leaf / "cgroup.procs").write_text(pid)
            except OSError as exc:
                if exc.errno != errno.ESRCH:
                    raise
    raise OSError(errno.EBUSY, f"the processes of {base} kept coming")


class SlotCgroups:
    """The cgroups of one pool's slots: each made once, on first use, kept for every
    process tree the slot runs, and removed together when the pool closes."""

    def __init__(self, cgroups: MemoryCgroups | None, max_processes: int = 0) -> None:
        self._cgroups = cgroups
        self.max_processes = max_processes
        self._made: dict[str, MemoryCgroup] = {}

    def of(self, slot_name: str) -> MemoryCgroup | None:
        """The slot's cgroup; None without memory cgroups. Raises OSError."""
        if self._cgroups is None:
            return None
        if slot_name not in self._made:
            self._made[slot_name] = self._cgroups.for_slot(slot_name, self.max_processes)
        return self._made[slot_name]

    def remove_all(self) -> None:
        for cgroup in self._made.values():
            cgroup.remove()


def own_memory_cgroup() -> str | None:
    """This process's path in the v1 memory hierarchy, when that hierarchy is mounted."""
    if not (V1_ROOT / "cgroup.procs").exists():
        return None
    return v1_memory_path(own_cgroup_lines())


def own_unified_cgroup() -> str | None:
    """This process's path in the unified (v2) hierarchy, when that is what is mounted at
    /sys/fs/cgroup."""
    if not (V2_ROOT / "cgroup.controllers").exists():
        return None
    return unified_path(own_cgroup_lines())


def own_cgroup_lines() -> list[str]:
    try:
        return Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []


def v1_memory_path(proc_cgroup: list[str]) -> str | None:
    """The path of the v1 memory hierarchy's cgroup that /proc/PID/cgroup lines name."""
    for line in proc_cgroup:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return None


def unified_path(proc_cgroup: list[str]) -> str | None:
    """The path of the unified (v2) hierarchy's cgroup that /proc/PID/cgroup lines name."""
    return next((line.split(":", 2)[2] for line in proc_cgroup if line.startswith("0::")), None)
