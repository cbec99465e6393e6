"""The rollout loop with scripted policy tokens, against a real tool server."""

from __future__ import annotations

import json
from typing import Sequence

from tests.conftest import free_port
from toolclient.client import AsyncToolClient
from trainer.formats import RStar2Format, ToRLFormat
from trainer.rollout import Generation, RolloutLimits, RolloutLoop, rollout_metrics
from trainer.tokenizer import ByteTokenizer
from trainer.tool_runner import ToolRunner

TOK = ByteTokenizer()
LOGPROB = -0.5


class ScriptedPolicy:
    """Plays fixed turns per prompt, token by token, honouring stop and budget; the last
    turn of a script ends with EOS. Records which prompts each generate call served."""

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.turn = {p: 0 for p in scripts}
        self.batches: list[list[str]] = []

    def generate(self, contexts, stop, max_new_tokens: Sequence[int]) -> list[Generation]:
        out, served = [], []
        for context, budget in zip(contexts, max_new_tokens):
            prompt = next(p for p in self.scripts if TOK.decode(context).startswith(p))
            served.append(prompt)
            turns = self.scripts[prompt]
            k = self.turn[prompt]
            self.turn[prompt] += 1
            planned = TOK.encode(turns[k]) + ([TOK.eos_id] if k == len(turns) - 1 else [])
            ids: list[int] = []
            for tok in planned:
                if len(ids) == budget:
                    break
                ids.append(tok)
                if stop(ids):
                    break
            out.append(Generation(ids, [LOGPROB] * len(ids)))
        self.batches.append(served)
        return out


def block(code: str) -> str:
    return f"Let me compute.\n```python\n{code}\n```"


async def run(target: str, scripts: dict[str, list[str]], fmt=ToRLFormat(), limits=RolloutLimits(), **runner_kw):
    policy = ScriptedPolicy(scripts)
    async with AsyncToolClient(target, timeout_s=30) as client:
        runner = ToolRunner(client, **runner_kw)
        loop = RolloutLoop(policy, runner, fmt, TOK, limits)
        rollouts = await loop.run([TOK.encode(p) for p in scripts], list(range(len(scripts))))
    return rollouts, policy, runner


async def test_no_call(trainer_server):
    (r,), _, runner = await run(trainer_server.target, {"P:": ["The answer is \\boxed{4}."]})
    assert r.finish == "eos" and r.tool_calls == 0 and runner.stats.calls == 0
    assert r.mask == [1] * len(r.tokens) and r.logprobs == [LOGPROB] * len(r.tokens)
    assert r.model_text(TOK) == "The answer is \\boxed{4}."


async def test_good_call_appends_masked_observation(trainer_server):
    (r,), _, _ = await run(trainer_server.target, {"P:": [block("print(6*7)"), "So \\boxed{42}."]})
    assert (r.finish, r.tool_calls, r.tool_errors, r.outcomes) == ("eos", 1, 0, ["OK"])
    text = TOK.decode(r.tokens)
    assert "```\n```output\n42\n```\nSo \\boxed{42}." in text
    observation = [t for t, m in zip(r.tokens, r.mask) if m == 0]
    assert TOK.decode(observation) == "\n```output\n42\n```\n"
    assert all(lp == 0.0 for lp, m in zip(r.logprobs, r.mask) if m == 0)
    assert r.model_text(TOK) == block("print(6*7)") + "\nSo \\boxed{42}." and r.scorable


async def test_failing_call_is_a_tool_error(trainer_server):
    (r,), _, _ = await run(trainer_server.target, {"P:": [block("1/0"), "Oops. \\boxed{0}"]})
    assert (r.tool_calls, r.tool_errors, r.infra_errors, r.outcomes) == (1, 1, 0, ["ERROR"])
    assert "ZeroDivisionError" in TOK.decode(r.tokens) and r.scorable


async def test_malformed_call_is_answered_without_the_server(trainer_server):
    bad = "<tool_call>{\"name\": \"python\", \"arguments\": {\"code\": 1}}</tool_call>"
    (r,), _, runner = await run(trainer_server.target, {"P:": [bad, "\\boxed{1}"]}, fmt=RStar2Format())
    assert (r.tool_calls, r.tool_errors, r.format_errors, r.outcomes) == (1, 1, 1, ["MALFORMED"])
    assert runner.stats.calls == 0
    assert "<tool_response>\nError: the tool call could not be run: arguments.code" in TOK.decode(r.tokens)


async def test_rstar2_good_call(trainer_server):
    call = "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": "print(2**10)"}}) + "</tool_call>"
    (r,), _, _ = await run(trainer_server.target, {"P:": [call, "\\boxed{1024}"]}, fmt=RStar2Format())
    assert r.outcomes == ["OK"] and "<tool_response>\n1024\n</tool_response>" in TOK.decode(r.tokens)


async def test_infrastructure_error_is_retried_counted_and_not_the_models_fault():
    dead = f"127.0.0.1:{free_port()}"
    (r,), _, runner = await run(dead, {"P:": [block("print(1)"), "\\boxed{1}"]}, rpc_timeout_s=5)
    assert (r.tool_calls, r.tool_errors, r.infra_errors, r.outcomes) == (1, 0, 1, ["UNAVAILABLE"])
    assert not r.scorable and r.finish == "eos"
    assert runner.stats.retries == 1 and runner.stats.infra_errors == 1
    assert "infrastructure failure" in TOK.decode(r.tokens)


async def test_call_limit_ends_the_rollout(trainer_server):
    limits = RolloutLimits(max_tool_calls=1)
    (r,), _, runner = await run(trainer_server.target, {"P:": [block("1"), block("2"), "\\boxed{2}"]}, limits=limits)
    assert (r.finish, r.tool_calls, runner.stats.calls) == ("call_limit", 1, 1)


async def test_budget_and_observation_truncation(trainer_server):
    limits = RolloutLimits(max_completion_tokens=200, max_observation_tokens=40)
    (r,), _, _ = await run(trainer_server.target, {"P:": [block("print('x' * 5000)"), "y" * 500]}, limits=limits)
    assert r.finish == "budget" and len(r.tokens) == 200
    observation = [t for t, m in zip(r.tokens, r.mask) if m == 0]
    assert len(observation) == 40 and "truncated" in TOK.decode(observation)


async def test_rollouts_do_not_wait_for_each_others_tool_calls(trainer_server):
    scripts = {"SLOW:": [block("import time\ntime.sleep(6)"), "\\boxed{1}"],
               "FAST:": [block("1"), block("2"), block("3"), "\\boxed{3}"]}
    rollouts, policy, _ = await run(trainer_server.target, scripts, timeout_ms=10000)
    assert [r.outcomes for r in rollouts] == [["OK"], ["OK", "OK", "OK"]]
    assert policy.batches[0] == ["SLOW:", "FAST:"]
    assert policy.batches[1] == ["FAST:"]
    metrics = rollout_metrics(rollouts)
    assert metrics["tool_calls_per_rollout"] == 2.0 and metrics["rollout/finish_eos"] == 1.0
