"""The scheduler against real jailed zygotes: who borrows, when pools grow and shrink, and
which calls are refused for want of time."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.calls import CallLimits, CallRequest
from sandbox.jail import JailPolicy
from sandbox.worker import ZygoteSpec
from toolserver.cpus import CpuMeter, available_cpus
from toolserver.deadline import answer_within
from toolserver.errors import Busy
from toolserver.python.routing import RUNS_ON, SLIM, WARM
from toolserver.zygotes.cpu_shares import nice_for
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.scheduler import START_MARGIN_S, Scheduler

SPEC = ZygoteSpec(interpreter=sys.executable, preload=(), jail=JailPolicy(
    hidden_paths=(str(Path(__file__).resolve().parents[2]),)))


def request(code: str, request_id: str = "r", timeout_ms: int = 5000) -> CallRequest:
    return CallRequest(request_id, code, CallLimits(timeout_ms=timeout_ms, memory_mb=256, max_output_bytes=4096,
                                                    max_processes=16, max_file_mb=1, max_open_files=64))


def sleeping(seconds: float, request_id: str) -> CallRequest:
    return request(f"import time\ntime.sleep({seconds})\n{request_id!r}", request_id)


@pytest.fixture
async def started():
    """started(scheduler, {class: slots}) -> pools, each started on its slots; all closed after."""
    pools: list[WorkerPool] = []

    async def start(scheduler: Scheduler, classes: dict[str, list]) -> dict[str, WorkerPool]:
        made = {name: WorkerPool(SPEC, slots, max_queue=64, grace_s=2.0, recycle_after=1000, name=name,
                                 scheduler=scheduler) for name, slots in classes.items()}
        pools.extend(made.values())
        await asyncio.gather(*(pool.start() for pool in made.values()))
        scheduler.start()
        return made

    yield start
    for pool in pools:
        await pool.close()


@pytest.fixture
def full_cpu():
    """Every core busy at full weight while the test runs (the CPU has no room)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(available_cpus())]
    yield
    for burner in burners:
        burner.kill()
        burner.wait()


async def test_short_calls_on_a_full_cpu_keep_to_their_class(started, sandbox_slots, full_cpu):
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON, held_s=5.0)
    pools = await started(scheduler, {SLIM: sandbox_slots(1), WARM: sandbox_slots(1)})
    replies = await asyncio.gather(*(scheduler.run(SLIM, request(f"{i}", str(i))) for i in range(30)))
    assert [reply.value for reply in replies] == [str(i) for i in range(30)]
    assert pools[SLIM].calls == 30 and pools[WARM].calls == 0 and scheduler.borrowed == 0


class IdleCpu(CpuMeter):
    """A machine whose CPU has room, whatever else runs beside the test."""

    def busy_share(self) -> float:
        return 0.0


async def test_calls_that_wait_on_an_idle_cpu_take_every_class_and_grow(started, sandbox_slots):
    """Sleeping calls use no CPU: the ones behind them go to the other class's idle
    worker and to extra workers at once, without waiting for the sleepers to be held."""
    scheduler = Scheduler(sandbox_slots(2), max_queue=64, runs_on=RUNS_ON, held_s=30.0, cpu=IdleCpu())
    pools = await started(scheduler, {SLIM: sandbox_slots(1), WARM: sandbox_slots(1)})
    began = time.monotonic()
    replies = await asyncio.gather(*(scheduler.run(SLIM, sleeping(3, f"s{i}")) for i in range(4)))
    assert all(reply.outcome == "OK" for reply in replies)
    assert pools[WARM].calls >= 1 and scheduler.grown == 2
    # grown before any sleeper was held (held_s), however long the starts took on a busy machine
    assert time.monotonic() - began < 30.0


async def test_a_call_behind_held_workers_borrows_an_idle_one_of_another_class(started, sandbox_slots):
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON, held_s=0.3)
    pools = await started(scheduler, {SLIM: sandbox_slots(1), WARM: sandbox_slots(1)})
    began = time.monotonic()
    slow = asyncio.ensure_future(scheduler.run(SLIM, sleeping(3, "slow")))
    await asyncio.sleep(0.1)
    quick = await scheduler.run(SLIM, request("'quick'", "quick"))
    assert quick.value == "'quick'" and time.monotonic() - began < 2.5
    assert 0.05 < quick.queued_us / 1e6 < 2.0
    assert pools[WARM].calls == 1 and scheduler.borrowed == 1
    assert (await slow).outcome == "OK"


async def test_a_warm_call_never_runs_on_a_slim_worker(started, sandbox_slots):
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON, held_s=0.2)
    pools = await started(scheduler, {SLIM: sandbox_slots(1), WARM: sandbox_slots(1)})
    slow = asyncio.ensure_future(scheduler.run(WARM, sleeping(1.5, "slow")))
    await asyncio.sleep(0.1)
    assert (await scheduler.run(WARM, request("2", "after"))).queued_us > 1_000_000
    assert pools[SLIM].calls == 0 and scheduler.borrowed == 0
    await slow


