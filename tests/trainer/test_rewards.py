from __future__ import annotations

import time

import pytest

from toolclient.client import AsyncToolClient
from trainer.answers import equivalent, last_boxed, to_sympy_text
from trainer.formats import ToRLFormat
from trainer.rewards import AnswerChecker, RewardContext, Task, auto_reward, get_reward, math_reward, task_from_row
from trainer.tool_runner import ToolRunner


def hang(pred: str, ref: str) -> bool:
    """A comparison that never ends (module level: the checker pickles it)."""
    time.sleep(3600)
    return True


@pytest.fixture(scope="module")
def checker():
    c = AnswerChecker(timeout_s=30)
    yield c
    c.close()


@pytest.mark.parametrize("text,expected", [
    ("so \\boxed{42}.", "42"),
    ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("\\boxed{\\sqrt{\\frac{a}{b}}}", "\\sqrt{\\frac{a}{b}}"),
    ("\\fbox{7}", "7"),
    ("no answer", None),
    ("\\boxed{unclosed", None),
])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize("pred,ref", [
    ("0.5", "\\frac{1}{2}"),
    ("\\dfrac{1}{2}", "1/2"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("x = 3", "3"),
    ("(1, 2)", "(1,2)"),
    ("\\pi/2", "\\frac{\\pi}{2}"),
    ("10\\%", "10"),
    ("2^{10}", "1024"),
])
def test_equivalent_by_value(pred, ref):
    assert equivalent(pred, ref)


@pytest.mark.parametrize("pred,ref", [("0.51", "\\frac{1}{2}"), ("(1, 2)", "(2, 1)"), ("3", "x + 1"), ("", "1")])
def test_not_equivalent(pred, ref):
    assert not equivalent(pred, ref)


def test_code_in_an_answer_is_never_evaluated():
    assert to_sympy_text("__import__('os').system('true')") is None
    assert to_sympy_text("().__class__") is None
    assert not equivalent("__import__('os')", "1")


def test_checker_scores_in_a_worker_process(checker):
    assert checker.check([("\\frac{2}{4}", "0.5"), ("3", "4")]) == [True, False]


def test_huge_answer_times_out_and_the_next_comparison_still_runs():
    quick = AnswerChecker(timeout_s=2, memory_mb=512)
    try:
        assert quick.check([("9^{9^{9^{9}}}", "1"), ("2", "2")]) == [False, True]
        assert quick.timeouts == 1
    finally:
        quick.close()


def test_hung_comparison_scores_zero_and_is_counted():
    hung = AnswerChecker(timeout_s=0.5, compare=hang)
    try:
        assert hung.check([("1", "1"), ("2", "2")]) == [False, False]
        assert hung.timeouts == 2
    finally:
        hung.close()


async def test_math_reward(checker):
    tasks = [Task("p", answer="\\frac{1}{2}")] * 3
    scores = await math_reward(["\\boxed{0.5}", "\\boxed{2}", "I give up"], tasks, RewardContext(ToRLFormat(), checker))
    assert scores == [1.0, 0.0, 0.0]


def test_task_rows():
    assert task_from_row({"problem": "p", "answer": 3}).answer == "3"
    task = task_from_row({"problem": "p", "tests": ["assert f(1) == 2", {"input": "1 2\n", "output": "3\n"}]})
    assert task.tests[0].assertion == "assert f(1) == 2"
    assert (task.tests[1].stdin, task.tests[1].stdout) == ("1 2\n", "3\n")
    with pytest.raises(ValueError):
        task_from_row({"problem": "p"})
    with pytest.raises(ValueError, match="unknown reward"):
        get_reward("bleu")


GOOD = "```python\ndef f(x):\n    return x + 1\n```"
HALF = "```python\ndef f(x):\n    return 2\n```"
IO = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


async def test_code_and_math_rewards_mix_on_the_server(trainer_server, checker):
    assert_task = task_from_row({"problem": "f", "tests": ["assert f(1) == 2", "assert f(5) == 6"]})
    io_task = task_from_row({"problem": "sum", "tests": [{"input": "1 2\n", "output": "3\n"},
                                                         {"input": "5 5\n", "output": "10"}]})
    math_task = task_from_row({"problem": "half", "answer": "1/2"})
    async with AsyncToolClient(trainer_server.target) as client:
        ctx = RewardContext(ToRLFormat(), checker, ToolRunner(client, timeout_ms=5000))
        completions = [GOOD, HALF, IO, "no program", "\\boxed{0.5}", "```python\nimport os; os._exit(3)\n```"]
        tasks = [assert_task, assert_task, io_task, assert_task, math_task, io_task]
        assert await auto_reward(completions, tasks, ctx) == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
        partial = await get_reward("code_partial")([HALF], [assert_task], ctx)
        assert partial == [0.5]


async def test_code_reward_is_none_when_the_server_is_unreachable(checker):
    from tests.conftest import free_port
    async with AsyncToolClient(f"127.0.0.1:{free_port()}", timeout_s=5) as client:
        ctx = RewardContext(ToRLFormat(), checker, ToolRunner(client, rpc_timeout_s=5))
        task = task_from_row({"problem": "f", "tests": ["assert f(1) == 2"]})
        assert await get_reward("code")([GOOD], [task], ctx) == [None]
        assert ctx.stats["code_infra_errors"] == 1
