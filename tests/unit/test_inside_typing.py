"""How the zygotes compile a caller's code (sandbox/inside/program.py's split_last_expression,
for a call's program and a session's cell alike): as python3 compiles it, whatever the
server's own modules say of their compile flags (`from __future__ import annotations`, which
they use for their own types, must not reach the caller's code)."""

from __future__ import annotations

import inspect
import linecache
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.inside.program import split_last_expression

ROOT = Path(__file__).resolve().parents[2]
ANNOTATED = ("def f(x: int) -> None:\n    pass\n"
             "print(f.__annotations__)\n"
             "y: int = 1\n"
             "print(__annotations__)\n"
             "class C:\n    z: 'str'\n    w: float\n"
             "print(C.__annotations__)\n")


def python3_prints(code: str) -> str:
    """What `python3 -c code` prints: the oracle."""
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("cell", [False, True])
def test_annotations_are_evaluated_as_python3_evaluates_them(cell):
    body, last = split_last_expression("def f(x: int) -> str:\n    pass\nf.__annotations__", f"<annotations {cell}>",
                                       cell=cell)
    namespace: dict[str, object] = {}
    exec(body, namespace)
    assert last is not None
    assert eval(last, namespace) == {"x": int, "return": str}  # not {'x': 'int', 'return': 'str'}
    assert not body.co_flags & 0x1000000  # CO_FUTURE_ANNOTATIONS


def test_a_program_refuses_a_top_level_await_as_python3_and_a_cell_awaits_it():
    with pytest.raises(SyntaxError, match="'await' outside function"):
        split_last_expression("import asyncio\nawait asyncio.sleep(0)", "<program await>", cell=False)
    body, last = split_last_expression("import asyncio\nawait asyncio.sleep(0)", "<cell await>", cell=True)
    assert last is not None and last.co_flags & inspect.CO_COROUTINE


def test_only_a_cells_source_is_kept_for_its_tracebacks():
    split_last_expression("x = 1\nx", "<cell kept>", cell=True)
    split_last_expression("x = 1\nx", "<program not kept>", cell=False)
    assert linecache.getline("<cell kept>", 2) == "x"
    assert "<program not kept>" not in linecache.cache


def test_a_bare_last_expression_is_split_off_and_only_it():
    body, last = split_last_expression("x = 2\nx * 3", "<split>", cell=False)
    namespace: dict[str, object] = {}
    exec(body, namespace)
    assert last is not None and eval(last, namespace) == 6
    assert split_last_expression("x = 2", "<no expression>", cell=True)[1] is None


RUN_A_CELL = """
import sys, types
from sandbox.inside.notebook import Notebook
from sandbox.inside.session_zygote import SessionZygote
zygote = SessionZygote()
zygote.guard = types.ModuleType("guard")
zygote.guard.DENIALS = ()
main = types.ModuleType("__main__")
zygote.notebook = Notebook(main, None)
reply = zygote.run_call(main, {"id": "a", "code": sys.argv[1]}, 1, 0)
assert reply["outcome"] == "OK", reply
"""

RUN_A_PROGRAM = """
import os, sys
from sandbox.inside.program import main_module, run_program
result, status = run_program(sys.argv[1], main_module(os.path.join(os.getcwd(), "main.py")), 1000, ())
assert (result, status) == ({"kind": "ok"}, 0), result
"""


@pytest.mark.parametrize("runner", [RUN_A_CELL, RUN_A_PROGRAM], ids=["cell", "program"])
def test_a_cells_and_a_programs_annotations_are_python3s(runner):
    """Through a session's run_call and a call's run_program, in a process of their own."""
    done = subprocess.run([sys.executable, "-c", runner, ANNOTATED], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == python3_prints(ANNOTATED)
    assert "{'x': <class 'int'>, 'return': None}" in done.stdout
