"""Which worker runs which stateless call, and how many workers there are.

Calls wait in one line across the worker classes (slim, warm, scientific), served in the
order they came. A call takes an idle worker of the first class its route can run on.
When none is, and either every worker of that class is held by calls that have run for
`held_s` or more (loops, sleeps, calls blocked on input or on a child) or the CPU has
room (calls that wait use none), it takes an idle worker of another class that runs it
too (a slim call: warm, then scientific; a warm call: scientific; a scientific call:
warm), and when none is idle that class's pool grows onto a spare slot, `max_starts`
starts at a time. A burst of short calls that fills the CPU borrows and grows nothing:
its class's workers are busy, not held, and they run it cheapest. A worker started past
its pool's base size goes back to the spare slots once idle for `idle_shrink_s`.

A call whose client stops waiting at a known time (`toolserver.deadline`) must start
early enough to run its whole time limit before then; one no worker can start in time is
refused (Busy, with an estimate of when to retry) instead of being run too late.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from sandbox.calls import CallReply, CallRequest
from sandbox.jail import Slot
from sandbox.worker import Zygote
from toolserver.cpus import CpuMeter
from toolserver.deadline import ANSWER_BY
from toolserver.errors import Busy, Exhausted, Unavailable
from toolserver.zygotes.cpu_shares import CpuShares

HELD_S = 0.5            # a call running this long holds its worker: others may borrow and grow
TICK_S = 0.1            # how often waiting calls are looked at again (borrowing, growth, start-by times)
MAX_STARTS = 8          # extra workers starting at once
CPU_ROOM = 0.75         # below this share of the CPU busy (at full weight), the CPU has room
IDLE_SHRINK_S = 30.0    # an extra worker idle this long is stopped and its slot freed
FAILED_START_PAUSE_S = 5.0  # after an extra worker failed to start, no other starts for this long
START_MARGIN_S = 1.0    # time between a call's limit and its client's deadline: the kill and the reply
class WorkerPool(Protocol):
    """What the scheduler asks of a class's pool (toolserver/zygotes/pool.py)."""

    idle: collections.deque[Zygote]

    def take_idle(self) -> Zygote: ...
    def put_idle(self, worker: Zygote) -> None: ...
    def held(self, now: float, held_s: float) -> bool: ...
    def busy_until(self) -> list[float]: ...
    def replace_later(self, worker: Zygote) -> None: ...
    async def turn(self, worker: Zygote, request: CallRequest) -> CallReply: ...
    async def grow(self, slot: Slot) -> bool: ...
    def idle_extras(self, idle_before: float) -> list[Zygote]: ...
    async def retire(self, worker: Zygote) -> None: ...


@dataclass(eq=False)
class Waiter:
    classes: tuple[str, ...]  # the worker classes that may run it, first the one it prefers
    start_by: float | None
    seq: int
    future: asyncio.Future[tuple[WorkerPool, Zygote]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())


