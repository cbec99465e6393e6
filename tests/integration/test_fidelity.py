"""Every program of the fidelity corpus (tests/fidelity/) runs through the server as a
plain `python3 main.py` of the same runtime runs it: the same stdout, stderr (paths
aside) and exit status, over gRPC and over SandboxFusion's /run_code.

The oracle runs each program as a slot user in a fresh directory that holds only main.py
and its files, with the jail's environment (tests/fidelity/oracle.py). A program that
runs to its time limit is compared on what it wrote before it; one that ends abruptly
(os._exit) with unflushed output is compared with `python3 -u`, as the server keeps
that output. What the jail forbids on purpose (Unix-domain sockets) is shown to fail
cleanly instead.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.conftest import ROOT, RunningServer, free_port, lent_slots
from tests.fidelity import programs_data, programs_numeric, programs_semantics, programs_text
from tests.fidelity.oracle import Ran, run_plain
from tests.fidelity.program import Program, normalize
from toolclient.client import python_request
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.settings import Settings

# The first test waits for the whole corpus: the oracle's runs and the server's answers (minutes
# on a machine busy beside the suite).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

CORPUS = {program.name: program for module in (programs_semantics, programs_numeric, programs_data, programs_text)
          for program in module.PROGRAMS}
MEMORY_MB = 1024
MAX_OUTPUT = Settings().limits.max_output_bytes


@pytest.fixture(scope="module")
def fidelity_server(tmp_path_factory):
    port = free_port()
    # A program that starts processes which import the data stack (joblib, n_jobs) needs
    # seconds of CPU, and the whole corpus is sent at once.
    running = RunningServer(tmp_path_factory.mktemp("fidelity"), workers=2, scientific_workers=2,
                            args=("--http-port", str(port)), config="[limits]\ntimeout_ms = 30000\n")
    running.http = f"http://127.0.0.1:{port}"
    yield running
    running.stop()


@pytest.fixture(scope="module")
def oracle() -> dict[str, Ran]:
    interpreter = Settings().python.interpreter
    with lent_slots(2) as slots, ThreadPoolExecutor(len(slots)) as pool:
        programs = list(CORPUS.values())
        halves = [programs[index::len(slots)] for index in range(len(slots))]
        runs = pool.map(lambda pair: [(p.name, run_plain(p, interpreter, pair[1])) for p in pair[0]],
                        zip(halves, slots))
        return {name: ran for half in runs for name, ran in half}


# The corpus is sent at once, so that programs run side by side as a batch's do; a program
# that runs seconds alone can then reach its time limit on a machine busy beside the suite
# (loky's workers import sklearn again). Its time-out says how busy the machine was, not how
# the program ran: such a program, which the corpus does not mean to time out, is sent again,
# alone, and that answer is compared.
def timed_out_by_load(name: str, timed_out: bool) -> bool:
    return timed_out and not CORPUS[name].times_out


def grpc_request(program: Program) -> pb.ExecuteRequest:
    return python_request(program.code, request_id=program.name, stdin=program.stdin, files=program.files,
                          timeout_ms=program.timeout_ms, memory_mb=MEMORY_MB, max_output_bytes=MAX_OUTPUT)


@pytest.fixture(scope="module")
def over_grpc(fidelity_server) -> dict[str, pb.ExecuteResponse]:
    with fidelity_server.client() as client:
        answers = {answer.request_id: answer for answer in client.run_many([grpc_request(p) for p in CORPUS.values()])}
        for name, answer in answers.items():
            if timed_out_by_load(name, answer.outcome == pb.TIMEOUT):
                answers[name] = client.execute(grpc_request(CORPUS[name]))
    return answers


def run_code(url: str, program: Program) -> dict[str, Any]:
    body = {"code": program.code, "stdin": program.stdin, "language": "python", "run_timeout": program.timeout_ms / 1000,
            "memory_limit_MB": MEMORY_MB,
            "files": {name: base64.b64encode(data).decode() for name, data in program.files.items()}}
    request = urllib.request.Request(f"{url}/run_code", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=program.timeout_ms / 1000 + 60) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def over_http(fidelity_server) -> dict[str, dict[str, Any]]:
    with ThreadPoolExecutor(8) as pool:
        answers = dict(zip(CORPUS, pool.map(lambda p: run_code(fidelity_server.http, p), CORPUS.values())))
    for name, answer in answers.items():
        if timed_out_by_load(name, answer.get("run_result", {}).get("status") == "TimeLimitExceeded"):
            answers[name] = run_code(fidelity_server.http, CORPUS[name])
    return answers


def expected_output(text: str, truncated: bool) -> str:
    """The oracle's output as the server caps it (a prefix of MAX_OUTPUT bytes)."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= MAX_OUTPUT:
        return text
    assert truncated, "output beyond the cap must be marked truncated"
    return data[:MAX_OUTPUT].decode("utf-8", "replace")


