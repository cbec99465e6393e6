"""Rewards by name, one signature: completions and their tasks in, one score each out.

`math` scores 1/0 by comparing the last \\boxed{} with the reference answer by value
(`answers.equivalent`) in a separate process under a hard timeout (`AnswerChecker`): a
hung comparison scores 0 and is counted. `code` runs the model's final program against
the task's tests on the tool server, never in the trainer: all pass = 1, or with partial
credit the fraction passed. `auto` picks per task, so math and code tasks mix in one run.
A score of None means "not scored": the infrastructure failed, not the model.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
from dataclasses import dataclass, field
from multiprocessing.pool import Pool
from typing import Any, Awaitable, Callable, Mapping, Sequence

from trainer.answers import equivalent, last_boxed
from trainer.formats import ToolFormat
from trainer.tool_runner import CallResult, PythonJob, ToolRunner


@dataclass(frozen=True)
class CodeTest:
    """An assert-style test (`assertion`, run after the program) or a stdin/stdout case."""

    assertion: str = ""
    stdin: str = ""
    stdout: str = ""


@dataclass(frozen=True)
class Task:
    problem: str
    answer: str | None = None
    tests: tuple[CodeTest, ...] = ()


def task_from_row(row: Mapping[str, Any]) -> Task:
    """A dataset row: {problem, answer} or {problem, tests}; a test is an assert
    statement (str) or {"input": ..., "output": ...}."""
    tests = []
    for test in row.get("tests") or ():
        if isinstance(test, str):
            tests.append(CodeTest(assertion=test))
        else:
            tests.append(CodeTest(stdin=str(test.get("input", "")), stdout=str(test.get("output", ""))))
    answer = row.get("answer")
    if answer is None and not tests:
        raise ValueError("a task row needs an 'answer' or 'tests'")
    return Task(str(row["problem"]), None if answer is None else str(answer), tuple(tests))


def _limit_memory(memory_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))


class AnswerChecker:
    """Compares answers in a worker process, each comparison under a hard timeout.

    A comparison past `timeout_s` scores False, is counted in `timeouts`, and its worker
    process is terminated and replaced (a thread could not be stopped). The worker's
    address space is capped at `memory_mb` (an answer like 9^9^9^9 fails, it does not
    swap the machine). `compare` must be a module-level function (it is pickled)."""

    def __init__(self, timeout_s: float = 5.0, *, processes: int = 1, memory_mb: int = 2048,
                 compare: Callable[[str, str], bool] = equivalent) -> None:
        self.timeout_s = timeout_s
        self.processes = processes
        self.memory_mb = memory_mb
        self.compare = compare
        self.timeouts = 0
        self._pool: Pool | None = None

    def _get_pool(self) -> Pool:
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(self.processes, _limit_memory, (self.memory_mb,))
        return self._pool

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each (prediction, reference) pair is equal by value."""
        verdicts: list[bool] = [False] * len(pairs)
        todo = list(range(len(pairs)))
        while todo:
            pool = self._get_pool()
            futures = [(i, pool.apply_async(self.compare, pairs[i])) for i in todo]
            todo = []
            for n, (i, future) in enumerate(futures):
                try:
                    verdicts[i] = bool(future.get(self.timeout_s))
                except multiprocessing.TimeoutError:
                    self.timeouts += 1
                    self.close()
                    todo = [j for j, _ in futures[n + 1:]]
                    break
                except Exception:
                    verdicts[i] = False
        return verdicts

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


@dataclass
class RewardContext:
    """What reward functions may use: the answer checker, the server, the format."""

    fmt: ToolFormat
    checker: AnswerChecker | None = None
    runner: ToolRunner | None = None
    partial_credit: bool = False
    stats: dict[str, int] = field(default_factory=dict)


RewardFn = Callable[[Sequence[str], Sequence[Task], RewardContext], Awaitable[list[float | None]]]


