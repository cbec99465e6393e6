"""verl's own code reward scoring against our SandboxFusion front (real firejail, real
sockets): `compute_score` and `check_correctness` of `verl.utils.reward_score.sandbox_fusion`
and the `default_compute_score` route a verl trainer takes when `reward.sandbox_fusion.url`
is set. verl turns each answer into a per-case result: True (passed), False (wrong
answer), -1 (API or sandbox error), -2 (runtime error), -3 (timeout), -4 (compile error).

Any verl import runs `verl/__init__.py`, which loads torch and Ray (about 4 s and 380 MB
on CPU); it works without a GPU, so the modules are imported as a trainer imports them.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.conftest import RunningServer, free_port

verl_sandbox = pytest.importorskip("verl.utils.reward_score.sandbox_fusion", reason="verl is not installed")
from verl.utils.reward_score import default_compute_score  # noqa: E402
from verl.utils.reward_score.sandbox_fusion.utils import API_TIMEOUT, check_correctness  # noqa: E402

SQUARE = "n = int(input())\nprint(n * n)\n"
SUM = "print(sum(map(int, input().split())))\n"


def fenced(code: str) -> str:
    """code as a model's completion gives it: in a ```python block between prose."""
    return f"Read the input and compute the answer.\n\n```python\n{code}```\n\nThis runs in linear time."