def compare(program: Program, plain: Ran, stdout: str, stderr: str, exit_code: int | None, truncated: bool) -> None:
    assert normalize(stdout) == expected_output(plain.stdout, truncated)
    assert normalize(stderr) == expected_output(plain.stderr, truncated)
    if program.times_out:
        assert plain.exit_code is None, "the oracle did not run to the time limit"
    else:
        assert exit_code == plain.exit_code


# The import name of each package of sandbox/runtime/ whose name is not its import name.
IMPORT_NAMES = {"scikit-learn": "sklearn", "XlsxWriter": "xlsxwriter", "python-docx": "docx", "PyYAML": "yaml",
                "SQLAlchemy": "sqlalchemy", "pillow": "PIL", "opencv-python-headless": "cv2",
                "scikit-image": "skimage", "beautifulsoup4": "bs4", "python-dateutil": "dateutil", "Faker": "faker",
                "Flask": "flask", "pycryptodome": "Crypto", "jupyter-client": "jupyter_client"}
# Packages of the runtime that programs do not import: a Jupyter kernel and its client, for programs
# that start one of their own.
NOT_FOR_PROGRAMS = {"ipykernel", "jupyter-client"}


def runtime_packages() -> list[str]:
    names = []
    for requirements in ("requirements.txt", "torch.txt"):
        for line in (ROOT / "sandbox" / "runtime" / requirements).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                names.append(line.split("==")[0])
    return names


def test_the_corpus_is_large_and_covers_every_package_of_the_runtime():
    assert len(CORPUS) >= 300
    code = "\n".join(program.code for program in CORPUS.values())
    packages = [name for name in runtime_packages() if name not in NOT_FOR_PROGRAMS]
    assert len(packages) > 40
    for package in packages:
        module = IMPORT_NAMES.get(package, package)
        assert f"import {module}" in code or f"from {module}" in code, package
    for module in ("unittest", "doctest", "pytest", "subprocess", "multiprocessing", "sys.stdin", "os._exit"):
        assert module in code, module


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_grpc_runs_it_as_python3_does(name, oracle, over_grpc):
    program, answer = CORPUS[name], over_grpc[name]
    if program.times_out:
        assert answer.outcome == pb.TIMEOUT, answer
    assert answer.outcome not in (pb.DENIED, pb.INVALID), answer
    if answer.outcome == pb.CRASHED:  # a signal ended it, as it ends python3
        assert (oracle[name].exit_code or 0) < 0, answer
    compare(program, oracle[name], answer.stdout, answer.stderr,
            None if program.times_out else answer.python.exit_code, answer.truncated)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_run_code_runs_it_as_python3_does(name, oracle, over_http):
    program, answer = CORPUS[name], over_http[name]
    result = answer["run_result"]
    assert answer["status"] in ("Success", "Failed"), answer
    if program.times_out:
        assert result["status"] == "TimeLimitExceeded", answer
    compare(program, oracle[name], result["stdout"], result["stderr"], result["return_code"],
            bool(answer.get("message", "").startswith("output truncated")))


@pytest.mark.parametrize("program", programs_semantics.JAIL_REFUSES, ids=lambda p: p.name)
def test_what_the_jail_refuses_fails_cleanly(fidelity_server, program):
    with fidelity_server.client() as client:
        answer = client.run_python(program.code, timeout_ms=10000)
    assert answer.outcome == pb.ERROR and "PermissionError" in answer.stderr, answer
