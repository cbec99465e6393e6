"""Slots: the uids jails run as, each with its own scratch directory (its home).

RLIMIT_NPROC counts per uid machine-wide and firejail only jails a non-root user, so
every worker and every session gets a dedicated system user. `create_slot_users`
(run by `toolserver setup-sandbox`, as root) makes them; `discover_slots` finds them at
start-up. A server that is not root runs every jail as its own uid in one slot family.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from sandbox.jail import Slot

log = logging.getLogger(__name__)


def running_as_root() -> bool:
    return os.geteuid() == 0


def slot_user_name(prefix: str, index: int) -> str:
    return f"{prefix}{index}"


def create_slot_users(prefix: str, count: int, scratch_root: Path, first_uid: int | None = None) -> list[str]:
    """Creates the missing system users prefix0..prefix{count-1}; returns those created.

    With first_uid, user i gets uid and gid first_uid + i (an image fixes them: the
    node's kernel counts RLIMIT_NPROC per uid across containers, so slot uids must not
    be the 999 and below that `useradd --system` picks, and other images use); without,
    useradd chooses.
    """
    if not running_as_root():
        raise PermissionError("creating sandbox users needs root")
    created = []
    for index in range(count):
        name = slot_user_name(prefix, index)
        home = str(scratch_root / name)
        try:
            entry = pwd.getpwnam(name)
            if first_uid is not None and entry.pw_uid != first_uid + index:
                log.warning("slot user %s exists with uid %d, not %d: kept", name, entry.pw_uid, first_uid + index)
            if entry.pw_dir != home:
                subprocess.run(["usermod", "--home", home, name], check=True, capture_output=True)
            continue
        except KeyError:
            pass
        if first_uid is None:
            ids = ["--user-group"]
        else:
            uid = str(first_uid + index)
            subprocess.run(["groupadd", "--system", "--gid", uid, name], check=True, capture_output=True)
            ids = ["--uid", uid, "--gid", uid]
        subprocess.run(
            ["useradd", "--system", *ids, "--no-create-home", "--no-log-init",
             "--home-dir", home, "--shell", "/usr/sbin/nologin", name],
            check=True, capture_output=True,
        )
        created.append(name)
    return created


def discover_slots(prefix: str, count: int, scratch_root: Path, first: int = 0) -> list[Slot]:
    """The slots this server may use: its slot users when root, else its own uid."""
    indexes = range(first, first + count)
    if not running_as_root():
        me = pwd.getpwuid(os.getuid())
        return [Slot(f"{me.pw_name}-{i}", me.pw_uid, me.pw_gid, scratch_root / f"{me.pw_name}-{i}")
                for i in indexes]
    slots = []
    for index in indexes:
        name = slot_user_name(prefix, index)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_dir != str(scratch_root / name):
            log.warning("slot user %s has home %s, not %s: skipped (run toolserver setup-sandbox)",
                        name, entry.pw_dir, scratch_root / name)
            continue
        slots.append(Slot(name, entry.pw_uid, entry.pw_gid, scratch_root / name))
    return slots


def prepare_scratch(slot: Slot) -> None:
    """Makes slot.scratch (the slot user's home) an empty directory only its uid can use.

    Inside the jail firejail mounts a private tmpfs on this home, discarded with the
    jail; the zygote wipes it after every call.
    """
    prepare_private_directory(slot.scratch, slot.uid, slot.gid)


def prepare_private_directory(path: Path, uid: int, gid: int) -> None:
    """Makes path an empty directory that only uid can use."""
    path.mkdir(parents=True, exist_ok=True)
    clear_directory(path)
    if running_as_root():
        os.chown(path, uid, gid)
    os.chmod(path, 0o700)


def clear_directory(path: Path) -> None:
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def kill_slot_processes(slot: Slot, rounds: int = 50) -> int:
    """SIGKILLs every process running as slot's uid; returns how many were signalled.

    Only meaningful when the slot uid is not the server's own (root mode).
    """
    if slot.uid == os.getuid():
        return 0
    signalled = 0
    for _ in range(rounds):
        pids = processes_of_uid(slot.uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                signalled += 1
            except ProcessLookupError:
                pass
        time.sleep(0.005)
    return signalled


def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real or effective uid is uid (read from status: a non-dumpable
    process's /proc entry is owned by root)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as status:
                for line in status:
                    if line.startswith("Uid:"):
                        real, effective = line.split()[1:3]
                        if uid in (int(real), int(effective)):
                            pids.append(int(entry.name))
                        break
        except (FileNotFoundError, ProcessLookupError):
            continue
    return pids
