"""Other sandboxes in `toolserver bench`: the same workloads sent to the HTTP APIs of the
sandboxes RL engines call today, in the same run, so that figures compare on one machine.

A peer is named by its API: `sandbox-fusion` (SandboxFusion's `POST /run_code`, what
verl's sandbox tools send) and `code-judge` (code-judge's `POST /run`, rStar2-Agent's
tool service). This server's own HTTP fronts speak both, so `--peer` can also measure it
through the very API a peer serves. A call counts as a failure unless the peer says the
program ran and exited 0, or, for a program that loops or sleeps to its limit, that it
timed out near that limit (SandboxFusion's API carries each call's `run_timeout`;
code-judge's has no per-call limit, so mixed workloads are not sent to it).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from toolclient.bench_workloads import NOT_RUN, Program, Ran

CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PeerApi:
    """One HTTP API: where a program goes, the body that carries it, what the reply says
    of its run, and whether a call can carry its own time limit."""

    path: str
    body: Callable[[Program], dict[str, Any]]
    ran: Callable[[Any], Ran]
    limit_per_call: bool


def sandbox_fusion_ran(reply: Any) -> Ran:
    run = reply.get("run_result") if isinstance(reply, dict) else None
    if not isinstance(run, dict):
        return NOT_RUN
    return Ran(reply.get("status") == "Success" and run.get("return_code") == 0,
               run.get("status") == "TimeLimitExceeded", float(run.get("execution_time") or 0.0))


def code_judge_ran(reply: Any) -> Ran:
    if not isinstance(reply, dict):
        return NOT_RUN
    return Ran(reply.get("success") is True and not reply.get("reason"), reply.get("reason") == "worker_timeout",
               float(reply.get("cost") or 0.0))


PEER_APIS: dict[str, PeerApi] = {
    "sandbox-fusion": PeerApi("/run_code", lambda program: {"code": program.code, "language": "python",
                                                            "run_timeout": program.timeout_ms / 1000},
                              sandbox_fusion_ran, limit_per_call=True),
    "code-judge": PeerApi("/run", lambda program: {"type": "python", "solution": program.code}, code_judge_ran,
                          limit_per_call=False),
}


def parse_peer(text: str) -> tuple[str, str]:
    """`NAME=URL` as (name, base url); ValueError naming what is wrong."""
    name, _, url = text.partition("=")
    if name not in PEER_APIS or not url.startswith(("http://", "https://")):
        raise ValueError(f"--peer {text!r}: expected NAME=http://HOST:PORT with NAME one of {', '.join(PEER_APIS)}")
    return name, url.rstrip("/")


async def bench_peer(name: str, url: str, programs: Iterable[Program], concurrency: int
                     ) -> tuple[int, float, list[float]]:
    """C callers, each posting the next of programs after its last answer, over kept-alive
    connections; returns (failures, seconds, latencies in ms of the short programs)."""
    try:
        import aiohttp
    except ImportError as exc:
        raise ValueError("--peer needs aiohttp: pip install 'toolserver[http]'") from exc
    api = PEER_APIS[name]
    latencies: list[float] = []
    failures = 0
    queue = iter(programs)
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:
        try:  # connect first: setting a connection up is not a call's cost
            async with session.post(api.path, json=api.body(Program("pass"))) as first:
                await first.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass  # unreachable: every call fails below, and says so

        async def caller() -> None:
            nonlocal failures
            for program in queue:
                started = time.perf_counter()
                try:
                    async with session.post(api.path, json=api.body(program)) as reply:
                        ran = api.ran(await reply.json(content_type=None)) if reply.status == 200 else NOT_RUN
                except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                    ran = NOT_RUN
                failures += program.wrong(ran, (time.perf_counter() - started) * 1000, latencies)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return failures, seconds, latencies
