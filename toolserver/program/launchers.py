"""The programs a program call's jailed processes run, made from its language's data: a
few lines of Python that the zygote's child runs as its call.

A compile writes the source, runs the compiler (its messages, on stdout or stderr, are
the call's stderr: tsc writes its errors on stdout) with `out/` empty before it, and packs what the compiler wrote there into
ARTIFACT, which the server fetches and keeps. A run unpacks ARTIFACT (or finds the source,
for a language that runs it), caps its address space (the language's `memory`), and execs
the language's run command, so that the process the jail, the rlimits and the memory
cgroup hold is the program itself.
"""

from __future__ import annotations

from sandbox.calls import PROGRAM_FILE
from toolserver.judging.compiler import CompileStep
from toolserver.program.languages import OUT_DIR, Language

ARTIFACT = "out.zip"
PRELOAD = ("subprocess", "zipfile")  # what the launchers import (17 ms for zipfile alone), imported once by
                                     # the tool's zygotes rather than by every run


def with_memory(argv: tuple[str, ...], memory_mb: int) -> list[str]:
    return [argument.replace("{memory_mb}", str(memory_mb)) for argument in argv]


def environment_lines(language: Language) -> list[str]:
    """Sets the language's environment ({cwd}: the working directory) and TMPDIR there
    (the jail's /tmp is not the call's)."""
    return ["cwd = os.getcwd()",
            "os.environ['TMPDIR'] = cwd",
            *(f"os.environ[{name!r}] = {value!r}.replace('{{cwd}}', cwd)"
              for name, value in sorted(language.environment.items()))]


def compile_program(language: Language) -> str:
    """Runs the language's compile; exits with the compiler's status (or dies of its
    signal), else packs OUT_DIR into ARTIFACT."""
    return "\n".join([
        "import os, signal, subprocess, sys, zipfile",
        *environment_lines(language),
        f"os.unlink({PROGRAM_FILE!r})",
        f"os.mkdir({OUT_DIR!r})",
        "sys.stdout.flush(); sys.stderr.flush()",
        f"status = subprocess.run({list(language.compile)!r}, stdin=subprocess.DEVNULL, stdout=2).returncode",
        "if status < 0:",
        "    signal.signal(-status, signal.SIG_DFL)",
        "    os.kill(os.getpid(), -status)",
        "if status:",
        "    os._exit(status)",
        f"with zipfile.ZipFile({ARTIFACT + '.part'!r}, 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as packed:",
        f"    for top, _, names in os.walk({OUT_DIR!r}):",
        "        for name in names:",
        "            packed.write(os.path.join(top, name))",
        f"os.rename({ARTIFACT + '.part'!r}, {ARTIFACT!r})",
    ]) + "\n"


def compile_step(language: Language) -> CompileStep:
    return CompileStep(compile_program(language), "\0".join((language.name, *language.compile)),
                       language.source_file, ARTIFACT)


def run_program(language: Language, memory_mb: int) -> str:
    """Unpacks the compile's ARTIFACT (files mode 0700: the zip keeps no modes), caps the
    address space at memory_mb where the language's memory is "address-space" (the
    stack as large as judges give it, within the jail's hard limit, either way) and execs
    the run command."""
    argv = with_memory(language.run, memory_mb)
    lines = ["import os, resource, zipfile", *environment_lines(language)]
    if language.compiles:
        lines += [f"with zipfile.ZipFile({ARTIFACT!r}) as packed:",
                  "    for name in packed.namelist():",
                  "        os.chmod(packed.extract(name), 0o700)",
                  f"os.unlink({ARTIFACT!r})"]
    lines += ["hard = resource.getrlimit(resource.RLIMIT_STACK)[1]",
              f"stack = {memory_mb << 20} if hard == resource.RLIM_INFINITY else min({memory_mb << 20}, hard)",
              "resource.setrlimit(resource.RLIMIT_STACK, (stack, hard))"]
    if language.memory == "address-space":
        lines.append(f"resource.setrlimit(resource.RLIMIT_AS, ({memory_mb << 20}, {memory_mb << 20}))")
    lines += [f"os.unlink({PROGRAM_FILE!r})",  # the program finds only its own files where it starts
              f"os.execv({argv[0]!r}, {argv!r})"]
    return "\n".join(lines) + "\n"
