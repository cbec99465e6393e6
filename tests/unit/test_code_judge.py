"""code-judge's submission and result shapes, translated to and from the contract."""

from __future__ import annotations

import pytest

from toolcontract.output_match import same_output
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import Exhausted, InvalidRequest
from toolserver.fronts.code_judge import refused, result, submission


def test_a_submission_becomes_a_python_call():
    sub_id, call, expected = submission({"sub_id": "s1", "type": "python", "solution": "print(input())",
                                         "input": "7\n", "expected_output": "7"}, "item")
    assert (sub_id, call.python, expected) == ("s1", pb.PythonCall(code="print(input())", stdin="7\n"), "7")
    assert call.request_id == "s1" and submission({"solution": "1"}, "item")[0]  # an id is made when none is sent


def test_a_cpp_submission_becomes_a_cpp_call():
    _, call, expected = submission({"type": "cpp", "solution": "int main(){}", "input": "1\n",
                                    "expected_output": "1"}, "item")
    assert call.WhichOneof("call") == "cpp" and expected == "1"
    assert (call.cpp.source, call.cpp.stdin) == ("int main(){}", "1\n")


def test_a_submission_of_another_language_becomes_a_program_call():
    _, call, _ = submission({"type": "java", "solution": "class Main {}", "input": "1\n"}, "item", ("java", "go"))
    assert call.WhichOneof("call") == "program"
    assert (call.program.language, call.program.source, call.program.stdin) == ("java", "class Main {}", "1\n")


@pytest.mark.parametrize("item, message", [({"type": "java", "solution": ""}, "not supported"),
                                           ({"solution": 3}, "item.solution must be a string"),
                                           ({}, "solution is required"), ([], "JSON object")])
def test_bad_submissions_name_the_field(item, message):
    with pytest.raises(InvalidRequest, match=message):
        submission(item, "item")


def test_outputs_compare_like_code_judge():
    assert same_output("9\n", "9") and same_output("a  \nb\n\n", "a\nb")
    assert not same_output("9\n", "8") and not same_output("a\nb", "ab")


def test_results_carry_run_success_success_and_reason():
    ok = result("a", pb.ExecuteResponse(outcome=pb.OK, stdout="9\n", elapsed_us=2_000_000), "9")
    assert ok["run_success"] and ok["success"] and ok["cost"] == 2.0 and ok["reason"] == ""
    wrong = result("b", pb.ExecuteResponse(outcome=pb.OK, stdout="8\n"), "9")
    assert wrong["run_success"] and not wrong["success"]
    slow = result("c", pb.ExecuteResponse(outcome=pb.TIMEOUT, error="wall time limit of 5000 ms exceeded"), None)
    assert slow["reason"] == "worker_timeout" and "wall time" in slow["error"] and slow["stderr"] == ""
    failed = result("g", pb.ExecuteResponse(outcome=pb.ERROR, stderr="Traceback ...\nValueError: 3\n",
                                            error="ValueError: 3", python=pb.PythonResult(exit_code=1)), None)
    assert failed["stderr"] == "Traceback ...\nValueError: 3\n" and failed["error"] == "ValueError: 3"
    assert result("d", pb.ExecuteResponse(outcome=pb.CRASHED), None)["reason"] == "internal_error"
    segfault = pb.ExecuteResponse(outcome=pb.CRASHED, error="killed by signal SIGSEGV", python=pb.PythonResult(exit_code=-11))
    assert result("f", segfault, None)["reason"] == ""  # the program's own end, not the server's
    assert refused("e", Exhausted("python queue is full"))["reason"] == "queue_timeout"