class Scheduler:
    def __init__(self, spare: list[Slot] | None = None, *, max_queue: int, tool: str = "",
                 runs_on: Mapping[str, tuple[str, ...]] | None = None, held_s: float = HELD_S,
                 max_starts: int = MAX_STARTS, idle_shrink_s: float = IDLE_SHRINK_S,
                 cpu: CpuMeter | None = None) -> None:
        """tool: whose calls these are (its name is in the queue-full and busy messages); runs_on:
        by a call's class, the classes whose workers may run it, its own first (absent:
        its own only)."""
        self.pools: dict[str, WorkerPool] = {}
        self.tool = tool
        self.runs_on = dict(runs_on or {})
        self.shares = CpuShares()  # the CPU weight of the calls running long, across the classes
        self.spare = list(spare or [])
        self.max_queue = max_queue
        self.held_s = held_s
        self.max_starts = max_starts
        self.idle_shrink_s = idle_shrink_s
        self.waiting = 0
        self.borrowed = 0       # calls run by a worker of another class than their route's first
        self.grown = 0          # extra workers started
        self.shrunk = 0         # extra workers stopped when idle
        self.closed = False
        self._lines: dict[tuple[str, ...], collections.deque[Waiter]] = collections.defaultdict(collections.deque)
        self._seq = itertools.count()
        self._starting: collections.Counter[str] = collections.Counter()
        self._no_starts_until = 0.0
        self._ticker: asyncio.Task[None] | None = None
        self._cpu = cpu or CpuMeter()  # whether the CPU has room: the machine's /proc/stat
        self._cpu_room = False  # as of the last tick
        self._background: set[asyncio.Task[Any]] = set()

    def add(self, name: str, pool: WorkerPool) -> None:
        self.pools[name] = pool

    def classes(self, route: str, borrow: bool = True) -> tuple[str, ...]:
        """The classes that run a call of route, first the one it prefers (warm when its
        own class is off); without borrow, only its own."""
        names = [name for name in self.runs_on.get(route, (route,)) if name in self.pools]
        names = names or list(self.pools)[:1]
        return tuple(names if borrow else names[:1])

    def start(self) -> None:
        self.spawn(self._shrink_idle_extras())

    async def run(self, route: str, request: CallRequest, borrow: bool = True) -> CallReply:
        """Runs one call on the first worker free for it and returns the zygote's reply,
        with the time it waited (`queued_us`); without borrow, only on its route's class."""
        if self.closed:
            raise Unavailable("server is shutting down")
        arrived = time.monotonic()
        answer_by = ANSWER_BY.get()
        start_by = None if answer_by is None else answer_by - request.limits.timeout_ms / 1000.0 - START_MARGIN_S
        classes = self.classes(route, borrow)
        while True:
            pool, worker = await self.acquire(classes, start_by)
            if worker.alive:
                break
            pool.replace_later(worker)  # died while idle
        queued_s = time.monotonic() - arrived
        # The worker's turn runs to its end even if the caller goes away, so the worker is
        # never left between a request and its reply; the program is killed, so that end
        # comes at once.
        turn = asyncio.get_running_loop().create_task(pool.turn(worker, request))
        try:
            reply = await asyncio.shield(turn)
        except asyncio.CancelledError:
            if not turn.done():  # else the worker may be running the next caller's call already
                worker.cancel_call()
            raise
        reply.queued_us = int(queued_s * 1e6)
        return reply

    async def acquire(self, classes: tuple[str, ...], start_by: float | None = None) -> tuple[WorkerPool, Zygote]:
        if not self.waiting and (found := self._idle_for(classes)) is not None:
            return found
        if self.waiting >= self.max_queue:
            raise Exhausted(" ".join(filter(None, (self.tool, f"queue is full ({self.max_queue} calls waiting)"))))
        if start_by is not None and start_by <= time.monotonic():
            raise self._busy()
        waiter = Waiter(classes, start_by, next(self._seq))
        self._lines[classes].append(waiter)
        self.waiting += 1
        try:
            self._match()
            if not waiter.future.done() and self._ticker is None:
                self._ticker = self.spawn(self._tick())
            return await waiter.future
        except asyncio.CancelledError:
            if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
                self.release(*waiter.future.result())  # handed over just as the caller went away
            raise
        finally:
            self.waiting -= 1

    def release(self, pool: WorkerPool, worker: Zygote) -> None:
        """A worker free for the next call: to the call that waited longest and may use it."""
        pool.put_idle(worker)
        self._match()

    def _idle_for(self, classes: tuple[str, ...]) -> tuple[WorkerPool, Zygote] | None:
        first, *others = classes
        pool = self.pools[first]
        if pool.idle:
            return pool, pool.take_idle()
        if not self._may_overflow(pool, time.monotonic()):
            return None
        for name in others:
            if self.pools[name].idle:
                self.borrowed += 1
                return self.pools[name], self.pools[name].take_idle()
        return None

    def _heads(self) -> list[Waiter]:
        """The longest-waiting live call of each line, oldest first."""
        heads = []
        for line in self._lines.values():
            while line and line[0].future.done():
                line.popleft()
            if line:
                heads.append(line[0])
        return sorted(heads, key=lambda waiter: waiter.seq)

    def _match(self) -> None:
        """Hands idle workers to waiting calls, in the order the calls came."""
        progress = True
        while progress:
            progress = False
            for head in self._heads():
                found = self._idle_for(head.classes)
                if found is not None:
                    self._lines[head.classes].popleft()
                    head.future.set_result(found)
                    progress = True
                    break

    def _may_overflow(self, pool: WorkerPool, now: float) -> bool:
        """Whether calls that wait for pool's workers may take other classes' or new ones."""
        return self._cpu_room or pool.held(now, self.held_s)

    async def _tick(self) -> None:
        self._cpu.busy_share()
        try:
            while self.waiting and not self.closed:
                await asyncio.sleep(TICK_S)
                self._cpu_room = self._cpu.busy_share() < CPU_ROOM
                self._expire(time.monotonic())
                self._match()
                self._grow()
        finally:
            self._ticker = None
            self._cpu_room = False

    def _expire(self, now: float) -> None:
        """Refuses the calls that no longer have time to run before their client gives up."""
        for line in self._lines.values():
            for waiter in line:
                if waiter.start_by is not None and waiter.start_by <= now and not waiter.future.done():
                    waiter.future.set_exception(self._busy())

    def _busy(self) -> Busy:
        now = time.monotonic()
        ends = [end for pool in self.pools.values() for end in pool.busy_until()]
        retry_after_s = max(1, math.ceil(min(ends, default=now + 1.0) - now))
        worker = " ".join(filter(None, (self.tool, "worker")))
        return Busy(f"no {worker} could start the call in time ({self.waiting} calls waiting)", retry_after_s)

    def _grow(self) -> None:
        """Starts extra workers for the calls that wait on held workers, while spare
        slots last: for each class, no more starts than calls waiting for it."""
        now = time.monotonic()
        if now < self._no_starts_until:
            return
        for head in self._heads():
            first, *others = head.classes
            pool = self.pools[first]
            if not self._may_overflow(pool, now) or any(self.pools[name].idle for name in others):
                continue
            demand = sum(len(line) for classes, line in self._lines.items() if classes[0] == first)
            while (self.spare and sum(self._starting.values()) < self.max_starts
                   and self._starting[first] < demand):
                self._starting[first] += 1
                self.grown += 1
                self.spawn(self._start_extra(first, self.spare.pop()))

    async def _start_extra(self, name: str, slot: Slot) -> None:
        try:
            if not await self.pools[name].grow(slot):
                self.spare.append(slot)
                self._no_starts_until = time.monotonic() + FAILED_START_PAUSE_S
        finally:
            self._starting[name] -= 1

    async def _shrink_idle_extras(self) -> None:
        while not self.closed:
            await asyncio.sleep(min(self.idle_shrink_s / 4, 5.0))
            now = time.monotonic()
            for pool in self.pools.values():
                for worker in pool.idle_extras(now - self.idle_shrink_s):
                    self.shrunk += 1
                    self.spawn(self._retire(pool, worker))

    async def _retire(self, pool: WorkerPool, worker: Zygote) -> None:
        await pool.retire(worker)
        self.spare.append(worker.slot)

    def waiting_for(self, name: str) -> int:
        """Calls waiting whose first class is name."""
        return sum(1 for classes, line in self._lines.items() if classes[0] == name
                   for waiter in line if not waiter.future.done())

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        self.closed = True
        for task in list(self._background):
            task.cancel()
        for line in self._lines.values():
            for waiter in line:
                if not waiter.future.done():
                    waiter.future.set_exception(Unavailable("server is shutting down"))
