"""SandboxFusion's request and response shapes, translated to and from the contract."""

from __future__ import annotations

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.fronts.sandbox_fusion import answer, cell_result, run_code_request, run_jupyter_request


def test_a_request_becomes_a_python_call_with_its_limits():
    call, language, within_s = run_code_request({"code": "print(1)", "stdin": "x", "run_timeout": 2.5,
                                                 "compile_timeout": 1, "memory_limit_MB": 512})
    assert call.python == pb.PythonCall(code="print(1)", stdin="x")
    assert call.limits == pb.Limits(timeout_ms=2500, memory_mb=512)
    assert language == "python" and within_s == 13.5


def test_nulls_and_defaults_are_sandbox_fusions():
    call, _, within_s = run_code_request({"code": "1", "stdin": None, "memory_limit_MB": -1, "language": "python"})
    assert call.limits == pb.Limits(timeout_ms=10_000) and call.python.stdin == "" and within_s == 30


@pytest.mark.parametrize("body", [{"code": 1}, {"code": "1", "stdin": 3}, {"code": "1", "run_timeout": True},
                                  {"code": "1", "run_timeout": 1e300}, {"code": "1", "run_timeout": 0},
                                  {"code": "1", "compile_timeout": -1}, {"code": "1", "memory_limit_MB": 1e300},
                                  {"code": "1", "memory_limit_MB": -2},
                                  {"code": "1", "fetch_files": [3]}, {"code": "1", "files": {"a": "not base64!"}},
                                  {"code": "1", "files": {"a": 7}}, "print(1)"])
def test_malformed_requests_are_invalid(body):
    with pytest.raises(InvalidRequest):
        run_code_request(body)


def response(outcome: int, **fields) -> pb.ExecuteResponse:
    return pb.ExecuteResponse(outcome=outcome, elapsed_us=1500, **fields)


def test_outcomes_map_to_sandbox_fusions_statuses():
    ok = answer(response(pb.OK, stdout="2\n"))
    assert ok["status"] == "Success" and ok["compile_result"] is None
    assert ok["run_result"] == {"status": "Finished", "execution_time": 0.0015, "return_code": 0,
                                "stdout": "2\n", "stderr": ""}
    error = answer(response(pb.ERROR, stderr="Traceback", python=pb.PythonResult(exit_code=1)))
    assert error["status"] == "Failed" and error["run_result"]["return_code"] == 1
    timeout = answer(response(pb.TIMEOUT, stdout="partial", error="wall time limit of 1000 ms exceeded"))
    assert timeout["run_result"]["status"] == "TimeLimitExceeded" and timeout["run_result"]["return_code"] is None
    assert timeout["run_result"]["stdout"] == "partial"
    memory = answer(response(pb.MEMORY_LIMIT, error="memory limit of 128 MB exceeded"))
    assert memory["status"] == "Failed" and "memory limit" in memory["run_result"]["stderr"]
    assert answer(response(pb.CRASHED, error="sandbox worker was lost"))["status"] == "SandboxError"
    aborted = answer(response(pb.CRASHED, error="killed by signal SIGABRT", python=pb.PythonResult(exit_code=-6)))
    assert aborted["status"] == "Failed" and aborted["run_result"]["return_code"] == -6  # as python3's status
    traced = answer(response(pb.MEMORY_LIMIT, stderr="Traceback ...\nMemoryError\n", error="memory limit of 128 MB exceeded"))
    assert traced["run_result"]["stderr"] == "Traceback ...\nMemoryError\n"  # its own traceback says it


def test_truncation_is_said():
    assert "truncated" in answer(response(pb.OK, stdout="x", truncated=True))["message"]


def test_files_are_decoded_and_null_contents_skipped():
    call, _, _ = run_code_request({"code": "1", "files": {"in.txt": "aGk=", "skipped": None},
                                   "fetch_files": ["out.txt"]})
    assert dict(call.python.files) == {"in.txt": b"hi"} and list(call.python.fetch_files) == ["out.txt"]


def test_fetched_files_come_back_in_base64():
    reply = answer(response(pb.OK, python=pb.PythonResult(files={"out.txt": b"hi"})))
    assert reply["files"] == {"out.txt": "aGk="}


def test_a_jupyter_request_has_sandbox_fusions_defaults():
    assert run_jupyter_request({"cells": ["1"]}) == (["1"], 0, 45)
    assert run_jupyter_request({"cells": ["1"], "cell_timeout": 2, "total_timeout": 9}) == (["1"], 2, 9)


@pytest.mark.parametrize("body", [{"cells": [1]}, {"cells": "1"}, {"cells": ["1"], "kernel": "ir"},
                                  {"cells": ["1"], "total_timeout": 0}, {"cells": ["1"], "files": {"a": "aGk="}},
                                  {"cells": ["1"], "total_timeout": 1e300}, {"cells": ["1"], "cell_timeout": -1}])
def test_malformed_jupyter_requests_are_invalid(body):
    with pytest.raises(InvalidRequest):
        run_jupyter_request(body)


def test_a_cell_shows_its_value_and_its_error():
    shown = cell_result(response(pb.OK, stdout="hi\n", python=pb.PythonResult(value="42")))
    assert shown == {"stdout": "hi\n", "stderr": "", "display": [{"text/plain": "42"}], "error": []}
    failed = cell_result(response(pb.ERROR, stderr="Traceback ...", error="ZeroDivisionError: division by zero"))
    assert failed["error"][0]["ename"] == "ZeroDivisionError" and failed["error"][0]["evalue"] == "division by zero"
    timed_out = cell_result(response(pb.TIMEOUT, error="time limit of 2000 ms exceeded"))
    assert timed_out["error"][0]["ename"] == "TIMEOUT"


def test_a_cells_displays_come_in_its_order_as_a_kernel_holds_them():
    figure = pb.Display(kind="display_data", data={"image/png": b"\x89PNG", "text/plain": b"<Figure>"})
    data = pb.Display(kind="display_data", data={"application/json": b'{"k": [1]}', "text/plain": b"<JSON>"})
    value = pb.Display(kind="execute_result", data={"text/html": b"<table/>", "text/plain": b"   a"})
    shown = cell_result(response(pb.OK, python=pb.PythonResult(value="   a", displays=[figure, data, value])))
    assert shown["display"] == [{"image/png": "iVBORw==", "text/plain": "<Figure>"},
                                {"application/json": {"k": [1]}, "text/plain": "<JSON>"},
                                {"text/html": "<table/>", "text/plain": "   a"}]
