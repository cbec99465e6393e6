"""WorkerPool policy against real jailed zygotes (slot users 20-21, unused by other tests)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from sandbox.calls import CallLimits, CallRequest
from sandbox.jail import JailPolicy
from sandbox.worker import ZygoteSpec
from toolserver.errors import Exhausted
from toolserver.zygotes.pool import WorkerPool


def request(code: str, request_id: str = "r", timeout_ms: int = 5000) -> CallRequest:
    return CallRequest(request_id, code, CallLimits(timeout_ms=timeout_ms, memory_mb=256, max_output_bytes=4096,
                                                    max_processes=16, max_file_mb=1, max_open_files=64))


async def started_pool(slots, recycle_after: int, longest_idle_first: bool = False) -> WorkerPool:
    spec = ZygoteSpec(interpreter=sys.executable, preload=(), jail=JailPolicy(
        hidden_paths=(str(Path(__file__).resolve().parents[2]),)))
    worker_pool = WorkerPool(spec, slots, max_queue=1, grace_s=2.0, recycle_after=recycle_after,
                             longest_idle_first=longest_idle_first)
    await worker_pool.start()
    return worker_pool


@pytest.fixture
async def pool(sandbox_slots):
    worker_pool = await started_pool(sandbox_slots(1), recycle_after=100)
    yield worker_pool
    await worker_pool.close()


async def test_queue_bound_refuses_at_once(pool):
    slow = asyncio.ensure_future(pool.run(request("import time\ntime.sleep(1.5)", "slow")))
    await asyncio.sleep(0.2)
    queued = asyncio.ensure_future(pool.run(request("1", "queued")))
    await asyncio.sleep(0.1)
    with pytest.raises(Exhausted):
        await pool.run(request("2", "refused"))
    assert (await slow).outcome == "OK"
    assert (await queued).value == "1"
    assert (await pool.run(request("3", "after"))).value == "3"


async def test_dead_worker_answers_crashed_and_is_replaced(pool):
    reply = await pool.run(request("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", "kill"))
    assert reply.outcome == "CRASHED" and reply.id == "kill"
    assert (await pool.run(request("40 + 2", "after"))).value == "42"
    assert pool.stats().restarts >= 1


async def test_a_call_goes_to_the_worker_that_ran_last_or_the_one_idle_longest(sandbox_slots):
    """The worker that ran last, by default; the one idle longest where the pool asks for it
    (its workers start the next run's process ahead: the longest idle has had most time)."""
    slots = sandbox_slots(2)
    for longest_idle_first in (False, True):
        pool = await started_pool(slots, recycle_after=100, longest_idle_first=longest_idle_first)
        try:
            uids = [(await pool.run(request("import os\nos.getuid()", str(number)))).value for number in range(4)]
        finally:
            await pool.close()
        if longest_idle_first:
            assert uids[0] != uids[1] and uids[:2] == uids[2:], uids
        else:
            assert len(set(uids)) == 1, uids


async def test_workers_are_recycled(sandbox_slots):
    """After recycle_after calls, give or take a quarter (3 here: after 2 to 4 calls)."""
    pool = await started_pool(sandbox_slots(1), recycle_after=3)
    try:
        assert all(2 <= at <= 4 for at in pool._recycle_at.values())
        for i in range(10):
            assert (await pool.run(request(f"{i}", str(i)))).value == str(i)
        assert pool.stats().restarts >= 2
    finally:
        await pool.close()


async def test_cancelled_caller_does_not_lose_the_worker(pool):
    call = asyncio.ensure_future(pool.run(request("import time\ntime.sleep(0.5)\n1", "gone")))
    await asyncio.sleep(0.1)
    call.cancel()
    assert (await pool.run(request("7", "next"))).value == "7"
    assert pool.stats().size == 1
