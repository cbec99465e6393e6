"""A jail's root as data: the host paths a jail shows, and the firejail arguments that hide
every other one.

A jail sees its own /proc, /dev, /tmp and home, the host's /sys, and of the rest of the
host's tree only what `JailRoot.paths` names: the system's programs and libraries
(`BASE_ROOT`), a minimal /etc, and what each tool declares its processes need (the calls'
runtime, a toolchain outside /usr, files built for the jail). Every other directory at
the top of the tree (a directory in / or in /usr: firejail's whitelist works there) is an
empty tmpfs in the jail, or holds only the named paths below it (firejail's --whitelist,
which mounts a tmpfs on the directory and binds those paths into it: what the host adds
there later is never seen); a file in / itself is blacklisted (present, empty and
unreadable). Symbolic links are left as they are: where they lead is decided by the
directory their target lies in.

This module only computes; what the jail shows is proven from inside by the self-test
(`sandbox.selftest`, checks `root_of_its_own` and `session_root`).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

# What every jail shows of the host, each entry a path or a glob (expanded when a jail
# starts; what does not exist is left out). Each line says why.
BASE_ROOT: tuple[str, ...] = (
    # The system's programs, libraries, headers and data (compilers, the JDK, Go, Rust,
    # Node.js from Debian), and merged /usr's links to them.
    "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec", "/usr/include",
    "/usr/share", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    # A minimal /etc: the dynamic linker's cache, names (users, groups, hosts, services),
    # the time zone and locale aliases, TLS roots, Debian's alternatives (java, cc, ...) and
    # the configuration the JDK, Python, fontconfig, file(1) and readline read.
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
    "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/localtime",
    "/etc/timezone", "/etc/locale.alias", "/etc/mime.types", "/etc/os-release", "/etc/debian_version", "/etc/ssl",
    "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/alternatives", "/etc/java-*", "/etc/python3*",
    "/etc/fonts", "/etc/magic", "/etc/magic.mime", "/etc/mtab", "/etc/inputrc", "/etc/bash.bashrc",
    "/etc/terminfo",
    # Writable places of the jail's own (firejail mounts a tmpfs on each; the host caps them).
    "/var/tmp", "/var/lock", "/run/lock",
)
# Top-level places a jail has of its own or the kernel's, never emptied: firejail makes
# /dev, /tmp and the home private and mounts the PID namespace's /proc; /sys is the
# kernel's view of devices and limits (CPU counts, cgroups) that runtimes read.
OWN_PLACES = ("/proc", "/sys", "/dev", "/tmp")
# What firejail keeps in a top directory it empties: its runtime directory (the jail's
# compiled seccomp filters, which a session reads to join the jail; read-only inside).
FIREJAIL_OWN = ("/run/firejail",)
# Directories whose entries are top directories themselves (firejail whitelists in them).
NESTED_TOPS = ("/usr",)
# The name whitelisted in a top directory that shows nothing: it never exists, so the
# directory becomes an empty tmpfs.
ABSENT = ".toolserver-absent"


@dataclass(frozen=True)
class JailRoot:
    """The host paths a jail shows (paths or globs): `BASE_ROOT` and what the tools declare."""

    paths: tuple[str, ...] = BASE_ROOT

    def with_paths(self, *paths: str) -> JailRoot:
        """This root and paths, each once, in order."""
        return JailRoot(tuple(dict.fromkeys((*self.paths, *(os.path.normpath(p) for p in paths if p)))))

    def shown(self, host: Path = Path("/")) -> list[str]:
        """The paths that exist in host's tree now, globs expanded, normalized (not
        resolved), each as the jail names it (from /)."""
        found: list[str] = []
        for pattern in self.paths:
            on_host = str(host / pattern.lstrip("/"))
            matches = sorted(glob.glob(on_host)) if glob.has_magic(pattern) else [on_host]
            found += ["/" + os.path.relpath(path, host) for path in matches if os.path.lexists(path)]
        return list(dict.fromkeys(os.path.normpath(path) for path in found))


def top_directories(host: Path = Path("/")) -> list[str]:
    """The directories of host's tree that firejail can empty or whitelist in: each real
    directory in / (but the jail's own places) and in /usr; links are not among them."""
    tops: list[str] = []
    for parent in [host, *(host / nested.lstrip("/") for nested in NESTED_TOPS)]:
        try:
            entries = sorted(os.scandir(parent), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            path = "/" + os.path.relpath(entry.path, host)
            if entry.is_dir(follow_symlinks=False) and path not in OWN_PLACES and path not in NESTED_TOPS:
                tops.append(path)
    return tops


def top_files(host: Path = Path("/")) -> list[str]:
    """The files (not directories, not links) in / itself: blacklisted, as no tmpfs can hide them."""
    return sorted("/" + entry.name for entry in os.scandir(host)
                  if not entry.is_dir(follow_symlinks=False) and not entry.is_symlink())


def within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def root_layout(root: JailRoot, host: Path = Path("/")) -> dict[str, tuple[str, ...] | None]:
    """Each top directory of the host and what the jail shows of it: None for all of it
    (it lies in a shown path), else the shown paths below it (none: it is empty)."""
    shown = root.shown(host)
    layout: dict[str, tuple[str, ...] | None] = {}
    for top in top_directories(host):
        if any(within(top, path) for path in shown):
            layout[top] = None
        else:
            layout[top] = tuple(path for path in shown if within(path, top) and path != top)
    return layout


def root_arguments(root: JailRoot, host: Path = Path("/")) -> list[str]:
    """The firejail arguments that leave a jail only root's paths of the host's tree."""
    arguments: list[str] = []
    for top, below in root_layout(root, host).items():
        if below is None:
            continue
        arguments += [f"--whitelist={path}" for path in below] or [f"--whitelist={top}/{ABSENT}"]
    return arguments + [f"--blacklist={path}" for path in top_files(host)]


def expected_names(root: JailRoot, home: str, host: Path = Path("/")) -> dict[str, list[str] | None]:
    """What a jail whose home is home may list in each top directory: None where the root
    shows it whole, else the first names of the paths shown below it (the home and
    firejail's own among them)."""
    expected: dict[str, list[str] | None] = {}
    for top, below in root_layout(root, host).items():
        if below is None:
            expected[top] = None
            continue
        inside = [path for path in (*below, home, *FIREJAIL_OWN) if within(path, top) and path != top]
        expected[top] = sorted({os.path.relpath(path, top).split("/")[0] for path in inside})
    return expected


def interpreter_paths(interpreter: str) -> tuple[str, ...]:
    """What a jail shows for a Python interpreter to run: a virtual environment's whole
    directory and its base interpreter's bin and lib directories (pyvenv.cfg's home), or
    an installed Python's bin and lib directories."""
    prefix = Path(os.path.abspath(interpreter)).parent.parent
    try:
        config = (prefix / "pyvenv.cfg").read_text()
    except OSError:
        return (str(prefix / "bin"), str(prefix / "lib"))
    homes = [value.strip() for key, _, value in (line.partition("=") for line in config.splitlines())
             if key.strip() == "home" and value.strip()]
    return (str(prefix), *(path for home in homes for path in (home, str(Path(home).parent / "lib"))))
