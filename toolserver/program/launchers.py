"""The programs a program call's jailed processes run, made from its language's data: a
few lines of Python that the zygote's child runs as its call.

A compile writes the source (under the name it gives itself, where the language's source
names its main), runs the compiler (its messages, on stdout or stderr, are the call's
stderr: tsc writes its errors on stdout) with `out/` empty before it, and packs what the
compiler wrote there into ARTIFACT, which the server fetches and keeps. A run unpacks
ARTIFACT (or finds the source, for a language that runs it), caps its address space (the
language's `memory`), and execs the language's run command, so that the process the jail,
the rlimits and the memory cgroup hold is the program itself; or, where its worker started
the language's `[ahead]` process for it, hands the program to that process
(`sandbox/inside/ahead.py`), which the rlimits and the memory cgroup hold as well.
"""

from __future__ import annotations

from sandbox.calls import PROGRAM_FILE, StartAhead
from toolserver.judging.compiler import CompileStep
from toolserver.program.languages import MAIN, MAIN_NAME, OUT_DIR, Language

ARTIFACT = "out.zip"
MAIN_FILE = f"{OUT_DIR}/.main"  # the name {main} stands for, found by the compile
PRELOAD = ("subprocess", "zipfile")  # what the launchers import (17 ms for zipfile alone), imported once by
                                     # the tool's zygotes rather than by every run
STARTED_AHEAD = "__started_ahead__"  # where the worker leaves a run its [ahead] process's hand-over
                                     # (sandbox/inside/zygote.py: STARTED_AHEAD)


def with_memory(argv: tuple[str, ...], memory_mb: int, directory: str = "") -> list[str]:
    """argv with {memory_mb} filled in (and {dir}, an [ahead] process's built files)."""
    return [argument.replace("{memory_mb}", str(memory_mb)).replace("{dir}", directory) for argument in argv]


def environment(language: Language) -> dict[str, str]:
    """The language's environment ({cwd}: the working directory) with TMPDIR there (the
    jail's /tmp is not the call's)."""
    return {"TMPDIR": "{cwd}", **language.environment}


def environment_lines(language: Language) -> list[str]:
    return ["cwd = os.getcwd()",
            *(f"os.environ[{name!r}] = {value!r}.replace('{{cwd}}', cwd)"
              for name, value in sorted(environment(language).items()))]


def start_ahead(language: Language, directory: str, memory_mb: int) -> StartAhead | None:
    """The language's [ahead] process for a run under memory_mb, its file built into
    directory; None for a language without one."""
    if language.ahead is None:
        return None
    return StartAhead(tuple(with_memory(language.ahead.run, memory_mb, directory)),
                      tuple(sorted(environment(language).items())), (OUT_DIR,) if language.compiles else ())


def main_lines(language: Language) -> list[str]:
    """Where the language's source names its main ({main}): finds it by the first of its
    patterns that finds one (main_default where none does, or a name it may not be),
    renames the source to the file of that name and keeps the name in MAIN_FILE, for the runs."""
    if not language.main_pattern:
        return []
    return [f"with open({language.source_sent!r}, encoding='utf-8', errors='surrogateescape') as source:",
            "    text = source.read()",
            "main = ''",
            f"for pattern in {list(language.main_pattern)!r}:",
            "    found = re.search(pattern, text, re.MULTILINE)",
            "    if found:",
            "        main = found.group(1) or ''",
            "        break",
            f"if not re.fullmatch({MAIN_NAME.pattern!r}, main):",
            f"    main = {language.main_default!r}",
            f"os.rename({language.source_sent!r}, {language.source_file!r}.replace({MAIN!r}, main))",
            f"with open({MAIN_FILE!r}, 'w') as kept:",
            "    kept.write(main)"]


def with_main(argv: list[str], language: Language) -> str:
    """argv as Python source, {main} filled in by the launcher where the language has one."""
    if not language.main_pattern:
        return repr(argv)
    return f"[argument.replace({MAIN!r}, main) for argument in {argv!r}]"


def compile_program(language: Language) -> str:
    """Runs the language's compile; exits with the compiler's status (or dies of its
    signal), else packs OUT_DIR into ARTIFACT."""
    return "\n".join([
        "import os, re, signal, subprocess, sys, zipfile",
        *environment_lines(language),
        f"os.unlink({PROGRAM_FILE!r})",
        f"os.mkdir({OUT_DIR!r})",
        *main_lines(language),
        "sys.stdout.flush(); sys.stderr.flush()",
        f"status = subprocess.run({with_main(list(language.compile), language)}, stdin=subprocess.DEVNULL,"
        " stdout=2).returncode",
        "if status < 0:",
        "    signal.signal(-status, signal.SIG_DFL)",
        "    os.kill(os.getpid(), -status)",
        "if status:",
        "    os._exit(status)",
        f"with zipfile.ZipFile({ARTIFACT + '.part'!r}, 'w', zipfile.ZIP_STORED) as packed:",
        f"    for top, _, names in os.walk({OUT_DIR!r}):",
        "        for name in names:",
        "            packed.write(os.path.join(top, name))",
        f"os.rename({ARTIFACT + '.part'!r}, {ARTIFACT!r})",
    ]) + "\n"


def compile_step(language: Language) -> CompileStep:
    return CompileStep(compile_program(language), "\0".join((language.name, *language.compile)),
                       language.source_sent, ARTIFACT)


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
    if language.main_pattern:
        lines += [f"with open({MAIN_FILE!r}) as kept:", "    main = kept.read()"]
    lines += ["hard = resource.getrlimit(resource.RLIMIT_STACK)[1]",
              f"stack = {memory_mb << 20} if hard == resource.RLIM_INFINITY else min({memory_mb << 20}, hard)",
              "resource.setrlimit(resource.RLIMIT_STACK, (stack, hard))"]
    if language.memory == "address-space":
        lines.append(f"resource.setrlimit(resource.RLIMIT_AS, ({memory_mb << 20}, {memory_mb << 20}))")
    lines.append(f"os.unlink({PROGRAM_FILE!r})")  # the program finds only its own files where it starts
    if language.ahead is not None:
        lines += [f"ahead = globals().pop({STARTED_AHEAD!r}, None)",
                  "if ahead is not None:",
                  f"    ahead({'main + ' if language.main_pattern else ''}{chr(10)!r})"]
    lines += [f"argv = {with_main(argv, language)}",
              "os.execv(argv[0], argv)"]
    return "\n".join(lines) + "\n"
