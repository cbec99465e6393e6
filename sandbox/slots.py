"""Slots: the uids jails run as, each with its own scratch directory (its home).

RLIMIT_NPROC counts per uid machine-wide and firejail only jails a non-root user, so
every worker and every session gets a dedicated system user. `create_slot_users`
(run by `toolserver setup-sandbox`, as root) makes them; `discover_slots` finds them at
start-up. A server that is not root runs every jail as its own uid in one slot family.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import logging
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

from sandbox.jail import Slot
from sandbox.pidfds import signal_pids

log = logging.getLogger(__name__)


def running_as_root() -> bool:
    return os.geteuid() == 0


def slot_user_name(prefix: str, index: int) -> str:
    return f"{prefix}{index}"


def create_slot_users(prefix: str, count: int, scratch_root: Path, first_uid: int | None = None) -> list[str]:
    """Creates the missing system users prefix0..prefix{count-1}, each with a group of its
    own; returns those created.

    With first_uid, user i gets uid and gid first_uid + i (an image fixes them: the node's
    kernel counts RLIMIT_NPROC per uid across containers, so slot uids must not be the 999
    and below that `useradd --system` picks, and other images use); without, each gets the
    lowest id from FIRST_FREE_ID up that no user or group has. The entries are appended to
    /etc/passwd, /etc/group, /etc/shadow and /etc/gshadow in one pass under the lock that
    `useradd` takes (a server with a thousand sessions needs a thousand users: `useradd`
    takes seconds each).
    """
    if not running_as_root():
        raise PermissionError("creating sandbox users needs root")
    with account_files_locked():
        users = {entry.pw_name: entry for entry in pwd.getpwall()}
        taken = {entry.pw_uid for entry in users.values()} | {entry.gr_gid for entry in grp.getgrall()}
        group_names = {entry.gr_name for entry in grp.getgrall()}
        missing: list[tuple[str, int, str]] = []
        next_free = FIRST_FREE_ID
        for index in range(count):
            name = slot_user_name(prefix, index)
            home = str(scratch_root / name)
            entry = users.get(name)
            if entry is not None:
                if first_uid is not None and entry.pw_uid != first_uid + index:
                    log.warning("slot user %s exists with uid %d, not %d: kept", name, entry.pw_uid, first_uid + index)
                if entry.pw_dir != home:
                    subprocess.run(["usermod", "--home", home, name], check=True, capture_output=True)
                continue
            if first_uid is not None:
                uid = first_uid + index
                if uid in taken:
                    raise ValueError(f"uid or gid {uid} for slot user {name} is taken")
            else:
                while next_free in taken:
                    next_free += 1
                uid = next_free
            if name in group_names:
                raise ValueError(f"a group named {name} exists without its slot user")
            taken.add(uid)
            missing.append((name, uid, home))
        if missing:
            append_accounts(missing)
    return [name for name, _, _ in missing]


FIRST_FREE_ID = 200000  # above ordinary users' ids and 65534 (nobody)
ACCOUNT_LOCK = "/etc/.pwd.lock"


@contextlib.contextmanager
def account_files_locked() -> Iterator[None]:
    """Holds the lock that shadow's tools (useradd, passwd) take on the account files."""
    with open(ACCOUNT_LOCK, "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def append_accounts(users: list[tuple[str, int, str]], etc: Path = Path("/etc")) -> None:
    """Appends (name, uid = gid, home) system users, locked, with no shell, to the account
    files in etc."""
    days = int(time.time() // 86400)
    lines = {
        "group": [f"{name}:x:{uid}:" for name, uid, _ in users],
        "gshadow": [f"{name}:!::" for name, _, _ in users],
        "passwd": [f"{name}:x:{uid}:{uid}::{home}:/usr/sbin/nologin" for name, uid, home in users],
        "shadow": [f"{name}:!:{days}::::::" for name, _, _ in users],
    }
    for name, entries in lines.items():
        path = etc / name
        if not path.exists():
            continue
        with open(path, "r+") as accounts:
            text = accounts.read()
            if text and not text.endswith("\n"):
                accounts.write("\n")
            accounts.write("\n".join(entries) + "\n")
            accounts.flush()
            os.fsync(accounts.fileno())


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
        signalled += signal_processes_of_uid(slot.uid, signal.SIGKILL, pids)
        time.sleep(0.005)
    return signalled


def signal_processes_of_uid(uid: int, signum: int, pids: list[int] | None = None) -> int:
    """Sends signum to each process of pids (default: every process of uid) that still
    runs as uid, through a pidfd (sandbox/pidfds.py); returns how many were signalled."""
    return signal_pids(processes_of_uid(uid) if pids is None else pids, signum, lambda pid: uid in uids_of(pid))


def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real or effective uid is uid."""
    return [int(entry.name) for entry in os.scandir("/proc")
            if entry.name.isdigit() and uid in uids_of(int(entry.name))]


def uids_of(pid: int) -> tuple[int, ...]:
    """The real and effective uid of process pid, read from its status (a non-dumpable
    process's /proc entry is owned by root); () once it is gone or has exited: a zombie
    runs nothing and cannot be killed, and waiting for its parent to reap it would hold
    every kill of a jail for all its rounds."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                    return ()
                if line.startswith("Uid:"):
                    return tuple(int(value) for value in line.split()[1:3])
    except (FileNotFoundError, ProcessLookupError):
        return ()
    return ()
