"""Checks corpus programs against the oracle alone: each runs several times with plain
python3, the runs side by side (a race shows under load, as in the suite), and must give
the same answer every time (nothing random, timed, racing or machine-specific). The
programs that pass are recorded in tests/fidelity/checked.txt (name and digest), which
tests/unit/test_fidelity_corpus.py requires of every program of the corpus: a program
added or changed is checked before the suite takes it as an oracle.

    python -m tests.fidelity.check [--runs 3] [tests/fidelity/programs_numeric.py ...] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.fidelity.oracle import run_plain
from tests.fidelity.program import Program

HERE = Path(__file__).resolve().parent
CHECKED = HERE / "checked.txt"
CORPORA = ("programs_semantics", "programs_numeric", "programs_data", "programs_text")


def digest(program: Program) -> str:
    """What the oracle's answer depends on: the program, its input, its files and how it runs."""
    parts = [program.code, program.stdin, repr(sorted(program.files.items())), repr(program.abrupt),
             repr(program.timeout_ms), repr(program.times_out)]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def corpus(modules: list[str]) -> list[Program]:
    programs = [program for module in modules
                for program in importlib.import_module(f"tests.fidelity.{Path(module).stem}").PROGRAMS]
    names = [program.name for program in programs]
    assert len(names) == len(set(names)), "program names must be unique"
    return programs


def read_checked() -> dict[str, str]:
    if not CHECKED.exists():
        return {}
    return dict(line.split() for line in CHECKED.read_text().splitlines() if line.strip())


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fidelity.check")
    parser.add_argument("modules", nargs="*", default=list(CORPORA))
    parser.add_argument("--only", nargs="*", default=[], help="these programs only")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    from toolserver.settings import Settings

    interpreter = Settings().python.interpreter
    programs = [p for p in corpus(args.modules) if not args.only or p.name in args.only]
    with ThreadPoolExecutor(args.parallel) as pool:
        runs = list(pool.map(lambda p: run_plain(p, interpreter), [p for p in programs for _ in range(args.runs)]))
    checked = read_checked()
    bad = 0
    for index, program in enumerate(programs):
        answers = runs[index * args.runs:(index + 1) * args.runs]
        if all(answer == answers[0] for answer in answers):
            checked[program.name] = digest(program)
            continue
        bad += 1
        checked.pop(program.name, None)
        print(f"{program.name}: NOT DETERMINISTIC")
        for answer in answers:
            print(f"  exit {answer.exit_code} stdout {answer.stdout[:200]!r} stderr {answer.stderr[-200:]!r}")
    CHECKED.write_text("".join(f"{name} {value}\n" for name, value in sorted(checked.items())))
    print(f"{len(programs)} programs, {args.runs} runs each, {bad} not deterministic; {CHECKED} updated")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
