"""The two programs a cpp call's jailed process runs: each a few lines of Python that the
zygote's child runs as its call, and that exec the compiler or the compiled binary, so
that the process the jail, the rlimits and the memory cgroup hold is the real one.

The compile writes `main.cpp` and fetches `main` back; a run writes `main` (the binary,
sent with the call) and execs it with the case's stdin, under its memory limit.
"""

from __future__ import annotations

from toolserver.judging.compiler import CompileStep
from toolserver.zygotes.programs import exec_program

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
    """Execs BINARY_FILE under memory_mb (`toolserver.zygotes.programs.exec_program`)."""
    return exec_program([f"./{BINARY_FILE}"], memory_mb, executable=BINARY_FILE)


def compile_step(command: list[str]) -> CompileStep:
    """The compile of command (the compiler, -std and flags): SOURCE_FILE to BINARY_FILE."""
    return CompileStep(compile_program(command), "\0".join(command), SOURCE_FILE, BINARY_FILE)
