"""Making a zygote warm before it forks: its preloads, its heap on huge pages, its
streams, its hardening, and the sources the host sent with it."""

import ctypes
import importlib
import signal
import sys
import types

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Iterable

PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1+; elsewhere madvise fails and nothing changes
HUGE_PAGE = 2 << 20
LIBRARY_PACKAGE = "sandbox"  # the top of the library's names in sys.modules (sandbox.worker.LIBRARY)


def preload(modules: "Iterable[str]") -> "tuple[list[str], dict[str, str]]":
    """Imports modules; returns those loaded and, by name, why the others failed."""
    loaded: list[str] = []
    failed: dict[str, str] = {}
    for name in modules:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as exc:
            failed[name] = repr(exc)
    return loaded, failed


def load_source(name: str, source: str) -> types.ModuleType:
    """A module made from source that the host sent, kept out of sys.modules."""
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module


def confine(source: str) -> None:
    """Installs the jail's seccomp layer (sandbox/confine.py) on this process and every
    call it will fork; the module and its native handles are dropped afterwards."""
    load_source("confine", source).apply()


def forget_library() -> None:
    """Drops the library the bootstrap installed from sys.modules: a program that imports
    a module of the same name (its own `frames.py`, a `sandbox` package) finds its own, as
    under python3. The library's modules stay bound where they were imported."""
    for name in [name for name in sys.modules if name == LIBRARY_PACKAGE or name.startswith(LIBRARY_PACKAGE + ".")]:
        del sys.modules[name]


def harden_process() -> None:
    """Dies with the jail, is not dumpable (no ptrace, no /proc/pid/mem of it), and
    becomes the subreaper of everything its calls start."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def text_streams() -> None:
    """sys.stdin, sys.stdout and sys.stderr on fds 0, 1 and 2, as `python3` makes them when
    they are pipes in a UTF-8 locale (stdout block-buffered, stderr line-buffered, no
    newline translation): a call's process points the fds at its own pipes. They hold
    nothing buffered when a call forks (the zygote never reads or writes them)."""
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", newline="\n",
                      closefd=False)
    # typeshed marks the three Final; the interpreter lets them be rebound, as python3's are these
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]


def vm_size_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def collapse_heap_into_huge_pages() -> int:
    """Backs the warm heap with 2 MB pages, so that each fork copies a few hundred page
    table entries instead of ~12,000 and each child's exit frees as few.

    A child that writes to a shared huge page gets its PMD split and one 4 KB page
    copied (Linux 5.8+), so copy-on-write stays small. Best effort: returns the
    megabytes collapsed (0 where the kernel cannot).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        path = fields[5] if len(fields) > 5 else ""
        if not fields[1].startswith("rw") or fields[1][3] != "p" or path not in ("", "[heap]"):
            continue
        start = (low + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
        end = high & ~(HUGE_PAGE - 1)
        if end <= start:
            continue
        libc.madvise(start, end - start, MADV_HUGEPAGE)
        if libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += (end - start) >> 20
    return collapsed
