"""A language of the program tool, read from its file of data.

A language file (TOML, one per language: `toolserver/program/languages/*.toml`, and an
operator's `[program] languages_dir`) says, as Piston describes a runtime, what a
compiled-language tool needs to know and nothing it must run to learn:

    name = "go"                       # what callers send; aliases: other names fronts accept
    aliases = ["golang"]
    packages = ["golang-go"]          # the Debian packages of its toolchain (npm = [...] for npm's,
                                      # installed under npm_prefix)
    source_file = "main.go"           # the one file a call's source is written to ({main}: see below)
    version = ["/usr/bin/go", "version"]          # run outside the jail at start-up: its output
                                                  # names the toolchain; failing: unavailable
    compile = ["/usr/bin/go", "build", "-o", "out/main", "main.go"]   # absent: the source runs
    run = ["out/main"]                # relative: a file the compile wrote to out/
    memory = "cgroup"                 # or "address-space" (see below)
    address_space_mb = 16384
    compile_memory_mb = 2048
    compile_timeout_ms = 20000
    environment = { GOCACHE = "{cwd}/.cache" }    # {cwd}: the call's working directory
    out_of_memory = ["runtime: out of memory"]    # what its runtime prints when memory runs out

Commands are argv lists: the first an absolute path (the jail has no PATH) or, for `run`,
a path under `out/`; `{memory_mb}` in an argument is the run's memory limit (a heap flag).
A language whose source names its own file (Java's public class must be in a file of its
name) gives `main_pattern`, a regular expression (multi-line), or a list of them tried in
order, whose first group, found in the source, is `{main}` in its source_file, compile and
run (a name of letters, digits, _ and $; `main_default` where none finds one):
`source_file = "{main}.java"`, run `... {main}`.
A compile writes what it makes under `out/` (made empty before it), which comes back to
the server and is what each run starts from.

A runtime that is slow to start (the JVM) may have a process started ahead of each run, while
the worker waits for the run, which then only hands it the program (`[ahead]`):

    [ahead]
    source = "ToolserverJavaStart.java"   # beside the language file: what the process runs
    build = ["/usr/bin/javac", "-d", "{dir}", "{source}"]   # run once at start-up, outside the
                                          # jail, into a directory of [program] ahead_dir
    run = ["/usr/bin/java", "-Xmx{memory_mb}m", "-cp", "out:{dir}", "ToolserverJavaStart"]

The process `run` starts reads a first line on its stdin, `{main}` (empty for a language
without one), and then runs the program as the language's own `run` would, the rest of its
stdin the program's: the same output, exit status and stack traces. A run whose process
was not started ahead (the worker's first, or one with another memory limit) runs `run`.

`memory`: "address-space" caps a run's address space at its memory limit, as C++'s;
"cgroup" is for runtimes that reserve far more address space than they use (the JVM, V8,
Go), which such a cap stops at start: their address space gets `address_space_mb` and the
slot's memory cgroup caps what they use at the limit. A "cgroup" language is served only
where the server has memory cgroups.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolserver.config import hidden_by_the_jail
from toolserver.errors import ConfigError

BUILT_IN = Path(__file__).resolve().parent / "languages"
OUT_DIR = "out"
MEMORY_MODES = ("address-space", "cgroup")
MAIN = "{main}"
KEYS = {"name": str, "aliases": list, "packages": list, "npm": list, "npm_prefix": str, "source_file": str,
        "main_pattern": list, "main_default": str, "version": list,
        "compile": list, "run": list, "memory": str, "address_space_mb": int, "compile_memory_mb": int,
        "compile_timeout_ms": int, "environment": dict, "out_of_memory": list}
AHEAD_KEYS = {"source": str, "build": list, "run": list}
REQUIRED = ("name", "source_file", "version", "run")
VERSION_TIMEOUT_S = 60
MAIN_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")  # what {main} may be


@dataclass(frozen=True)
class Ahead:
    """A language's process started ahead of each run: the file it runs (source), the
    command that builds it into {dir} at start-up, and the command that starts it."""

    source: str  # an absolute path
    build: tuple[str, ...]
    run: tuple[str, ...]


@dataclass(frozen=True)
class Language:
    name: str
    source_file: str
    version: tuple[str, ...]
    run: tuple[str, ...]
    compile: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    npm: tuple[str, ...] = ()
    npm_prefix: str = ""
    memory: str = "address-space"
    address_space_mb: int = 0
    compile_memory_mb: int = 2048
    compile_timeout_ms: int = 10_000
    environment: dict[str, str] = field(default_factory=dict)
    out_of_memory: tuple[str, ...] = ()
    main_pattern: tuple[str, ...] = ()  # tried in order
    main_default: str = ""
    ahead: Ahead | None = None
    path: str = ""           # the file it was read from

    @property
    def compiles(self) -> bool:
        return bool(self.compile)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def source_sent(self) -> str:
        """The file the server writes a call's source to (a compile renames it where the
        source names its main)."""
        return self.source_file.replace(MAIN, self.main_default)

    def toolchain(self) -> tuple[str, ...]:
        """The host paths its commands run (the jail must show them)."""
        commands = (self.version, self.compile, self.run, *((self.ahead.build, self.ahead.run) if self.ahead else ()))
        return tuple(dict.fromkeys(command[0] for command in commands if command and os.path.isabs(command[0])))

    def installs(self) -> str:
        """What installs its toolchain, for a reason it is unavailable."""
        parts = [f"Debian's {' '.join(self.packages)}"] if self.packages else []
        parts += [f"npm's {' '.join(self.npm)}"] if self.npm else []
        return " and ".join(parts) or "its toolchain"


def language_from(values: dict[str, Any], path: str) -> Language:
    """The language a file's values describe; ConfigError naming the file otherwise."""
    def fail(message: str) -> ConfigError:
        return ConfigError(f"language file {path}: {message}")

    unknown = sorted(set(values) - set(KEYS) - {"ahead"})
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}")
    missing = [key for key in REQUIRED if key not in values]
    if missing:
        raise fail(f"missing {', '.join(missing)}")
    values = dict(values)
    if isinstance(values.get("main_pattern"), str):
        values["main_pattern"] = [values["main_pattern"]]
    ahead = ahead_from(values.pop("ahead"), path, fail) if "ahead" in values else None
    check_types(values, KEYS, fail, "")
    fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    language = Language(**fields, ahead=ahead, path=path)
    for name in language.names:
        if not name or not name.replace("_", "").replace("-", "").isalnum() or name != name.lower():
            raise fail(f"name {name!r} must be lower-case letters, digits, - or _")
    if "/" in language.source_sent or language.source_sent in ("", ".", "..", OUT_DIR, "main.py"):
        raise fail(f"source_file must be a plain file name, got {language.source_file!r}")
    uses_main = any(MAIN in argument for argument in (language.source_file, *language.compile, *language.run))
    if uses_main or language.main_pattern:
        try:
            groups = [re.compile(pattern).groups for pattern in language.main_pattern]
        except re.error as exc:
            raise fail(f"main_pattern is not a regular expression: {exc}") from exc
        if not (groups and all(groups) and language.compiles and MAIN_NAME.fullmatch(language.main_default)):
            raise fail("{main} needs a compile, a main_pattern with a group and a main_default of letters, digits, "
                       "_ or $")
    for key in ("version", "compile"):
        command = getattr(language, key)
        if command and not os.path.isabs(command[0]):
            raise fail(f"{key}[0] must be an absolute path (the jail has no PATH), got {command[0]!r}")
    if not language.version or not language.run:
        raise fail("version and run must not be empty")
    if not (os.path.isabs(language.run[0]) or language.run[0].startswith(f"{OUT_DIR}/")):
        raise fail(f"run[0] must be an absolute path or a file under {OUT_DIR}/, got {language.run[0]!r}")
    if language.run[0].startswith(f"{OUT_DIR}/") and not language.compiles:
        raise fail(f"run[0] is under {OUT_DIR}/, which only a compile writes")
    if language.npm and (not os.path.isabs(language.npm_prefix) or hidden_by_the_jail(language.npm_prefix)):
        raise fail("npm packages need npm_prefix: an absolute path outside /root and /tmp (the jail hides both)")
    if language.memory not in MEMORY_MODES:
        raise fail(f"memory must be one of {', '.join(MEMORY_MODES)}, got {language.memory!r}")
    if language.memory == "cgroup" and language.address_space_mb <= 0:
        raise fail("a cgroup language needs address_space_mb (its runtime's reservations)")
    if language.compile_memory_mb <= 0 or language.compile_timeout_ms <= 0:
        raise fail("compile_memory_mb and compile_timeout_ms must be positive")
    return language


