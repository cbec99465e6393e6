"""A language's `[ahead]` process, built once at start-up.

Its file (Java's `ToolserverJavaStart.java`) is the project's own, built outside the jail
with the language's `ahead.build` (no caller's input reaches it) into a directory of
`[program] ahead_dir` named by what it builds and the toolchain that builds it (a class a
newer javac wrote would not load on an older JVM), which the jail can read; each run then
starts `ahead.run` with `{dir}` there. A language whose build fails runs every run with
its own `run`, as one without `[ahead]` does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from toolserver.program.languages import Language

log = logging.getLogger(__name__)
BUILD_TIMEOUT_S = 300


def build_ahead(language: Language, root: str, version: str) -> str:
    """The directory under root holding language's [ahead] file built by its toolchain of
    version (built when it is missing); "" when it cannot be built or the language has none."""
    ahead = language.ahead
    if ahead is None:
        return ""
    source = Path(ahead.source)
    try:
        text = source.read_bytes()
    except OSError as exc:
        log.warning("program: %s's [ahead] source cannot be read: %s", language.name, exc)
        return ""
    made_by = [version, *ahead.build]
    digest = hashlib.sha256(b"\0".join([text, *(part.encode() for part in made_by)])).hexdigest()[:16]
    directory = Path(root) / f"{language.name}-{digest}"
    if directory.is_dir():
        return str(directory)
    try:
        Path(root).mkdir(parents=True, exist_ok=True)
        Path(root).chmod(0o755)  # the slots' users read it from inside the jail
        partial = Path(tempfile.mkdtemp(dir=root, prefix=f".{language.name}-"))
        shutil.copy(source, partial / source.name)
        command = [argument.replace("{dir}", str(partial)).replace("{source}", str(partial / source.name))
                   for argument in ahead.build]
        built = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
        if built.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            log.warning("program: building %s's [ahead] failed, its runs start their own process: %s",
                        language.name, (built.stdout + built.stderr).strip()[-500:])
            return ""
        for path in (partial, *partial.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        try:
            os.rename(partial, directory)  # whole or not at all, for servers that build it side by side
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
            if not directory.is_dir():
                raise
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("program: cannot build %s's [ahead] under %s: %s", language.name, root, exc)
        return ""
    return str(directory)
