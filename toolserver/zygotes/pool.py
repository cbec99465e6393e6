"""One class of jailed zygotes: starting them, running a call on one, replacing them.

Each worker owns one slot for its whole life; a replacement reuses the slot only after
everything the old worker's uid ran is dead and its scratch is wiped. A call whose
worker dies or hangs is answered CRASHED, and the worker is replaced in the background.
Which call a free worker takes, and when a pool grows past its base slots or gives an
extra worker's slot back, is the scheduler's (`toolserver/zygotes/scheduler.py`); a pool
made without one has a scheduler of its own.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from sandbox.calls import CallReply, CallRequest
from sandbox.cgroups import MemoryCgroups, SlotCgroups
from sandbox.jail import Slot
from sandbox.slots import kill_slot_processes, prepare_scratch
from sandbox.worker import WorkerLost, Zygote, ZygoteSpec
from toolserver.errors import Unavailable
from toolserver.zygotes.scheduler import Scheduler

log = logging.getLogger(__name__)
RECYCLE_SPREAD = 0.25  # a worker is recycled after recycle_after calls, give or take this share


@dataclass
class PoolStats:
    size: int
    idle: int
    waiting: int
    restarts: int
    calls: int
    extra: int = 0  # workers started past the base size


class WorkerPool:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_queue: int, grace_s: float,
                 recycle_after: int, cgroups: MemoryCgroups | None = None, name: str = "workers",
                 scheduler: Scheduler | None = None, slot_cgroups: SlotCgroups | None = None,
                 longest_idle_first: bool = False) -> None:
        """slots: the base ones, each with a worker for the pool's whole life; the
        scheduler may start extra workers on its spare slots (grow). longest_idle_first:
        a call goes to the worker idle longest, not the one that ran last (for workers that
        start a process ahead of their next call, which the longest idle has had the most
        time to start)."""
        if not slots:
            raise ValueError("a worker pool needs at least one slot")
        self.spec = spec
        self.slots = slots
        self.name = name
        self.grace_s = grace_s
        self.recycle_after = recycle_after
        self.longest_idle_first = longest_idle_first
        self.restarts = 0
        self.calls = 0
        self.idle: collections.deque[Zygote] = collections.deque()
        self._idle_since: dict[Zygote, float] = {}
        self._busy: dict[Zygote, tuple[float, float]] = {}  # worker -> (call started, its limit ends)
        self._base = {slot.name for slot in slots}
        self._closed = False
        self._background: set[asyncio.Task[Any]] = set()
        self._workers: set[Zygote] = set()
        self._recycle_at: dict[Zygote, int] = {}  # calls after which each worker is replaced
        self._slot_cgroups = slot_cgroups or SlotCgroups(cgroups, spec.jail.max_processes)
        self._owns_cgroups = slot_cgroups is None
        self.scheduler = scheduler or Scheduler(max_queue=max_queue)
        self.scheduler.add(name, self)
        self.last_error = ""

    async def start(self) -> None:
        """Starts every base worker; raises WorkerLost if none could start."""
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
        self.scheduler.release(self, worker)
        return worker

    async def grow(self, slot: Slot) -> bool:
        """Starts an extra worker on a spare slot; False when it could not start."""
        try:
            await self._start_worker(slot)
            return True
        except (WorkerLost, OSError, Unavailable) as exc:
            log.warning("extra worker on %s failed to start: %s", slot.name, exc)
            return False

    def idle_extras(self, idle_before: float) -> list[Zygote]:
        """Takes out of the idle ones the extra workers idle since before idle_before."""
        found = [worker for worker in self.idle
                 if worker.slot.name not in self._base and self._idle_since.get(worker, idle_before) < idle_before]
        for worker in found:
            self.idle.remove(worker)
        return found

    async def retire(self, worker: Zygote) -> None:
        """Stops a worker for good; its slot is left with nothing running as its uid."""
        self._workers.discard(worker)
        self._recycle_at.pop(worker, None)
        self._idle_since.pop(worker, None)
        await worker.kill()
        await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, worker.slot)

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

    def replace_later(self, worker: Zygote) -> None:
        self._spawn(self._replace(worker))

    async def _replace(self, worker: Zygote) -> None:
        self._busy.pop(worker, None)
        self._workers.discard(worker)
        self._recycle_at.pop(worker, None)
        self._idle_since.pop(worker, None)
        await worker.kill()
        self.restarts += 1
        await self._restart_slot(worker.slot)

    def put_idle(self, worker: Zygote) -> None:
        self._busy.pop(worker, None)
        self.idle.append(worker)
        self._idle_since[worker] = time.monotonic()

    def take_idle(self) -> Zygote:
        """The worker that ran last (the others stay idle long enough for extras to
        shrink), or the one idle longest where the pool asks for that; busy from now on."""
        worker = self.idle.popleft() if self.longest_idle_first else self.idle.pop()
        now = time.monotonic()
        self._busy[worker] = (now, now)
        return worker

    def held(self, now: float, held_s: float) -> bool:
        """Whether no worker is idle and every call running has run for held_s or more."""
        return not self.idle and all(now - started >= held_s for started, _ in self._busy.values())

    def busy_until(self) -> list[float]:
        """When each running call's time limit ends."""
        return [ends for _, ends in self._busy.values()]

    def stats(self) -> PoolStats:
        return PoolStats(size=len(self._workers), idle=len(self.idle), waiting=self.scheduler.waiting_for(self.name),
                         restarts=self.restarts, calls=self.calls, extra=sum(
                             1 for worker in self._workers if worker.slot.name not in self._base))

    async def run(self, request: CallRequest) -> CallReply:
        """Runs one call on a worker of this pool."""
        return await self.scheduler.run(self.name, request, borrow=False)

    async def turn(self, worker: Zygote, request: CallRequest) -> CallReply:
        """Runs request on worker, which the scheduler handed to it, and frees the worker."""
        self.calls += 1
        started = time.monotonic()
        timeout_s = request.limits.timeout_ms / 1000.0
        self._busy[worker] = (started, started + timeout_s)
        self.scheduler.shares.started(worker, timeout_s)
        try:
            reply = await worker.run(request, timeout_s + self.grace_s)
        except WorkerLost as exc:
            log.warning("worker %s lost during call %s: %s", worker.slot.name, request.id, exc)
            self.replace_later(worker)
            return crashed_reply(request.id, f"sandbox worker was lost: {exc}", time.monotonic() - started)
        finally:
            self.scheduler.shares.ended(worker)
        if worker.calls >= self._recycle_at.get(worker, self.recycle_after) or self._closed:
            self.replace_later(worker)
        else:
            self.scheduler.release(self, worker)
        return reply

    async def close(self) -> None:
        self._closed = True
        await self.scheduler.close()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*(w.kill() for w in list(self._workers)), return_exceptions=True)
        self._workers.clear()
        if self._owns_cgroups:
            self._slot_cgroups.remove_all()


def crashed_reply(request_id: str, error: str, elapsed_s: float) -> CallReply:
    return CallReply(request_id, "CRASHED", error=error, exit_code=-1, elapsed_us=int(elapsed_s * 1e6))

