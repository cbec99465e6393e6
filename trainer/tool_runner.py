"""Runs the tool calls of many rollouts through the server, batched, and keeps each call's Outcome.

All calls handed to one `as_completed` (or `run`) go out on one `client.stream`, and
each result is yielded as soon as the server answers it. Infrastructure failures (the
stream failing with an error the client calls `retryable`, a call answered CRASHED) are
retried once, then reported as `infra_error` on the call: they are never the model's
fault. A failure of the code itself (ERROR, TIMEOUT, ...) is the response's outcome and
is not retried. Nothing here runs code locally.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import AsyncIterator, Sequence

from toolclient.client import AsyncToolClient, ToolServerError, python_request
from toolcontract.v1 import toolserver_pb2 as pb

RETRYABLE_OUTCOMES = frozenset({pb.CRASHED})


@dataclass(frozen=True)
class PythonJob:
    code: str
    stdin: str = ""


@dataclass(frozen=True)
class CallResult:
    """One call's answer. `response` is None when the server never answered it."""

    response: pb.ExecuteResponse | None
    infra_error: str = ""   # why the infrastructure failed it; "" when the tool answered
    attempts: int = 1

    @property
    def outcome(self) -> str:
        if self.response is None:
            return "UNAVAILABLE"
        name: str = pb.Outcome.Name(self.response.outcome)
        return name

    @property
    def ok(self) -> bool:
        return not self.infra_error and self.response is not None and self.response.outcome == pb.OK

    @property
    def tool_error(self) -> bool:
        """The model's code failed (the tool worked)."""
        return not self.infra_error and not self.ok


@dataclass
class RunnerStats:
    calls: int = 0
    retries: int = 0
    infra_errors: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


class ToolRunner:
    def __init__(self, client: AsyncToolClient, *, timeout_ms: int = 5000, memory_mb: int = 512,
                 max_output_bytes: int = 16_384, rpc_timeout_s: float = 120.0, retries: int = 1) -> None:
        self.client = client
        self.timeout_ms = timeout_ms
        self.memory_mb = memory_mb
        self.max_output_bytes = max_output_bytes
        self.rpc_timeout_s = rpc_timeout_s
        self.retries = retries
        self.stats = RunnerStats()

    def _request(self, job: PythonJob) -> pb.ExecuteRequest:
        return python_request(job.code, stdin=job.stdin, timeout_ms=self.timeout_ms, memory_mb=self.memory_mb,
                              max_output_bytes=self.max_output_bytes, request_id=uuid.uuid4().hex)

    async def as_completed(self, jobs: Sequence[PythonJob]) -> AsyncIterator[tuple[int, CallResult]]:
        """(index, result) of every job as soon as the server answers it: all pending
        jobs share one ExecuteStream per attempt, answered in completion order."""
        pending = list(range(len(jobs)))
        for attempt in range(1, self.retries + 2):
            if not pending:
                return
            if attempt > 1:
                self.stats.retries += len(pending)
            last = attempt == self.retries + 1
            requests = {i: self._request(jobs[i]) for i in pending}
            unanswered = {req.request_id: i for i, req in requests.items()}
            retry: list[int] = []
            failure = ""
            try:
                async for response in self.client.stream(requests.values(), timeout_s=self.rpc_timeout_s):
                    i = unanswered.pop(response.request_id, None)
                    if i is None:
                        continue
                    if response.outcome in RETRYABLE_OUTCOMES and not last:
                        retry.append(i)
                        continue
                    infra = (f"{pb.Outcome.Name(response.outcome)}: {response.error}"
                             if response.outcome in RETRYABLE_OUTCOMES else "")
                    yield i, self._count(CallResult(response, infra, attempt))
            except ToolServerError as error:
                failure = str(error)
                if not error.retryable:
                    last = True
            if unanswered and not failure:
                failure = f"the stream ended without answers for {len(unanswered)} calls"
            if last:
                for i in unanswered.values():
                    yield i, self._count(CallResult(None, failure, attempt))
            else:
                retry.extend(unanswered.values())
            pending = sorted(retry)

    async def run(self, jobs: Sequence[PythonJob]) -> list[CallResult]:
        """Every job's result, in job order."""
        results: dict[int, CallResult] = {}
        async for i, result in self.as_completed(jobs):
            results[i] = result
        return [results[i] for i in range(len(jobs))]

    def _count(self, result: CallResult) -> CallResult:
        self.stats.calls += 1
        self.stats.infra_errors += bool(result.infra_error)
        self.stats.outcomes[result.outcome] = self.stats.outcomes.get(result.outcome, 0) + 1
        return result
