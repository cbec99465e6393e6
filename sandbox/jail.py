"""The one place where a sandbox policy becomes a firejail command line.

A `JailPolicy` is data (reviewable, versioned); `jail_command` turns it and a program
into argv. What the jail guarantees is proven at run time by `sandbox.selftest`, never
assumed from these flags: firejail silently runs unsandboxed when it believes it is
already inside a container.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.root import JailRoot, root_arguments


@dataclass(frozen=True)
class JailPolicy:
    """What every jail gets, whatever runs in it."""

    firejail: str = "firejail"
    max_processes: int = 64          # --rlimit-nproc, per slot uid
    max_file_mb: int = 64            # --rlimit-fsize
    max_open_files: int = 256        # --rlimit-nofile
    memory_mb: int = 0               # --rlimit-as for the whole jail; 0 leaves it to the call
    home_mb: int = 0                 # size of the home tmpfs (and of each private dir), set once the
                                     # jail runs; 0: uncapped
    home_files: int = 0              # files (inodes) each of them may hold; 0: uncapped
    root: JailRoot = field(default_factory=JailRoot)  # the host paths the jail shows (sandbox/root.py)
    hidden_paths: tuple[str, ...] = ()  # blacklisted inside the jail (config, project tree), even where
                                        # a path of the root holds them
    # Writable besides the home, each a tmpfs of the jail's own (--private-tmp, --private-dev,
    # and firejail's /run/lock, which /var/lock names), capped like the home and wiped after
    # every call, as a program may write them anywhere.
    private_dirs: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


@dataclass(frozen=True)
class Slot:
    """A uid the jail runs as and the only directory it may write (its home)."""

    name: str
    uid: int
    gid: int
    scratch: Path
    extra_env: dict[str, str] = field(default_factory=dict)


def jail_command(policy: JailPolicy, slot: Slot, program: list[str], keep_fds: tuple[int, ...] = ()) -> list[str]:
    """The firejail argv that runs program in slot under policy; the jail shows of the
    host only its root's paths (read-only), shares no writable host directory with
    anyone, and of the descriptors it is started with only keep_fds (which the program is
    told of) cross into it."""
    scratch = str(slot.scratch)
    argv = [
        policy.firejail,
        "--quiet",
        "--noprofile",
        "--net=none",
        "--caps.drop=all",
        "--nonewprivs",
        "--noroot",
        "--seccomp",
        "--restrict-namespaces",
        "--ipc-namespace",
        "--hostname=sandbox",
        "--nogroups",
        "--private-dev",
        "--private-tmp",
        f"--private={scratch}",
        "--read-only=/",
    ]
    argv.append(f"--read-write={scratch}")
    argv += root_arguments(policy.root)
    argv += [f"--nowhitelist={path}" for path in host_tmp_sockets()]
    argv += [f"--blacklist={path}" for path in policy.hidden_paths if path]
    argv += [
        f"--rlimit-nproc={policy.max_processes}",
        f"--rlimit-fsize={policy.max_file_mb * 1024 * 1024}",
        f"--rlimit-nofile={policy.max_open_files}",
    ]
    if policy.memory_mb:
        argv.append(f"--rlimit-as={policy.memory_mb * 1024 * 1024}")
    if keep_fds:
        argv.append("--keep-fd=" + ",".join(map(str, keep_fds)))
    return argv + program


def host_tmp_sockets(tmp: Path = Path("/tmp")) -> list[str]:
    """The places in the host's /tmp that firejail's --private-tmp would carry into the
    jail's: the X11 sockets' directory (systemd makes /tmp/.X11-unix on every boot, so a
    jail would reach the host's display servers), sndio's and PulseAudio's. Each is passed
    to --nowhitelist: the jail's /tmp starts empty."""
    pulse = sorted(str(path) for path in tmp.glob("pulse-*"))
    return [str(tmp / ".X11-unix"), str(tmp / "sndio"), *pulse]


def jail_environment(slot: Slot, interpreter: str = "") -> dict[str, str]:
    """The whole environment a jailed process starts with: nothing of the server's."""
    env = {**runtime_environment(interpreter), "HOME": str(slot.scratch), "TMPDIR": str(slot.scratch)}
    env.update(slot.extra_env)
    return env


def runtime_environment(interpreter: str = "") -> dict[str, str]:
    """The environment the runtime's interpreter runs in, without a home. The interpreter's
    directory (the runtime's bin/) comes first on PATH, so that `python3`, `python` and the
    runtime's tools are the runtime's, as in an activated environment."""
    runtime_bin = os.path.dirname(interpreter) if interpreter else ""
    return {
        "PATH": ":".join(filter(None, (runtime_bin, "/usr/local/bin:/usr/bin:/bin"))),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MALLOC_ARENA_MAX": "2",  # threads otherwise reserve 64 MB of address space each
        # pyarrow (pandas' strings) allocates with the C library's malloc: its default,
        # mimalloc, reserves a 1 GB arena that a call's address-space limit refuses.
        "ARROW_DEFAULT_MEMORY_POOL": "system",
    }


def firejail_path(policy: JailPolicy) -> str | None:
    """The firejail binary's path, or None when it cannot be found."""
    return shutil.which(policy.firejail)
