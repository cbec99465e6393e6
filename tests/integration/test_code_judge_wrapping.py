"""code-judge's answers, field by field, for programs sent the way rStar2-Agent's tool
sends them: the model's code base64-encoded inside `exec` under a small executor that
prints a last expression's repr and, on an exception, writes the error to stderr and
leaves with `os._exit(1)`. code-judge runs each submission as a plain python3 process;
that process, run here on the calls' runtime, is the oracle for every field it answers."""

from __future__ import annotations

import base64

import pytest
import requests

from tests.conftest import RunningServer, free_port
from tests.fidelity.oracle import run_plain
from tests.fidelity.program import Program
from toolserver.python.settings import PythonSettings

EXECUTOR = '''
import base64, os, sys, traceback

def run(encoded):
    code = base64.b64decode(encoded.encode()).decode()
    namespace = {"__name__": "__main__"}
    try:
        lines = code.rstrip().splitlines()
        *body, last = lines or [""]
        try:
            expression = compile(last, "<string>", "eval")
        except SyntaxError:
            body, expression = lines, None
        exec(compile("\\n".join(body), "<string>", "exec"), namespace)
        if expression is not None:
            value = eval(expression, namespace)
            if value is not None:
                print(repr(value))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        os._exit(1)

run("%s")
'''

PROGRAMS = {
    "a value": "x = 6\nx * 7",
    "printed and a value": "print('hello')\nsum(range(10))",
    "stdin": "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data)))",
    "an exception": "print('before')\n1 / 0",
    "exit status": "import sys\nprint('leaving')\nsys.exit(3)",
    "stderr of its own": "import sys\nprint('warn', file=sys.stderr)\n'done'",
    "the data stack": "import numpy as np\nimport pandas as pd\npd.DataFrame({'a': np.arange(3)})['a'].sum()",
}


def wrapped(code: str) -> str:
    return EXECUTOR % base64.b64encode(code.encode()).decode()


@pytest.fixture(scope="module")
def judge_url(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("judge-wrapping"), workers=1, args=("--http-port", str(port)))
    yield f"http://127.0.0.1:{port}"
    running.stop()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_wrapped_program_is_answered_as_code_judge_answers_it(judge_url, name):
    code, stdin = wrapped(PROGRAMS[name]), "1 2 3\n"
    answer = requests.post(f"{judge_url}/run/long-batch", timeout=60, json={
        "type": "batch", "submissions": [{"type": "python", "solution": code, "input": stdin}]}).json()["results"][0]
    # unbuffered, as the server keeps what a program printed before os._exit
    oracle = run_plain(Program(name, code, stdin=stdin, abrupt=True), PythonSettings().interpreter)
    assert oracle.exit_code is not None
    assert answer["stdout"] == oracle.stdout
    assert answer["stderr"] == oracle.stderr
    assert answer["run_success"] == answer["success"] == (oracle.exit_code == 0)
    assert answer["reason"] == ""
    assert isinstance(answer["cost"], float) and answer["sub_id"]
    assert set(answer) >= {"sub_id", "run_success", "success", "cost", "reason", "stdout", "stderr"}
