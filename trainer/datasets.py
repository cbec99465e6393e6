"""Datasets that registry packages ship, exported as the trainer's JSONL rows.

`champ`: the 270 competition problems of CHAMP (the PyPI package `champ-dataset`,
the `smollm2` extra), each as {problem, answer, id, category}. Nothing is downloaded;
a missing package is named with the extra that installs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def champ_rows() -> list[dict[str, Any]]:
    try:
        import champ_dataset
    except ImportError as exc:
        raise ImportError("the CHAMP problems come from the champ-dataset package: "
                          "pip install -e '.[smollm2]'") from exc
    problems = champ_dataset.load("v0").problems
    return [{"id": key, "category": p.category, "problem": p.text, "answer": p.answer}
            for key, p in sorted(problems.items())]


DATASETS = {"champ": champ_rows}


def export(name: str, out: str | Path) -> int:
    """Writes dataset `name` as JSONL to `out`; returns the number of rows."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}")
    rows = DATASETS[name]()
    Path(out).write_text("".join(json.dumps(row) + "\n" for row in rows))
    return len(rows)
