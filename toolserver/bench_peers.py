"""Other sandboxes in `toolserver bench`: the same workloads sent to the HTTP APIs of the
sandboxes RL engines call today, in the same run, so that figures compare on one machine.

A peer is named by its API: `sandbox-fusion` (SandboxFusion's `POST /run_code`, what
verl's sandbox tools send) and `code-judge` (code-judge's `POST /run`, rStar2-Agent's
tool service). This server's own HTTP fronts speak both, so `--peer` can also measure it
through the very API a peer serves. A call counts as a failure unless the peer says the
program ran and exited 0.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PeerApi:
    """One HTTP API: where a program goes, the body that carries it, and whether the
    reply says it ran and exited 0."""

    path: str
    body: Callable[[str], dict[str, Any]]
    succeeded: Callable[[Any], bool]


def sandbox_fusion_succeeded(reply: Any) -> bool:
    if not isinstance(reply, dict) or reply.get("status") != "Success":
        return False
    run = reply.get("run_result")
    return isinstance(run, dict) and run.get("return_code") == 0


def code_judge_succeeded(reply: Any) -> bool:
    return isinstance(reply, dict) and reply.get("success") is True and not reply.get("reason")


PEER_APIS: dict[str, PeerApi] = {
    "sandbox-fusion": PeerApi("/run_code", lambda code: {"code": code, "language": "python", "run_timeout": 10},
                              sandbox_fusion_succeeded),
    "code-judge": PeerApi("/run", lambda code: {"type": "python", "solution": code}, code_judge_succeeded),
}


def parse_peer(text: str) -> tuple[str, str]:
    """`NAME=URL` as (name, base url); ValueError naming what is wrong."""
    name, _, url = text.partition("=")
    if name not in PEER_APIS or not url.startswith(("http://", "https://")):
        raise ValueError(f"--peer {text!r}: expected NAME=http://HOST:PORT with NAME one of {', '.join(PEER_APIS)}")
    return name, url.rstrip("/")


async def bench_peer(name: str, url: str, programs: Iterable[str], concurrency: int
                     ) -> tuple[int, float, list[float]]:
    """C callers, each posting the next of programs after its last answer, over kept-alive
    connections; returns (failures, seconds, latencies in ms)."""
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
            async with session.post(api.path, json=api.body("pass")) as first:
                await first.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass  # unreachable: every call fails below, and says so

        async def caller() -> None:
            nonlocal failures
            for code in queue:
                started = time.perf_counter()
                try:
                    async with session.post(api.path, json=api.body(code)) as reply:
                        ok = reply.status == 200 and api.succeeded(await reply.json(content_type=None))
                except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                    ok = False
                failures += not ok
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return failures, seconds, latencies