async def test_pools_grow_onto_spare_slots_while_calls_wait_and_shrink_when_idle(started, sandbox_slots):
    base, spare = sandbox_slots(1), sandbox_slots(2)
    scheduler = Scheduler(spare, max_queue=64, runs_on=RUNS_ON, held_s=0.2, idle_shrink_s=1.0)
    pools = await started(scheduler, {WARM: base})
    began = time.monotonic()
    replies = await asyncio.gather(*(scheduler.run(WARM, sleeping(2, f"s{i}")) for i in range(3)))
    assert all(reply.outcome == "OK" for reply in replies)
    assert time.monotonic() - began < 5.5  # three in a row on one worker: 6 s
    assert scheduler.grown == 2 and pools[WARM].stats().extra == 2 and not scheduler.spare
    for _ in range(60):
        await asyncio.sleep(0.1)
        if scheduler.shrunk == 2 and len(scheduler.spare) == 2:
            break
    assert scheduler.shrunk == 2 and pools[WARM].stats().extra == 0 and len(scheduler.spare) == 2
    assert (await scheduler.run(WARM, request("3"))).value == "3"  # the base worker stays


async def test_a_call_that_cannot_start_in_time_is_refused_with_a_retry_time(started, sandbox_slots):
    scheduler = Scheduler(max_queue=64, tool="cpp", runs_on=RUNS_ON, held_s=0.2)
    await started(scheduler, {WARM: sandbox_slots(1)})
    slow = asyncio.ensure_future(scheduler.run(WARM, sleeping(3, "slow")))
    await asyncio.sleep(0.1)
    began = time.monotonic()
    with answer_within(1.0 + START_MARGIN_S + 0.5), pytest.raises(Busy) as refused:
        await scheduler.run(WARM, request("1", "late", timeout_ms=1000))
    assert time.monotonic() - began < 1.5 and 1 <= refused.value.retry_after_s <= 6
    assert "no cpp worker could start the call in time" in str(refused.value)  # the tool's own name
    assert (await slow).outcome == "OK"
    with answer_within(10.0):
        assert (await scheduler.run(WARM, request("4", "in time", timeout_ms=1000))).value == "4"


def autogroup_nice(worker) -> int:
    return int(Path(f"/proc/{worker._process.pid}/autogroup").read_text().split()[-1])


async def test_calls_running_long_share_one_calls_cpu_weight(started, sandbox_slots):
    """Their jails' autogroups are niced while they run long, and reset for the next call."""
    if not Path("/proc/self/autogroup").exists():
        pytest.skip("this kernel has no autogroups")
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON)
    pools = await started(scheduler, {WARM: sandbox_slots(3)})
    loops = asyncio.gather(*(scheduler.run(WARM, request("while True: pass", f"l{i}", timeout_ms=2500))
                             for i in range(3)))
    await asyncio.sleep(1.2)
    workers = list(pools[WARM]._busy)
    assert len(workers) == 3 and [autogroup_nice(worker) for worker in workers] == [nice_for(3)] * 3
    assert all(reply.outcome == "TIMEOUT" for reply in await loops)
    assert [autogroup_nice(worker) for worker in workers] == [0, 0, 0]


async def test_a_freed_worker_goes_to_the_longest_waiting_call_that_is_still_there(started, sandbox_slots):
    """Calls are served in the order they came; one whose caller went away is skipped, and
    the worker goes on to the next (the pool keeps its one worker)."""
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON, held_s=30.0)
    pools = await started(scheduler, {WARM: sandbox_slots(1)})
    slow = asyncio.ensure_future(scheduler.run(WARM, sleeping(1, "slow")))
    await asyncio.sleep(0.2)
    gone = asyncio.ensure_future(scheduler.run(WARM, request("'gone'", "gone")))
    await asyncio.sleep(0.05)
    first, second = (asyncio.ensure_future(scheduler.run(WARM, request(f"{i}", str(i)))) for i in (1, 2))
    await asyncio.sleep(0.05)
    gone.cancel()
    done_order = []
    for call in asyncio.as_completed([first, second]):
        done_order.append((await call).value)
    assert done_order == ["1", "2"] and (await slow).outcome == "OK" and gone.cancelled()
    assert pools[WARM].stats().size == 1 and scheduler.waiting == 0
    assert (await scheduler.run(WARM, request("3"))).value == "3"


async def test_a_running_call_whose_caller_goes_away_is_killed_and_frees_its_worker(started, sandbox_slots):
    scheduler = Scheduler(max_queue=64, runs_on=RUNS_ON, held_s=30.0)
    pools = await started(scheduler, {SLIM: sandbox_slots(1)})
    gone = asyncio.ensure_future(scheduler.run(SLIM, request("import time\ntime.sleep(50)", "gone", timeout_ms=60_000)))
    while not pools[SLIM].busy_until():
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # its program is sleeping
    gone.cancel()
    began = time.monotonic()
    reply = await scheduler.run(SLIM, request("2 + 2", "next"))
    assert reply.value == "4" and time.monotonic() - began < 20  # not the 50 s the sleep had left
    assert gone.cancelled() and pools[SLIM].restarts == 0  # the same worker, answered at once