async def math_reward(completions: Sequence[str], tasks: Sequence[Task], ctx: RewardContext) -> list[float | None]:
    """1 when the last \\boxed{} equals the task's answer by value, else 0."""
    if ctx.checker is None:
        raise ValueError("math_reward needs an AnswerChecker")
    preds = [last_boxed(c) for c in completions]
    idx: list[int] = []
    pairs: list[tuple[str, str]] = []
    for i, pred in enumerate(preds):
        answer = tasks[i].answer
        if pred is not None and answer is not None:
            idx.append(i)
            pairs.append((pred, answer))
    verdicts = await asyncio.to_thread(ctx.checker.check, pairs)
    scores: list[float | None] = [0.0] * len(completions)
    for i, ok in zip(idx, verdicts):
        scores[i] = float(ok)
    ctx.stats["answer_timeouts"] = ctx.checker.timeouts
    return scores


def jobs_for_tests(program: str, task: Task) -> list[PythonJob]:
    """One sandboxed call per test: the program then the assertion, or the program on
    the case's stdin."""
    return [PythonJob(f"{program}\n\n{t.assertion}\n") if t.assertion else PythonJob(program, t.stdin)
            for t in task.tests]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


def case_passed(test: CodeTest, result: CallResult) -> bool:
    if not result.ok or result.response is None:  # ok implies an answer; the check says so to mypy
        return False
    if test.assertion:
        return True
    return _lines(result.response.stdout) == _lines(test.stdout)


async def code_reward(completions: Sequence[str], tasks: Sequence[Task], ctx: RewardContext) -> list[float | None]:
    """Runs each final program against its task's tests on the server, all calls of the
    batch on one stream. None when a test met an infrastructure failure."""
    if ctx.runner is None:
        raise ValueError("code_reward needs a ToolRunner")
    jobs: list[PythonJob] = []
    spans: list[tuple[int, int] | None] = []
    for completion, task in zip(completions, tasks):
        program = ctx.fmt.final_program(completion)
        if program is None or not task.tests:
            spans.append(None)
            continue
        new = jobs_for_tests(program, task)
        spans.append((len(jobs), len(jobs) + len(new)))
        jobs.extend(new)
    results = await ctx.runner.run(jobs) if jobs else []
    scores: list[float | None] = []
    for task, span in zip(tasks, spans):
        if span is None:
            scores.append(0.0)
            continue
        mine = results[span[0]:span[1]]
        if any(r.infra_error for r in mine):
            ctx.stats["code_infra_errors"] = ctx.stats.get("code_infra_errors", 0) + 1
            scores.append(None)
            continue
        passed = sum(case_passed(t, r) for t, r in zip(task.tests, mine)) / len(task.tests)
        scores.append(passed if ctx.partial_credit else float(passed == 1.0))
    return scores


async def code_partial_reward(completions: Sequence[str], tasks: Sequence[Task], ctx: RewardContext
                              ) -> list[float | None]:
    """`code_reward` with partial credit: the fraction of tests passed."""
    partial = RewardContext(ctx.fmt, ctx.checker, ctx.runner, True, ctx.stats)
    return await code_reward(completions, tasks, partial)


async def auto_reward(completions: Sequence[str], tasks: Sequence[Task], ctx: RewardContext) -> list[float | None]:
    """`code_reward` for tasks with tests, `math_reward` for the others, in one batch each."""
    code = [i for i, t in enumerate(tasks) if t.tests]
    math = [i for i, t in enumerate(tasks) if not t.tests]
    scores: list[float | None] = [None] * len(tasks)
    for idx, fn in ((code, code_reward), (math, math_reward)):
        if idx:
            for i, s in zip(idx, await fn([completions[i] for i in idx], [tasks[i] for i in idx], ctx)):
                scores[i] = s
    return scores


REWARDS: dict[str, RewardFn] = {"auto": auto_reward, "math": math_reward, "code": code_reward,
                                "code_partial": code_partial_reward}


def get_reward(name: str) -> RewardFn:
    try:
        return REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown reward {name!r}; known: {sorted(REWARDS)}") from None
