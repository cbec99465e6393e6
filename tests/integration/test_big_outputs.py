"""What a program prints reaches the grader whole: outputs of 1, 5 and 16 MiB (the default
cap, `limits.max_output_bytes`), on stdout and stderr, text and binary, written at once
and in many small writes, equal to a plain python3's through gRPC, SandboxFusion's
`/run_code` and code-judge's `/run`; one byte past the cap is the output limit on each
wire, with what came before the cut."""

from __future__ import annotations

import hashlib

import pytest
import requests

from tests.conftest import RunningServer, free_port
from tests.fidelity.oracle import run_plain
from tests.fidelity.program import Program
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import LimitCaps
from toolserver.python.settings import PythonSettings

CAP = LimitCaps().max_output_bytes
MIB = 1 << 20


def program(size: int, stream: str, kind: str, writes: str) -> str:
    """A program that writes exactly size bytes to stream."""
    data = ("bytes(range(256)) * ({n} // 256) + bytes(range({n} % 256))" if kind == "binary" else
            "(('0123456789abcdef' * 4 + '\\n') * ({n} // 65 + 1))[:{n}]").format(n=size)
    target = f"sys.{stream}.buffer" if kind == "binary" else f"sys.{stream}"
    if writes == "once":
        return f"import sys\ndata = {data}\n{target}.write(data)\n"
    return f"import sys\ndata = {data}\nfor i in range(0, len(data), 997):\n    {target}.write(data[i:i + 997])\n"


def digest(text: str) -> tuple[int, str]:
    return len(text), hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@pytest.fixture(scope="module")
def wires(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("outputs"), workers=1, args=("--http-port", str(port)))
    yield running, f"http://127.0.0.1:{port}"
    running.stop()


def streams_of(wire: str, code: str, server: RunningServer, url: str) -> tuple[str, str, bool]:
    """stdout, stderr and whether the call succeeded, as wire answers them."""
    if wire == "grpc":
        with server.client() as client:
            response = client.run_python(code, timeout_ms=30000)
        return response.stdout, response.stderr, response.outcome == pb.OK
    if wire == "run_code":
        answer = requests.post(f"{url}/run_code", json={"code": code, "language": "python", "run_timeout": 30},
                               timeout=120).json()
        run = answer["run_result"]
        return run["stdout"], run["stderr"], answer["status"] == "Success"
    item = requests.post(f"{url}/run", json={"type": "python", "solution": code}, timeout=120).json()
    return item["stdout"], item["stderr"], item["run_success"]


# gRPC at every size; the HTTP fronts at the cap, in small writes.
CASES = [("grpc", size, stream, kind, writes) for size in (MIB, 5 * MIB, 16 * MIB) for stream in ("stdout", "stderr")
         for kind in ("text", "binary") for writes in ("once", "small")]
CASES += [(wire, 16 * MIB, stream, kind, "small") for wire in ("run_code", "run") for stream in ("stdout", "stderr")
          for kind in ("text", "binary")]


@pytest.mark.parametrize("wire, size, stream, kind, writes", CASES,
                         ids=[f"{w}-{s // MIB}MiB-{st}-{k}-{wr}" for w, s, st, k, wr in CASES])
def test_big_outputs_are_whole_and_as_python3_prints_them(wires, wire, size, stream, kind, writes):
    server, url = wires
    code = program(size, stream, kind, writes)
    stdout, stderr, succeeded = streams_of(wire, code, server, url)
    oracle = run_plain(Program("big", code), PythonSettings().interpreter)
    assert oracle.exit_code == 0 and succeeded
    assert digest(stdout) == digest(oracle.stdout) and digest(stderr) == digest(oracle.stderr)


@pytest.mark.parametrize("wire", ["grpc", "run_code", "run"])
def test_one_byte_past_the_cap_is_the_output_limit_with_what_came_before(wires, wire):
    server, url = wires
    code = program(CAP + 1, "stdout", "text", "small")
    head = run_plain(Program("cap", program(CAP, "stdout", "text", "small")), PythonSettings().interpreter).stdout
    if wire == "grpc":
        with server.client() as client:
            response = client.run_python(code, timeout_ms=30000)
        assert response.outcome == pb.OUTPUT_LIMIT and response.truncated and "output limit" in response.error
        stdout = response.stdout
    elif wire == "run_code":
        answer = requests.post(f"{url}/run_code", json={"code": code, "language": "python"}, timeout=120).json()
        assert answer["status"] == "Failed" and "output limit" in answer["message"]
        stdout = answer["run_result"]["stdout"]
    else:
        item = requests.post(f"{url}/run", json={"type": "python", "solution": code}, timeout=120).json()
        assert not item["run_success"] and item["truncated"] and "output limit" in item["error"]
        stdout = item["stdout"]
    assert digest(stdout) == digest(head)
