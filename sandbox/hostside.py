"""What the host does to a running jail from outside: find its processes, reach into its
private filesystem, cap its home.

A jail's home is a tmpfs that firejail mounts in the jail's own mount namespace, so the
host reaches it only through `/proc/<pid>/root` of a process inside, and caps it by
remounting it there (`nsenter`, as root). Nothing here runs code inside the jail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

UNIX_PATH_MAX = 107  # sun_path holds 108 bytes, the last one a NUL


def children_of(pids: set[int]) -> dict[int, int]:
    """Every process whose parent is in pids or below them: {pid: parent}."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        parents[int(entry.name)] = int(fields[1])
    tree: dict[int, int] = {}
    frontier = set(pids)
    while frontier:
        found = {pid: parent for pid, parent in parents.items() if parent in frontier and pid not in tree}
        tree.update(found)
        frontier = set(found)
    return tree


def descendants(root: int) -> list[int]:
    """The processes below root (a jail's firejail process), parents before children."""
    return sorted(children_of({root}))


def namespace_pid(pid: int) -> int | None:
    """pid as the jail's own pid namespace numbers it (the last NSpid entry)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def host_pid(root: int, jail_pid: int) -> int | None:
    """The host pid of the process below root that the jail numbers jail_pid."""
    for pid in descendants(root):
        if namespace_pid(pid) == jail_pid:
            return pid
    return None


def in_other_mount_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False


def jail_view(pid: int, path: str | Path) -> str:
    """path as the process pid sees it, reachable from the host."""
    if not in_other_mount_namespace(pid):
        return str(path)
    return f"/proc/{pid}/root/{str(path).lstrip('/')}"


def cap_home(pid: int, home: str | Path, size_mb: int, files: int) -> None:
    """Remounts the jail's home tmpfs (seen by pid) at size_mb and files inodes, keeping it
    nosuid, nodev and noexec; raises OSError when it cannot (not root, no jail)."""
    if not in_other_mount_namespace(pid):
        raise OSError(f"process {pid} has no mount namespace of its own")
    options = f"remount,nosuid,nodev,noexec,size={size_mb}m,nr_inodes={files}"
    try:
        done = subprocess.run(["nsenter", f"--target={pid}", "--mount", "--", "mount", "-o", options, str(home)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"cannot cap the jail's home: {exc}") from exc
    if done.returncode != 0:
        raise OSError(f"cannot cap the jail's home: {done.stderr.strip() or done.returncode}")
