"""Which zygote a stateless python call runs on: slim for the standard library, else warm."""

from __future__ import annotations

import pytest

from toolserver.python.routing import CallRouter, imported_modules, scientific_only
from toolserver.settings import Settings

ROUTER = CallRouter(Settings().python.preload)


@pytest.mark.parametrize("code, names", [
    ("print(1+1)", set()),
    ("import math\nprint(math.pi)", {"math"}),
    ("from math import sqrt, pi\nimport os.path as p, sys", {"math", "os", "sys"}),
    ("from collections.abc import (\n    Mapping,\n)", {"collections"}),
    ("import json ; import re", {"json", "re"}),
    ("def f():\n    import itertools\n    from collections import Counter\n", {"itertools", "collections"}),
    ("import numpy as np  # arrays", {"numpy"}),
    ("from . import sibling", set()),
    ('s = "important"', set()),
])
def test_imported_modules_names_the_top_level_modules(code, names):
    assert imported_modules(code) == names


@pytest.mark.parametrize("code", [
    "print(1+1)",
    "import math, itertools\nprint(math.comb(5, 2))",
    "from fractions import Fraction\nimport statistics, heapq, functools",
    "import typing, hashlib, unittest\nclass T(unittest.TestCase): pass",
    "x = 'important'",
])
def test_standard_library_code_runs_slim(code):
    assert ROUTER.runs_slim(code)


@pytest.mark.parametrize("code", [
    "import sympy\nsympy.factorint(12)",
    "from numpy import arange",
    "import mpmath.libmp",
    "m = __import__('numpy')",          # a preloaded module named anywhere: warm
    "import scipy.optimize",            # any module outside the standard library: warm
    "import math\nimport networkx as nx",
    "import subprocess",                # standard, but it loads a denied module: warm
    "from subprocess import run",
])
def test_other_code_runs_warm(code):
    assert not ROUTER.runs_slim(code)


def test_a_router_without_warm_modules_looks_at_imports_only():
    router = CallRouter(("math", "json"))
    assert router.runs_slim("x = 'sympy'") and not router.runs_slim("import sympy")


def test_a_call_handed_back_runs_where_its_module_is_preloaded():
    settings = Settings().python
    router = CallRouter(settings.preload, settings.scientific_preload)
    assert router.route_handed_back("pandas") == router.route_handed_back("matplotlib.pyplot") == "scientific"
    assert router.route_handed_back("sklearn.linear_model") == "scientific"
    assert router.route_handed_back("numpy") == router.route_handed_back("sympy") == "warm"
    assert router.route_handed_back("some_package_of_the_runtime") == "warm"
    assert not scientific_only(settings.preload, settings.scientific_preload) & {"numpy", "sympy", "math", "json"}