def cases(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    return {"inputs": [stdin for stdin, _ in pairs], "outputs": [stdout for _, stdout in pairs]}


@pytest.fixture(scope="module")
def run_code_url(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("verl"), workers=2, args=("--http-port", str(port)))
    yield f"http://127.0.0.1:{port}/run_code"
    running.stop()


def test_a_correct_solution_scores_one(run_code_url):
    score, metadata = verl_sandbox.compute_score(run_code_url, None, 1024, fenced(SUM),
                                                 cases([("1 2\n", "3\n"), ("40 2\n", "42\n"), ("-5 5\n", "0")]))
    assert score == 1.0
    assert [case["status"] for case in metadata] == ["success"] * 3
    assert all(case["api_status"] == "Success" and case["run_status"] == "Finished" and case["exit_code"] == 0
               for case in metadata)


def test_a_wrong_answer_is_false_and_scores_zero(run_code_url):
    test_cases = cases([("3\n", "9\n"), ("4\n", "16\n")])
    wrong = "n = int(input())\nprint(n + n)\n"
    results, metadata = check_correctness(run_code_url, test_cases, wrong, timeout=5)
    assert results == [False, False]
    assert [case["status"] for case in metadata] == ["wrong_answer"] * 2 and metadata[0]["stdout"] == "6\n"
    score, _ = verl_sandbox.compute_score(run_code_url, None, 1024, fenced(wrong), test_cases)
    assert score == 0.0


def test_a_runtime_error_is_minus_two(run_code_url):
    results, metadata = check_correctness(run_code_url, cases([("3\n", "9\n")]), "print(int(input()) / 0)\n",
                                          timeout=5)
    assert results == [-2]
    assert metadata[0]["status"] == "runtime_error" and metadata[0]["api_status"] == "Failed"
    assert metadata[0]["exit_code"] != 0 and "ZeroDivisionError" in metadata[0]["stderr"]


def test_a_timeout_is_minus_three_and_answered_in_time(run_code_url):
    timeout = 1
    started = time.monotonic()
    results, metadata = check_correctness(run_code_url, cases([("3\n", "9\n")]),
                                          "print('partial', flush=True)\nwhile True:\n    pass\n", timeout=timeout)
    elapsed = time.monotonic() - started
    assert results == [-3]
    assert metadata[0]["status"] == "timeout" and metadata[0]["run_status"] == "TimeLimitExceeded"
    assert metadata[0]["api_request_error"] is None and metadata[0]["exit_code"] is None
    assert metadata[0]["stdout"] == "partial\n"
    assert elapsed < timeout + timeout + API_TIMEOUT  # verl's wait: its timeout is sent as both


@pytest.mark.parametrize("fence", ["```python\n", "```py\n", "```\n"])
def test_a_fenced_completion_is_scored_by_its_code(run_code_url, fence):
    completion = fenced(SQUARE).replace("```python\n", fence)
    score, metadata = verl_sandbox.compute_score(run_code_url, None, 1024, completion,
                                                 cases([("7\n", "49\n"), ("12\n", "144\n")]))
    assert score == 1.0, [case["status"] for case in metadata]


def test_call_based_cases_run_through_verls_wrapper(run_code_url):
    """fn_name cases: verl wraps the code, feeds one JSON argument per stdin line and prints
    the return value; a LeetCode-style Solution class is found by its method name."""
    solution = ("class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
                "        seen = {}\n        for i, x in enumerate(nums):\n"
                "            if target - x in seen:\n                return [seen[target - x], i]\n"
                "            seen[x] = i\n")
    test_cases = {"fn_name": "twoSum", "inputs": ["[2, 7, 11, 15]\n9", "[3, 2, 4]\n6", "[3, 3]\n6"],
                  "outputs": ["[0, 1]", "[1, 2]", "[1, 0]"]}
    results, metadata = check_correctness(run_code_url, test_cases, solution, timeout=5)
    assert results == [True, True, False]
    assert metadata[2]["stdout"] == "[0, 1]\n"


def test_a_100_case_mixed_batch_gives_each_case_its_result(run_code_url):
    """One problem, 100 cases, 16 in flight (verl's concurrency semaphore): a solution
    wrong on multiples of 5, raising on numbers ending in 7 and hanging on two."""
    timeout, hangs = 2, (42, 84)
    solution = ("import time\nn = int(input())\n"
                f"if n in {hangs}:\n    time.sleep(60)\n"
                "if n % 10 == 7:\n    raise ValueError(n)\n"
                "print(n * n if n % 5 else n * n + 1)\n")

    def expected(n: int) -> tuple[bool | int, str]:
        if n in hangs:
            return -3, "timeout"
        if n % 10 == 7:
            return -2, "runtime_error"
        return (True, "success") if n % 5 else (False, "wrong_answer")

    results, metadata = check_correctness(run_code_url, cases([(f"{n}\n", f"{n * n}\n") for n in range(100)]),
                                          solution, timeout=timeout, concurrent_semaphore=threading.Semaphore(16))
    assert [(result, case["status"]) for result, case in zip(results, metadata)] == [expected(n) for n in range(100)]
    assert [case["case_index"] for case in metadata] == list(range(100))
    assert all(case["api_request_error"] is None for case in metadata)


def test_the_memory_limit_verl_sends_is_applied(run_code_url):
    allocate = "b = bytearray(int(input()) << 20)\nprint(len(b))\n"
    test_cases = cases([("32\n", f"{32 << 20}\n"), ("600\n", f"{600 << 20}\n")])
    results, metadata = check_correctness(run_code_url, test_cases, allocate, timeout=5, memory_limit_mb=128)
    assert results == [True, -2]
    assert metadata[1]["status"] == "runtime_error" and metadata[1]["stdout"] == ""


def test_a_language_we_do_not_run_is_a_sandbox_error(run_code_url):
    results, metadata = check_correctness(run_code_url, cases([("", "0")]), "class Main {}", timeout=5,
                                          language="java")
    assert results == [-1]
    assert metadata[0]["status"] == "sandbox_error" and metadata[0]["api_request_error"] is None


def test_default_compute_score_routes_code_datasets_to_our_front(run_code_url):
    """A verl trainer with reward.sandbox_fusion.url set calls this for codecontests, apps,
    codeforces and taco rows, the test cases being the row's ground truth as JSON; its
    score is continuous over the first 10 cases."""
    ground_truth = json.dumps(cases([(f"{n}\n", f"{n * n}\n") for n in range(12)]))
    right_on_evens = "n = int(input())\nprint(n * n if n % 2 == 0 else -n)\n"
    semaphore = threading.Semaphore(8)
    for data_source, code, score in (("codecontests", SQUARE, 1.0), ("taco", right_on_evens, 0.5)):
        assert default_compute_score(data_source, fenced(code), ground_truth, sandbox_fusion_url=run_code_url,
                                     concurrent_semaphore=semaphore, memory_limit_mb=1024) == score
