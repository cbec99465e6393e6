"""The two programs a cpp call's jailed process runs: each a few lines of Python that the
zygote's child runs as its call, and that exec the compiler or the compiled binary, so
that the process the jail, the rlimits and the memory cgroup hold is the real one.

The compile writes `main.cpp` and fetches `main` back; a run writes `main` (the binary,
sent with the call) and execs it with the case's stdin. A run caps the program's address
space and stack at its memory limit itself: the zygote's own cap adds its warm size.
"""

from __future__ import annotations

SOURCE_FILE = "main.cpp"
BINARY_FILE = "main"


def compile_program(command: list[str]) -> str:
    """Execs command (the compiler, -std and flags) on SOURCE_FILE into BINARY_FILE, its
    temporary files in the working directory (the jail's /tmp is not the call's)."""
    argv = [*command, "-o", BINARY_FILE, SOURCE_FILE]
    return ("import os\n"
            "os.environ['TMPDIR'] = os.getcwd()\n"
            f"os.execv({argv[0]!r}, {argv!r})\n")


def run_program(memory_mb: int) -> str:
    """Execs BINARY_FILE with its address space and stack capped at memory_mb (the stack
    as large as judges give it, within the jail's hard limit)."""
    return ("import os, resource\n"
            f"limit = {memory_mb << 20}\n"
            "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
            "hard = resource.getrlimit(resource.RLIMIT_STACK)[1]\n"
            "stack = limit if hard == resource.RLIM_INFINITY else min(limit, hard)\n"
            "resource.setrlimit(resource.RLIMIT_STACK, (stack, hard))\n"
            f"os.chmod({BINARY_FILE!r}, 0o700)\n"
            f"os.execv({'./' + BINARY_FILE!r}, [{'./' + BINARY_FILE!r}])\n")
