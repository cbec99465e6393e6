"""What typing the jail's own modules (sandbox/guard.py, sandbox/confine.py, sandbox/inside/)
must not change, and what it found: their types cost a program nothing it can see (no
module of theirs imports typing or __future__ at run time), and a cell's display that is
not a bundle is the cell's TypeError, as in a kernel, not the end of its session."""

from __future__ import annotations

import subprocess

import pytest

from sandbox.inside.notebook import wire_bundle
from tests.conftest import ROOT
from tests.unit.test_notebook import run_in_runtime
from toolserver.python.settings import PythonSettings

TYPED_IN_JAIL = ("sandbox.guard", "sandbox.confine",
                 *sorted(f"sandbox.inside.{path.stem}" for path in (ROOT / "sandbox" / "inside").glob("*.py")
                         if path.stem != "__init__"))


@pytest.mark.parametrize("module", TYPED_IN_JAIL)
def test_a_jailed_modules_types_import_nothing_at_run_time(module):
    code = (f"import sys\nsys.path.insert(0, '.')\nimport {module} as m\n"
            "print(sorted({'typing', '__future__'} & set(sys.modules)), getattr(m, 'TYPE_CHECKING', False))")
    done = subprocess.run([PythonSettings().interpreter, "-I", "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "False"]


def test_a_display_that_is_no_bundle_is_the_cells_type_error_and_the_next_one_shows():
    shown = run_in_runtime(
        "from IPython.display import display\n"
        "notebook.start_cell()\n"
        "try:\n    display(5, raw=True)\n    error = None\nexcept TypeError as exc:\n    error = str(exc)\n"
        "display({'text/plain': 'ok'}, raw=True)\n"
        "print(json.dumps({'error': error, 'taken': notebook.taken(1 << 20)}))\n")
    assert shown["error"] == "data must be a dict, got: 5"  # ipykernel's publisher says so too
    assert shown["taken"] == [[{"kind": "display_data", "data": {"text/plain": "ok"}, "metadata": {}}], False]


def test_a_display_a_cell_put_in_the_list_itself_is_left_out():
    assert wire_bundle("display_data", 5, {}) is None
    assert wire_bundle("display_data", ["text/plain"], {}) is None
    shown = run_in_runtime("notebook.start_cell()\nnotebook.displays.append(('display_data', 5, {}))\n"
                           "print(json.dumps(notebook.taken(1 << 20)))\n")
    assert shown == [[], True]