def check_types(values: dict[str, Any], types: Mapping[str, type], fail: Callable[[str], ConfigError],
                prefix: str) -> None:
    """Raises fail(...) for a value of values that is not of its key's type in types, or a
    list or table that holds anything but strings."""
    for key, value in values.items():
        if not isinstance(value, types[key]) or isinstance(value, bool):
            raise fail(f"{prefix}{key} must be a {types[key].__name__}")
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        if not all(isinstance(item, str) for item in items):
            raise fail(f"{prefix}{key} must hold strings")


def ahead_from(values: Any, path: str, fail: Callable[[str], ConfigError]) -> Ahead:
    """A language file's [ahead]: its source beside the file, its commands' paths absolute."""
    if not isinstance(values, dict):
        raise fail("ahead must be a table")
    unknown = sorted(set(values) - set(AHEAD_KEYS))
    missing = [key for key in AHEAD_KEYS if key not in values]
    if unknown or missing:
        raise fail(f"[ahead] needs exactly {', '.join(AHEAD_KEYS)}")
    check_types(values, AHEAD_KEYS, fail, "ahead.")
    source = os.path.join(os.path.dirname(os.path.abspath(path)), values["source"])
    if "/" in values["source"] or not os.path.isfile(source):
        raise fail(f"ahead.source must name a file beside the language file, got {values['source']!r}")
    for key in ("build", "run"):
        if not values[key] or not os.path.isabs(values[key][0]):
            raise fail(f"ahead.{key}[0] must be an absolute path")
    if not any("{dir}" in argument for argument in values["build"]):
        raise fail("ahead.build must write into {dir}")
    return Ahead(source, tuple(values["build"]), tuple(values["run"]))


