"""What the host does to a running jail from outside: find its processes, reach into its
private filesystem, cap its writable mounts, cut its mounts off the host's.

A jail's home, /tmp, /var/tmp, /dev/shm and /run/lock are tmpfs mounts that firejail makes in the
jail's own mount namespace, so the host reaches them only through `/proc/<pid>/root` of
a process inside, and caps them by remounting them there (`nsenter`, as root). Nothing here runs code inside the jail.
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


def is_own_mount(pid: int, path: str | Path) -> bool:
    """Whether path, as the process pid sees it, lies on a filesystem other than the
    host's path of that name (the jail's own /tmp, not the host's)."""
    try:
        return os.stat(jail_view(pid, path)).st_dev != os.stat(path).st_dev
    except OSError:
        return False


def mount_point(pid: int, path: str | Path) -> str:
    """The mount point, as the process pid sees it, of the filesystem that holds path (the
    jail's /dev/shm is a directory of its private /dev, which hides the host's /dev/shm
    mounts that its mount table still lists): the mount of path's device nearest to it."""
    path = os.path.normpath(str(path))
    device = os.stat(jail_view(pid, path)).st_dev
    wanted = f"{os.major(device)}:{os.minor(device)}"
    best = "/"
    with open(f"/proc/{pid}/mountinfo") as mounts:
        for line in mounts:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 and the like
            if fields[2] == wanted and (path == point or path.startswith(point.rstrip("/") + "/")) \
                    and len(point) >= len(best):
                best = point
    return best


def cap_tmpfs(pid: int, path: str | Path, size_mb: int, files: int) -> None:
    """Remounts the jail's private tmpfs that holds path (its home, /tmp, /var/tmp, its
    /dev for /dev/shm; as pid sees it) at size_mb and files inodes, nosuid (and nodev but
    for /dev); raises OSError when it cannot (not root, no jail). Programs may run what they
    write there, as they may anywhere: the jail's seccomp filter, uid and limits hold."""
    if not in_other_mount_namespace(pid):
        raise OSError(f"process {pid} has no mount namespace of its own")
    point = mount_point(pid, path)
    if point == "/":
        raise OSError(f"the jail's {path} is no mount of its own")
    devices = "dev" if point == "/dev" else "nodev"
    options = f"remount,nosuid,{devices},exec,size={size_mb}m,nr_inodes={files}"
    try:
        done = subprocess.run(["nsenter", f"--target={pid}", "--mount", "--root", "--", "mount", "--no-mtab", "-o", options, point],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"cannot cap the jail's {point}: {exc}") from exc
    if done.returncode != 0:
        raise OSError(f"cannot cap the jail's {point}: {done.stderr.strip() or done.returncode}")



def make_mounts_private(pid: int) -> None:
    """Makes every mount of the jail that pid is in private (as pid sees them, from the
    host, as root): firejail copies the host's mounts as its slaves, so that a host mount
    made later (a container's overlay, a netns, a tmpfs) would appear inside, with the
    host's options. Raises OSError when it cannot, or when a mount still receives the
    host's (`shared_mounts`)."""
    try:
        done = subprocess.run(["nsenter", f"--target={pid}", "--mount", "--root", "--", "mount", "--no-mtab", "--make-rprivate", "/"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"cannot make the jail's mounts private: {exc}") from exc
    if done.returncode != 0:
        raise OSError(f"cannot make the jail's mounts private: {done.stderr.strip() or done.returncode}")
    if shared := shared_mounts(pid):
        raise OSError(f"mounts of the jail still follow the host's: {shared[:3]}")


def shared_mounts(pid: int) -> list[str]:
    """The mount points, as pid sees them, of its mounts that share mount events with
    another namespace (mountinfo's optional fields shared:N or master:N)."""
    shared = []
    with open(f"/proc/{pid}/mountinfo") as mounts:
        for line in mounts:
            fields, _, _ = line.partition(" - ")
            parts = fields.split()
            if any(tag.startswith(("shared:", "master:")) for tag in parts[6:]):
                shared.append(parts[4])
    return shared
