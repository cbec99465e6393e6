"""The multi-turn rollout loop over token ids, and the `Policy` interface it drives.

Every rollout alternates: the policy generates until it closes a tool call (the format's
stop test), ends (EOS) or runs out of budget; a closed call's code goes to the server;
the response comes back as observation token ids (loss mask 0) and generation resumes,
up to `max_tool_calls` and `max_completion_tokens`. Text is decoded only to find calls;
what the model generated is kept as the ids it produced, never re-tokenised.

Rollouts do not wait for each other's tool calls: the calls closed in one generation
round go to the server on one stream (`ToolRunner.as_completed`), each answer is taken
as it arrives, and the next round generates for every rollout not waiting for one. A
round is one batched `generate`: an answer that arrives during it waits for its end.
Infrastructure failures are counted in `infra_errors` and make a rollout unscorable
(`scorable`), never the model's fault.
Rewards, advantages and updates are not computed here.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from trainer.formats import MalformedCall, ToolCall, ToolFormat, malformed_text, response_text
from trainer.tokenizer import Tokenizer
from trainer.tool_runner import CallResult, PythonJob, ToolRunner

StopFn = Callable[[Sequence[int]], bool]
INFRA_TEXT = "Error: the tool is unavailable (an infrastructure failure, not your code)."


@dataclass
class Generation:
    tokens: list[int]
    logprobs: list[float]   # log-probability of each token under the sampling policy


class Policy(Protocol):
    """Token ids in, token ids and logprobs out. `generate` continues each context until
    EOS, `stop(new_ids)` is true, or `max_new_tokens[i]` tokens; it may block (the loop
    runs it in a worker thread)."""

    def generate(self, contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int]) -> list[Generation]: ...


@dataclass(frozen=True)
class RolloutLimits:
    max_tool_calls: int = 4
    max_completion_tokens: int = 1024
    max_observation_tokens: int = 256


@dataclass
class Rollout:
    """One trajectory. `tokens`, `mask` and `logprobs` cover the completion (after the
    prompt): mask 1 on generated tokens, 0 on observations (logprob 0 there)."""

    prompt: list[int]
    group: int = 0
    tokens: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tool_calls: int = 0
    tool_errors: int = 0       # calls whose code failed, and malformed calls
    format_errors: int = 0     # malformed calls
    infra_errors: int = 0      # calls the infrastructure failed (after retry)
    outcomes: list[str] = field(default_factory=list)  # per call: OK, ERROR, ..., MALFORMED
    finish: str = ""           # eos | budget | call_limit
    reward: float | None = None

    @property
    def scorable(self) -> bool:
        return self.infra_errors == 0

    def add(self, ids: Sequence[int], logprobs: Sequence[float] | None) -> None:
        self.tokens.extend(ids)
        self.mask.extend([1 if logprobs is not None else 0] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    def model_text(self, tokenizer: Tokenizer) -> str:
        """What the model wrote, observations left out: the text rewards look at."""
        runs: list[list[int]] = []
        current: list[int] = []
        for tok, m in zip(self.tokens, self.mask):
            if m:
                current.append(tok)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        return "\n".join(tokenizer.decode(run) for run in runs)


class RolloutLoop:
    def __init__(self, policy: Policy, runner: ToolRunner, fmt: ToolFormat, tokenizer: Tokenizer,
                 limits: RolloutLimits = RolloutLimits()) -> None:
        self.policy = policy
        self.runner = runner
        self.fmt = fmt
        self.tokenizer = tokenizer
        self.limits = limits
        self.stop = fmt.stopper(tokenizer)

    def _left(self, r: Rollout) -> int:
        return self.limits.max_completion_tokens - len(r.tokens)

    def _observe(self, r: Rollout, text: str) -> bool:
        """Appends an observation; False when no room is left to generate after it."""
        room = self._left(r) - 1
        ids = self.fmt.observation_ids(text, self.tokenizer, min(self.limits.max_observation_tokens, room))
        r.add(ids, None)
        if self._left(r) < 1:
            r.finish = "budget"
            return False
        return True

    def _after_generation(self, r: Rollout, gen: Generation, turn_start: int) -> ToolCall | None:
        """Appends a turn; returns the call to run, or None when the rollout is done or
        continues at once (a malformed call is answered without the server)."""
        r.add(gen.tokens, gen.logprobs)
        if gen.tokens and gen.tokens[-1] == self.tokenizer.eos_id:
            r.finish = "eos"
            return None
        call = self.fmt.parse_call(self.tokenizer.decode(r.tokens[turn_start:]))
        if call is None:
            r.finish = "budget"
            return None
        if r.tool_calls >= self.limits.max_tool_calls:
            r.finish = "call_limit"
            return None
        if self._left(r) < 2:
            r.finish = "budget"
            return None
        r.tool_calls += 1
        if isinstance(call, MalformedCall):
            r.format_errors += 1
            r.tool_errors += 1
            r.outcomes.append("MALFORMED")
            self._observe(r, malformed_text(call))
            return None
        return call

    def _after_call(self, r: Rollout, result: CallResult) -> bool:
        r.outcomes.append(result.outcome)
        if result.infra_error or result.response is None:  # no answer is always an infra_error
            r.infra_errors += 1
            return self._observe(r, INFRA_TEXT)
        r.tool_errors += result.tool_error
        return self._observe(r, response_text(result.response))

    async def _call_all(self, owners: list[int], calls: list[ToolCall],
                        answers: asyncio.Queue[tuple[int, CallResult]]) -> None:
        """Runs one round's calls on one stream, queueing each answer as it arrives; a
        failure of the runner itself answers the rest as infrastructure errors."""
        answered: set[int] = set()
        try:
            async for j, result in self.runner.as_completed([PythonJob(c.code) for c in calls]):
                answered.add(j)
                await answers.put((owners[j], result))
        except Exception as exc:  # the loop must get one answer per call, whatever failed
            for j in set(range(len(calls))) - answered:
                await answers.put((owners[j], CallResult(None, f"tool runner failed: {exc!r}")))

    async def run(self, prompts: Sequence[Sequence[int]], groups: Sequence[int] | None = None) -> list[Rollout]:
        """One rollout per prompt (repeat a prompt G times for a group)."""
        rollouts = [Rollout(list(p), g) for p, g in zip(prompts, groups or [0] * len(prompts))]
        ready = list(range(len(rollouts)))
        answers: asyncio.Queue[tuple[int, CallResult]] = asyncio.Queue()
        streams: set[asyncio.Task[None]] = set()
        in_flight = 0
        while ready or in_flight:
            if ready:
                batch, ready = ready, []
                starts = [len(rollouts[i].tokens) for i in batch]
                gens = await asyncio.to_thread(self.policy.generate,
                                               [rollouts[i].prompt + rollouts[i].tokens for i in batch],
                                               self.stop, [self._left(rollouts[i]) for i in batch])
                owners, calls = [], []
                for i, gen, start in zip(batch, gens, starts):
                    call = self._after_generation(rollouts[i], gen, start)
                    if call is not None:
                        owners.append(i)
                        calls.append(call)
                    elif not rollouts[i].finish:
                        ready.append(i)
                if calls:
                    in_flight += len(calls)
                    task = asyncio.create_task(self._call_all(owners, calls, answers))
                    streams.add(task)
                    task.add_done_callback(streams.discard)
            arrived = [] if ready or not in_flight else [await answers.get()]
            while not answers.empty():
                arrived.append(answers.get_nowait())
            for i, result in arrived:
                in_flight -= 1
                if self._after_call(rollouts[i], result):
                    ready.append(i)
        return rollouts


def _mean(xs: Sequence[float]) -> float:
    return float(statistics.fmean(xs))


def rollout_metrics(rollouts: Sequence[Rollout]) -> dict[str, float]:
    """Per-step figures of a batch of rollouts: tool use, errors, lengths, finishes."""
    if not rollouts:
        return {}
    calls = sum(r.tool_calls for r in rollouts)
    metrics = {
        "tool_calls_per_rollout": _mean([r.tool_calls for r in rollouts]),
        "tool_error_rate": sum(r.tool_errors for r in rollouts) / calls if calls else 0.0,
        "rollout/infra_errors": float(sum(r.infra_errors for r in rollouts)),
        "rollout/format_errors": float(sum(r.format_errors for r in rollouts)),
        "rollout/completion_tokens": _mean([len(r.tokens) for r in rollouts]),
        "rollout/generated_tokens": _mean([sum(r.mask) for r in rollouts]),
    }
    for reason in ("eos", "budget", "call_limit"):
        metrics[f"rollout/finish_{reason}"] = _mean([r.finish == reason for r in rollouts])
    return metrics