def read_language(path: Path) -> Language:
    try:
        values = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"language file {path}: {exc}") from exc
    return language_from(values, str(path))


def load_languages(extra_dir: str = "") -> dict[str, Language]:
    """Every language described, by name: the tool's own files, then extra_dir's (one of
    the same name replaces the tool's). Raises ConfigError for a file that is not a
    language or a name two languages claim."""
    found: dict[str, Language] = {}
    directories = [BUILT_IN] + ([Path(extra_dir)] if extra_dir else [])
    for directory in directories:
        if not directory.is_dir():
            raise ConfigError(f"program.languages_dir {directory} is not a directory")
        for path in sorted(directory.glob("*.toml")):
            language = read_language(path)
            found[language.name] = language
    claimed: dict[str, str] = {}
    for language in found.values():
        for name in language.names:
            if name in claimed:
                raise ConfigError(f"language name {name!r} is claimed by {claimed[name]} and {language.path}")
            claimed[name] = language.path
    return found


def hidden_toolchain(language: Language) -> str:
    """Why the jail cannot run language's toolchain ("" when it can)."""
    for path in language.toolchain():
        hidden = hidden_by_the_jail(path)
        if hidden:
            return f"{path} lies under {hidden}, which the jail hides"
    return ""


def toolchain_version(command: tuple[str, ...]) -> str:
    """The first line the version probe prints, or "" when it does not run."""
    try:
        found = subprocess.run(command, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [line.strip() for line in (found.stdout + "\n" + found.stderr).splitlines() if line.strip()]
    return lines[0][:200] if found.returncode == 0 and lines else ""
