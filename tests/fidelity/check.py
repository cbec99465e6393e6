"""Checks corpus programs against the oracle alone: each runs twice with plain python3 and
must give the same answer both times (nothing random, timed or machine-specific).

    python -m tests.fidelity.check tests/fidelity/programs_numeric.py [NAME ...]
"""

from __future__ import annotations

import importlib
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.fidelity.oracle import run_plain
from toolserver.settings import Settings


def main() -> int:
    module = importlib.import_module(sys.argv[1].removesuffix(".py").replace("/", "."))
    wanted = set(sys.argv[2:])
    programs = [p for p in module.PROGRAMS if not wanted or p.name in wanted]
    interpreter = Settings().python.interpreter
    names = [p.name for p in programs]
    assert len(names) == len(set(names)), "program names must be unique"
    bad = 0
    with ThreadPoolExecutor(2) as pool:
        firsts = list(pool.map(lambda p: run_plain(p, interpreter), programs))
        seconds = list(pool.map(lambda p: run_plain(p, interpreter), programs))
    for program, first, second in zip(programs, firsts, seconds):
        verdict = "ok" if first == second else "NOT DETERMINISTIC"
        if first != second:
            bad += 1
        print(f"{program.name}: exit {first.exit_code} {verdict}")
        print("  stdout:", first.stdout[:300].replace("\n", "\\n"))
        if first.stderr:
            print("  stderr:", first.stderr[-300:].replace("\n", "\\n"))
    print(f"{len(programs)} programs, {bad} not deterministic")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
