"""Leaving nothing of a call in its jail: its processes, its files, and the scratch
space it used (measured while it runs)."""

import os
import shutil
import signal

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Iterable

REAP_ROUNDS = 200


def kill_everything_else() -> None:
    """SIGKILLs every process this uid can signal in the jail and reaps them all.

    The zygote is a child subreaper, so double-forked daemons are its children too;
    repeat until nothing is left, as a fork in flight can add a process after a kill.
    """
    for _ in range(REAP_ROUNDS):
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue


def wipe(directory: str) -> None:
    """Removes everything under directory, whatever permissions the call left."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        path = entry.path
        try:
            if entry.is_dir(follow_symlinks=False):
                for root, dirs, _ in os.walk(path):
                    for name in dirs:
                        try:  # a symlink to a directory is listed too: Linux cannot chmod a link
                            os.chmod(os.path.join(root, name), 0o700, follow_symlinks=False)
                        except (OSError, NotImplementedError):
                            pass
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def tmpfs_directories(directories: "Iterable[str]") -> "list[str]":
    """Those of directories on a tmpfs, where a directory's size counts its entries: one
    whose size is its empty size holds nothing (a call cannot fake it), and need not be
    wiped."""
    tmpfs_devices: set[int] = set()
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields, _, rest = line.partition(" - ")
            if rest.split()[0] == "tmpfs":
                major, _, minor = fields.split()[2].partition(":")
                tmpfs_devices.add(os.makedev(int(major), int(minor)))
    return [directory for directory in directories if os.stat(directory).st_dev in tmpfs_devices]


def distinct_filesystems(directories: "Iterable[str]") -> "tuple[str, ...]":
    """One directory of each filesystem among directories (those that exist)."""
    seen: dict[int, str] = {}
    for directory in directories:
        try:
            seen.setdefault(os.stat(directory).st_dev, directory)
        except OSError:
            pass
    return tuple(seen.values())


def bytes_used(directories: "Iterable[str]") -> int:
    """Bytes in use on the filesystems of directories (one each: `distinct_filesystems`)."""
    used = 0
    for directory in directories:
        stats = os.statvfs(directory)
        used += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    return used
