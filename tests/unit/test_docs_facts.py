"""The names and numbers the docs state that the code defines, read from the code, so
that they cannot go stale.

- Every setting the docs name (`section.key`, or `[section] key`) is one.
- A setting followed by a number (`http.max_body_mb` (8, `[cpp] compile_timeout_ms` 10 s)
  states its default, which must be the code's.
- Every TOML example of the server's settings loads as settings, and a value it marks
  "(the default)" is the default.
- The facts the docs state in prose, each beside the code it comes from (PROSE).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.python import settings as python_settings
from toolserver.python.sessions import INTERRUPT_GRACE_S
from toolserver.settings import load_policies, load_settings
from toolserver.zygotes import scheduler

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SETTINGS = load_settings()
SECTIONS = {field.name: getattr(SETTINGS, field.name) for field in dataclasses.fields(SETTINGS)}
# `python.exit_code` names a field of a tool's result, not a setting.
RESULTS = {field.name: field.message_type.fields_by_name
           for field in pb.ExecuteResponse.DESCRIPTOR.oneofs_by_name["result"].fields}
FILE_SUFFIXES = {"py", "jsonl", "json", "toml", "md", "txt"}

NAME = r"`(?:(\w+)\.(\w+)|\[(\w+)\] (\w+))`"
NAMED = re.compile(NAME)
NUMBER = r"(-?[0-9][0-9,]*(?:\.[0-9]+)?)(?: (s|GB|GiB|MiB|KiB)\b)?"
STATED = re.compile(NAME + r",? \(?" + NUMBER)


def doc_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def named_settings(text: str) -> list[tuple[str, str, str]]:
    """(section, key, what follows) of every setting text names, of a section the server has."""
    found = []
    for match in NAMED.finditer(text):
        section, key = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if section in SECTIONS:
            found.append((section, key, text[match.end():match.end() + 40]))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_setting_the_docs_name_is_one(doc):
    wrong = [f"{section}.{key}" for section, key, _ in named_settings(doc.read_text())
             if not hasattr(SECTIONS[section], key) and key not in RESULTS.get(section, {})
             and key not in FILE_SUFFIXES]
    assert not wrong, f"{doc_id(doc)} names settings that do not exist: {wrong}"


def in_units_of_the_setting(key: str, number: str, unit: str | None) -> float:
    value = float(number.replace(",", ""))
    scale = {("s", "_ms"): 1000, ("GB", "_mb"): 1024, ("GiB", "_mb"): 1024, ("MiB", "_bytes"): 1 << 20,
             ("KiB", "_bytes"): 1 << 10}
    return value * next((factor for (name, suffix), factor in scale.items() if unit == name and key.endswith(suffix)),
                        1)


def stated_defaults(text: str) -> list[tuple[str, float, Any]]:
    """(setting, the value text states, its default) for each setting followed by a number."""
    found = []
    for match in STATED.finditer(text):
        section, key = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if section in SECTIONS and hasattr(SECTIONS[section], key):
            stated = in_units_of_the_setting(key, match.group(5), match.group(6))
            found.append((f"{section}.{key}", stated, getattr(SECTIONS[section], key)))
    return found


def test_the_stated_default_reader_reads_units_and_both_spellings():
    found = stated_defaults("`http.max_body_mb` (8: twice; `[cpp] compile_timeout_ms` 10 s, "
                            "`sessions.memory_mb` (1 GB; `python.workers`; sympy")
    assert found == [("http.max_body_mb", 8, 8), ("cpp.compile_timeout_ms", 10_000, 10_000),
                     ("sessions.memory_mb", 1024, SETTINGS.sessions.memory_mb)]


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_default_the_docs_state_beside_a_setting_is_the_codes(doc):
    wrong = [(name, stated, default) for name, stated, default in stated_defaults(doc.read_text())
             if stated != default]
    assert not wrong, f"{doc_id(doc)} states defaults the code does not have: {wrong}"


def toml_examples() -> list[tuple[str, str]]:
    return [(doc_id(doc), block) for doc in DOCS
            for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S)]


@pytest.mark.parametrize("doc, block", [example for example in toml_examples()
                                        if set(tomllib.loads(example[1])) <= set(SECTIONS)],
                         ids=lambda value: value if value.endswith(".md") else "")
def test_every_settings_example_loads_and_its_defaults_are_the_codes(doc, block, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(block)
    load_settings(path)
    section = ""
    for line in block.splitlines():
        if header := re.match(r"\[(\w+)\]", line):
            section = header.group(1)
        elif "(the default)" in line:  # "= VALUE  # ... (the default)", or "# ... N (the default)"
            key = line.split("=")[0].strip()
            value, _, comment = line.partition("#")
            named = re.search(r"(\S+) \(the default\)", comment)
            stated = tomllib.loads(f"v = {named.group(1)}")["v"] if named and named.group(1)[0].isdigit() \
                else tomllib.loads(value)[key]
            assert stated == getattr(SECTIONS[section], key), (doc, line)


def test_every_policy_example_loads(tmp_path):
    """Its keys and their types; a hash the doc abbreviates ("3f0c...") is written whole."""
    examples = [(doc, block) for doc, block in toml_examples() if "callers" in tomllib.loads(block)]
    assert examples
    for doc, block in examples:
        path = tmp_path / "policies.toml"
        path.write_text(re.sub(r'token_sha256 = "[0-9a-f]+\.\.\."', f'token_sha256 = "{"0" * 64}"', block))
        load_policies(path)


def number_word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four"}[n]


def extra_workers_on_two_cores_and_24_gib(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(python_settings, "available_cpus", lambda: 2)
    monkeypatch.setattr(python_settings, "machine_memory_mb", lambda: 24 * 1024)
    return SETTINGS.python.slots().needed + SETTINGS.python.extra_worker_slots(SETTINGS)


# (doc, a pattern whose one group states the fact, the code's value as the doc writes it)
PROSE: list[tuple[str, str, Callable[[pytest.MonkeyPatch], object]]] = [
    ("docs/calls.md", r"Three classes, (\w+) zygotes per CPU each by default",
     lambda _: number_word(python_settings.WORKERS_PER_CPU)),
    ("docs/calls.md", r"\(cgroup quota included, at most (\d+)\)", lambda _: python_settings.MAX_AUTO_WORKERS),
    ("docs/calls.md", r"held by a call running ([0-9.]+) s or more", lambda _: scheduler.HELD_S),
    ("docs/calls.md", r"under (\d+)% busy at full", lambda _: round(scheduler.CPU_ROOM * 100)),
    ("docs/calls.md", r"\((\d+) starts at a time", lambda _: scheduler.MAX_STARTS),
    ("docs/calls.md", r"at most one worker per\s+(\d+) MB of memory", lambda _: python_settings.MEMORY_PER_WORKER_MB),
    ("docs/calls.md", r"with the defaults, (\d+) workers in all", extra_workers_on_two_cores_and_24_gib),
    ("docs/calls.md", r"The server keeps `sessions.ready` sessions \((\d+)\)", lambda _: SETTINGS.sessions.ready),
    ("docs/calls.md", r"does not come back within (\d+) s", lambda _: round(INTERRUPT_GRACE_S)),
    ("docs/calls.md", r"(\d+) MiB a stream by default\s+and at most",
     lambda _: SETTINGS.defaults.max_output_bytes >> 20
     if SETTINGS.limits.max_output_bytes == SETTINGS.defaults.max_output_bytes else None),
    ("docs/calls.md", r"`/usr/bin/g\+\+ (-std=[^`]+)`",
     lambda _: " ".join(SETTINGS.cpp.command()[1:]) if SETTINGS.cpp.compiler == "/usr/bin/g++" else None),
    ("docs/calls.md", r"`\[cpp\] cache_mb` \((\d+)\)", lambda _: SETTINGS.cpp.cache_mb),
    ("docs/calls.md", r"`\[cpp\] kept_mb`,\s+(\d+) MB", lambda _: SETTINGS.cpp.kept_mb),
    ("docs/calls.md", r"`\[program\] kept_mb`,\s+(\d+) MB", lambda _: SETTINGS.program.kept_mb),
    ("docs/calls.md", r"`\[bash\] workers`, (\d+)\)", lambda _: SETTINGS.bash.workers),
    ("docs/calls.md", r"`\[bash\] shell` \(Debian's `([^`]+)`\)", lambda _: SETTINGS.bash.shell),
    ("docs/calls.md", r"`compile_memory_mb` (\d+) GB", lambda _: SETTINGS.cpp.compile_memory_mb // 1024),
    ("docs/calls.md", r"`max_compile_timeout_ms` (\d+) s", lambda _: SETTINGS.cpp.max_compile_timeout_ms // 1000),
    ("docs/configuration.md", r"slots = (\d+) ", lambda _: SETTINGS.sandbox.slots),
    ("docs/testing.md", r"makes (\d+) slot users", lambda _: SETTINGS.sandbox.slots),
    ("docs/configuration.md", r"max_sessions = (\d+) ", lambda _: SETTINGS.sessions.max_sessions),
    ("docs/configuration.md", r"\nready = (\d+) ", lambda _: SETTINGS.sessions.ready),
]


@pytest.mark.parametrize("doc, pattern, value", PROSE, ids=[f"{doc}:{pattern[:40]}" for doc, pattern, _ in PROSE])
def test_each_fact_stated_in_prose_is_the_codes(doc, pattern, value, monkeypatch):
    found = re.findall(pattern, (ROOT / doc).read_text())
    assert len(found) == 1, f"{doc} states it {len(found)} times: {pattern}"
    expected = value(monkeypatch)
    assert expected is not None, f"the code's value no longer reads as {doc} writes it: {pattern}"
    stated = found[0] if isinstance(found[0], str) else found[0][0]
    assert stated == str(expected) or (stated.replace(".", "", 1).isdigit() and float(stated) == expected), (
        doc, pattern, stated, expected)


def test_the_architecture_draws_every_tool():
    from toolserver.tools import TOOLS

    text = (ROOT / "docs" / "architecture.md").read_text()
    assert all(f"{tool.name}/" in text for tool in TOOLS)


def test_the_readme_lists_every_outcome_of_the_contract():
    listed = re.search(r"- Outcomes: ((?:`[A-Z_]+`[,;]?\s+)+)", (ROOT / "README.md").read_text())
    assert listed is not None
    assert re.findall(r"`([A-Z_]+)`", listed.group(1)) == [name for name in pb.Outcome.keys() if name != "OUTCOME_UNSPECIFIED"]


@pytest.mark.parametrize("package", ["toolserver.cpp", "toolserver.program", "toolserver.judging", "toolserver.python"])
def test_every_module_a_packages_docstring_names_is_there(package):
    import importlib
    import importlib.util

    loaded = importlib.import_module(package)
    named = re.findall(r"`([a-z_]+(?:\.[a-z_]+)*)(?:\.[A-Z]\w*)?`", loaded.__doc__ or "")
    for name in named:
        found = importlib.util.find_spec(name if name.startswith("toolserver.") else f"{package}.{name}")
        assert found is not None, f"{package}'s docstring names `{name}`, which is not a module there"
