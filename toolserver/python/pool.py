"""Pool policy for jailed zygotes: how many, who gets one, when one is replaced.

Each worker owns one slot for its whole life; a replacement reuses the slot only after
everything the old worker's uid ran is dead and its scratch is wiped. A call whose
worker dies or hangs is answered CRASHED, and the worker is replaced in the background.
Calls wait in a bounded queue; past it they are refused at once with `Exhausted`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from sandbox.calls import CallRequest
from sandbox.cgroups import MemoryCgroups, SlotCgroups
from sandbox.jail import Slot
from sandbox.slots import kill_slot_processes, prepare_scratch
from sandbox.worker import WorkerLost, Zygote, ZygoteSpec
from toolserver.errors import Exhausted, Unavailable

log = logging.getLogger(__name__)
RECYCLE_SPREAD = 0.25  # a worker is recycled after recycle_after calls, give or take this share


@dataclass
class PoolStats:
    size: int
    idle: int
    waiting: int
    restarts: int
    calls: int


class IdleWorkers:
    """Idle workers, each handed to the call that has waited longest. (asyncio.Queue lets
    a call that arrives as a worker frees take it ahead of the one it was meant for,
    which goes back to the end of the line: under load the slowest calls waited twice.)"""

    def __init__(self) -> None:
        self._idle: collections.deque[Zygote] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[Zygote]] = collections.deque()

    def qsize(self) -> int:
        return len(self._idle)

    def empty(self) -> bool:
        return not self._idle

    def put(self, worker: Zygote) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(worker)
                return
        self._idle.append(worker)

    async def get(self) -> Zygote:
        if self._idle:  # then nobody waits: put hands a worker to a waiter first
            return self._idle.popleft()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.put(waiter.result())  # handed over just as the caller went away: pass it on
            raise


class WorkerPool:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_queue: int, grace_s: float,
                 recycle_after: int, cgroups: MemoryCgroups | None = None) -> None:
        if not slots:
            raise ValueError("a worker pool needs at least one slot")
        self.spec = spec
        self.slots = slots
        self.max_queue = max_queue
        self.grace_s = grace_s
        self.recycle_after = recycle_after
        self.restarts = 0
        self.calls = 0
        self._idle = IdleWorkers()
        self._waiting = 0
        self._closed = False
        self._background: set[asyncio.Task[Any]] = set()
        self._workers: set[Zygote] = set()
        self._recycle_at: dict[Zygote, int] = {}  # calls after which each worker is replaced
        self._slot_cgroups = SlotCgroups(cgroups)
        self.last_error = ""

    async def start(self) -> None:
        """Starts every worker; raises WorkerLost if none could start."""
        results = await asyncio.gather(*(self._start_worker(slot) for slot in self.slots), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for slot, result in zip(self.slots, results):
            if isinstance(result, BaseException):
                self._spawn(self._restart_slot(slot))
        if len(failures) == len(self.slots):
            raise WorkerLost(f"no worker could start: {failures[0]}")

    async def _start_worker(self, slot: Slot) -> Zygote:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, kill_slot_processes, slot)  # what a crashed server left
        await loop.run_in_executor(None, prepare_scratch, slot)
        worker = Zygote(self.spec, slot, self._slot_cgroups.of(slot.name))
        try:
            await worker.start()
        except WorkerLost as exc:
            self.last_error = str(exc)
            raise
        if self._closed:
            await worker.kill()
            raise Unavailable("pool closed")
        self._workers.add(worker)
        self._recycle_at[worker] = max(1, round(self.recycle_after * random.uniform(1 - RECYCLE_SPREAD, 1 + RECYCLE_SPREAD)))
        self._idle.put(worker)
        return worker

    async def _restart_slot(self, slot: Slot) -> None:
        delay = 0.1
        while not self._closed:
            try:
                await self._start_worker(slot)
                return
            except (WorkerLost, OSError) as exc:
                log.error("worker on %s failed to start, retrying in %.1f s: %s", slot.name, delay, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
            except Unavailable:
                return

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _replace(self, worker: Zygote) -> None:
        self._workers.discard(worker)
        self._recycle_at.pop(worker, None)
        await worker.kill()
        self.restarts += 1
        await self._restart_slot(worker.slot)

    def stats(self) -> PoolStats:
        return PoolStats(size=len(self._workers), idle=self._idle.qsize(), waiting=self._waiting,
                         restarts=self.restarts, calls=self.calls)

    async def run(self, request: CallRequest) -> dict[str, Any]:
        """Runs one call on the next free worker and returns the zygote's reply; refuses
        at once (Exhausted) when max_queue calls already wait, from streams or not."""
        if self._closed:
            raise Unavailable("server is shutting down")
        if self._idle.empty() and self._waiting >= self.max_queue:
            raise Exhausted(f"python queue is full ({self.max_queue} calls waiting)")
        self._waiting += 1
        try:
            worker = await self._idle.get()
            while not worker.alive:  # died while idle: replace it, take the next
                self._spawn(self._replace(worker))
                worker = await self._idle.get()
        finally:
            self._waiting -= 1
        # The worker's turn runs to its end even if the caller goes away, so the
        # worker is never left between a request and its reply.
        turn = asyncio.get_running_loop().create_task(self._turn(worker, request))
        return await asyncio.shield(turn)

    async def _turn(self, worker: Zygote, request: CallRequest) -> dict[str, Any]:
        self.calls += 1
        started = time.monotonic()
        try:
            reply = await worker.run(request, request.limits.timeout_ms / 1000.0 + self.grace_s)
        except WorkerLost as exc:
            log.warning("worker %s lost during call %s: %s", worker.slot.name, request.id, exc)
            self._spawn(self._replace(worker))
            return crashed_reply(request.id, f"sandbox worker was lost: {exc}", time.monotonic() - started)
        if worker.calls >= self._recycle_at.get(worker, self.recycle_after) or self._closed:
            self._spawn(self._replace(worker))
        else:
            self._idle.put(worker)
        return reply

    async def close(self) -> None:
        self._closed = True
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*(w.kill() for w in list(self._workers)), return_exceptions=True)
        self._workers.clear()
        self._slot_cgroups.remove_all()


def crashed_reply(request_id: str, error: str, elapsed_s: float) -> dict[str, Any]:
    return {"id": request_id, "outcome": "CRASHED", "stdout": "", "stderr": "", "value": "",
            "error": error, "truncated": False, "exit_code": -1, "elapsed_us": int(elapsed_s * 1e6)}
