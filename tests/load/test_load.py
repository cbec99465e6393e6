"""Load and soak: many calls at high concurrency, python and search mixed, with hostile
code among them.

Every call must be answered exactly once with the right result, and the server must
not grow in memory or open descriptors over the run. Marked slow; CI runs it.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import pytest

from toolserver.client import AsyncToolClient, python_request
from toolserver.v1 import toolserver_pb2 as pb

from tests.conftest import RunningServer

CALLS = 20_000
CONCURRENCY = 256
HOSTILE_SHARE = 0.05
SEARCH_SHARE = 0.10
QUERIES = ["greatest common divisor", "prime factorization of an integer", "binomial coefficient",
           "matrix determinant", "solve a polynomial equation", "least common multiple", "continued fraction"]
HOSTILE = [  # code, limits, the outcome it must get
    ("while True:\n    pass", {"timeout_ms": 300}, pb.TIMEOUT),
    ("b = bytearray(2 * 1024**3)", {"memory_mb": 64}, pb.MEMORY_LIMIT),
    ("import os\nos.kill(os.getppid(), 9)", {}, pb.CRASHED),  # its worker: lost and replaced
    ("import socket\nsocket.create_connection(('1.1.1.1', 53))", {}, pb.ERROR),  # the jail has no network
    ("print('x' * 10**6)", {"max_output_bytes": 1024}, pb.OK),
    ("raise SystemExit(3)", {}, pb.ERROR),
]


def plan(seed: int = 7) -> list[tuple[pb.ExecuteRequest, int, str]]:
    """(request, expected outcome, expected value) for every call; a search call's
    expected value is its query, whose top hit is compared with a reference answer."""
    rng = random.Random(seed)
    calls = []
    for number in range(CALLS):
        request_id = f"c{number}"
        draw = rng.random()
        if draw < SEARCH_SHARE:
            query = rng.choice(QUERIES)
            calls.append((pb.ExecuteRequest(request_id=request_id, search=pb.SearchCall(query=query)), pb.OK, query))
        elif draw < SEARCH_SHARE + HOSTILE_SHARE:
            code, limits, outcome = rng.choice(HOSTILE)
            calls.append((python_request(code, request_id=request_id, **limits), outcome, ""))
        else:
            a, b = rng.randrange(10**6), rng.randrange(10**6)
            calls.append((python_request(f"{a} * {b}", request_id=request_id), pb.OK, str(a * b)))
    return calls


def footprint(pid: int) -> tuple[int, int]:
    """(resident kB, open descriptors) of a process."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def load_server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("load"), workers=4,
                            config="[python]\nmax_queue = 100000\n")
    yield running
    running.stop()


async def run_all(target: str, calls: list[tuple[pb.ExecuteRequest, int, str]]) -> dict[str, list[pb.ExecuteResponse]]:
    """Half the callers use unary calls, half share streams; every answer is kept."""
    answers: dict[str, list[pb.ExecuteResponse]] = {}
    queue: asyncio.Queue = asyncio.Queue()
    for call in calls:
        queue.put_nowait(call[0])
    async with AsyncToolClient(target, timeout_s=300) as client:
        async def unary_caller() -> None:
            while not queue.empty():
                request = queue.get_nowait()
                response = await client.execute(request)
                answers.setdefault(response.request_id, []).append(response)

        async def stream_caller() -> None:
            while not queue.empty():
                batch = [queue.get_nowait() for _ in range(min(16, queue.qsize()))]
                for response in await client.run_many(batch):
                    answers.setdefault(response.request_id, []).append(response)

        workers = [unary_caller() for _ in range(CONCURRENCY // 2)]
        workers += [stream_caller() for _ in range(CONCURRENCY // 32)]
        await asyncio.gather(*workers)
    return answers


@pytest.mark.slow
def test_every_call_answered_once_with_the_right_result_and_no_growth(load_server):
    calls = plan()
    warm = asyncio.run(run_all(load_server.target, calls[:500]))
    assert len(warm) == 500
    before = footprint(load_server.process.pid)
    started = time.monotonic()
    answers = asyncio.run(run_all(load_server.target, calls))
    seconds = time.monotonic() - started
    after = footprint(load_server.process.pid)
    assert len(answers) == CALLS and all(len(replies) == 1 for replies in answers.values())
    with load_server.client() as client:  # ranking is deterministic: one reference answer a query
        top_hit = {query: client.execute(pb.ExecuteRequest(search=pb.SearchCall(query=query))).search.hits[0].id
                   for query in QUERIES}
    wrong = []
    for request, outcome, value in calls:
        response = answers[request.request_id][0]
        if request.WhichOneof("call") == "search":
            right = response.outcome == pb.OK and response.search.hits[0].id == top_hit[value]
        else:
            right = response.outcome == outcome and (not value or response.python.value == value)
        if not right:
            wrong.append((str(request)[:60], pb.Outcome.Name(response.outcome), response.error[:80]))
    assert not wrong, f"{len(wrong)} wrong answers, e.g. {wrong[:5]}"
    print(f"\n{CALLS} calls at {CONCURRENCY} callers in {seconds:.1f} s ({CALLS / seconds:.0f} calls/s); "
          f"server RSS {before[0]} -> {after[0]} kB, descriptors {before[1]} -> {after[1]}")
    assert after[0] - before[0] < 64 * 1024, "server memory grew by more than 64 MB"
    assert after[1] - before[1] < 16, "server descriptors grew"
