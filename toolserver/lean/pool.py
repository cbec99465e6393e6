"""The policy of the Lean REPL pool: which REPL a proof runs on, and when REPLs go.

One REPL per sandbox slot, each keyed by the normalised header it elaborated. A call
takes an idle REPL with its header; else starts one in an empty slot; else, when no
REPL with its header exists at all, evicts the least recently used idle REPL of another
header; else waits, in arrival order. A REPL that times out, crashes, or whose caller gave up is killed
and replaced in the background with the same header; one that served `recycle_after`
proofs is replaced the same way. REPLs idle for `idle_evict_s` are closed, except the
last one of a pre-warmed header. Speaking to one REPL is `toolserver.lean.repl`'s job.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sandbox.cgroups import MemoryCgroup, MemoryCgroups, SlotCgroups
from sandbox.jail import Slot
from sandbox.worker import ZygoteSpec
from toolserver.errors import Exhausted, Unavailable
from toolserver.lean.header import Header
from toolserver.lean.repl import HeaderRejected, LeanRepl, ReplLost, Toolchain

log = logging.getLogger(__name__)

REPL_OUTCOMES = frozenset({"OK", "TIMEOUT", "MEMORY_LIMIT", "CRASHED"})  # the statuses the contract names


@dataclass(frozen=True)
class ReplOutcome:
    """What became of one command: status is OK (answer holds the REPL's answer),
    HEADER_ERROR (answer holds the header's answer), TIMEOUT, MEMORY_LIMIT or CRASHED."""

    status: str
    answer: dict[str, Any]
    error: str = ""
    header_started: bool = False  # this call waited for its header to elaborate


@dataclass(frozen=True)
class PoolStats:
    size: int                      # REPLs running
    busy: int                      # slots running a proof or starting a REPL
    slots: int
    headers: dict[str, int]        # REPLs per header key
    starts: int                    # REPLs started (header elaborated)
    restarts: int                  # REPLs killed after a timeout, crash or abandoned call
    evictions: int                 # REPLs closed for another header or for idleness
    recycled: int                  # REPLs replaced after recycle_after proofs


class _Place:
    """A slot and the REPL it runs, if any; busy while a call or a start owns it."""

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.repl: LeanRepl | None = None
        self.busy = False


class ReplPool:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], toolchain: Toolchain, *, start_timeout_s: float,
                 idle_evict_s: float, recycle_after: int, keep_headers: tuple[Header, ...] = (),
                 max_queue: int = 256, cgroups: MemoryCgroups | None = None) -> None:
        if not slots:
            raise ValueError("the Lean pool needs at least one sandbox slot")
        self.spec = spec
        self.toolchain = toolchain
        self.start_timeout_s = start_timeout_s
        self.idle_evict_s = idle_evict_s
        self.recycle_after = recycle_after
        self.max_queue = max_queue
        self.keep = {header.key for header in keep_headers}
        self._places = [_Place(slot) for slot in slots]
        self._waiters: collections.deque[tuple[Header, asyncio.Future[tuple[_Place, bool]]]] = collections.deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False
        self._counts: Counter[str] = Counter()
        self._slot_cgroups = SlotCgroups(cgroups, spec.jail.max_processes)

    async def start(self, prewarm: tuple[Header, ...] = ()) -> list[str]:
        """Starts the idle sweeper and one REPL per pre-warmed header; returns the
        errors of those that failed (the pool serves anyway)."""
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        errors = []
        for header in prewarm:
            place = next((p for p in self._places if p.repl is None and not p.busy), None)
            if place is None:
                break
            place.busy = True
            try:
                await self._start_repl(place, header)
            except (ReplLost, HeaderRejected) as exc:
                errors.append(f"{header.key or '(no imports)'}: {_describe(exc)}")
            finally:
                self._release(place)
        return errors

    def stats(self) -> PoolStats:
        live = [p.repl for p in self._places if p.repl is not None and p.repl.alive]
        return PoolStats(
            size=len(live), busy=sum(p.busy for p in self._places), slots=len(self._places),
            headers=dict(Counter(repl.header.key for repl in live)), starts=self._counts["starts"],
            restarts=self._counts["restarts"], evictions=self._counts["evictions"],
            recycled=self._counts["recycled"])

    async def run(self, header: Header, text: str, timeout_s: float) -> ReplOutcome:
        """Runs text on a REPL with header's environment; one outcome, never silence."""
        place, needs_start = await self._acquire(header)
        try:
            outcome = await self._run_on(place, header, text, timeout_s, needs_start)
        except BaseException:
            # The caller gave up (cancelled) mid-command: the REPL's state is unknown.
            self._counts["restarts"] += 1
            self._replace(place, header)
            raise
        return outcome

    async def _run_on(self, place: _Place, header: Header, text: str, timeout_s: float,
                      needs_start: bool) -> ReplOutcome:
        """Runs text on the owned place and hands the place back (released or being
        replaced) before returning."""
        if needs_start:
            try:
                await self._start_repl(place, header)
            except HeaderRejected as exc:
                self._release(place)
                return ReplOutcome("HEADER_ERROR", exc.answer, "the header did not elaborate", True)
            except ReplLost as exc:
                self._release(place)
                status = "MEMORY_LIMIT" if exc.out_of_memory else "CRASHED"
                return ReplOutcome(status, {}, str(exc), True)
        repl = place.repl
        assert repl is not None
        try:
            answer = await repl.run(text, timeout_s)
        except ReplLost as exc:
            self._counts["restarts"] += 1
            self._replace(place, header)
            if exc.timed_out:
                return ReplOutcome("TIMEOUT", {}, f"{exc}; the REPL was replaced", needs_start)
            if exc.out_of_memory:
                return ReplOutcome("MEMORY_LIMIT", {}, f"the Lean REPL ran out of memory: {exc}", needs_start)
            return ReplOutcome("CRASHED", {}, f"{exc}; the REPL was replaced", needs_start)
        if repl.memory_exceeded():
            self._counts["restarts"] += 1
            self._replace(place, header)
            return ReplOutcome("MEMORY_LIMIT", {}, f"memory limit of {self.spec.jail.memory_mb} MB exceeded by the "
                               "Lean REPL's processes together; the REPL was replaced", needs_start)
        if self.recycle_after and repl.uses >= self.recycle_after:
            self._counts["recycled"] += 1
            self._replace(place, header)
        else:
            self._release(place)
        return ReplOutcome("OK", answer, "", needs_start)

    async def close(self, timeout_s: float = 30.0) -> None:
        """Kills every REPL and returns once nothing the pool started still runs: calls in
        flight end CRASHED, waiting calls get Unavailable, no REPL is started after."""
        self._closed = True
        while self._waiters:
            _, waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(Unavailable("the Lean pool is shutting down"))
        tasks = list(self._tasks) + ([self._sweeper] if self._sweeper else [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            for place in self._places:
                if place.repl is not None and place.repl.alive:
                    await place.repl.kill()
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
                continue
            if not any(p.busy for p in self._places) or loop.time() > deadline:
                break
            await asyncio.sleep(0.01)
        for place in self._places:
            place.repl = None
        self._slot_cgroups.remove_all()

    async def _acquire(self, header: Header) -> tuple[_Place, bool]:
        """A place this call now owns, and whether a REPL must be started in it. Calls
        that must wait queue in arrival order; each release hands places out in that order
        to the calls that can use them (no herd of waiters woken to re-check)."""
        if self._closed:
            raise Unavailable("the Lean pool is shutting down")
        if not self._waiters:
            choice = self._choose(header)
            if choice is not None:
                return choice
        if len(self._waiters) >= self.max_queue:
            raise Exhausted(f"lean queue is full ({self.max_queue} calls waiting)")
        waiter: asyncio.Future[tuple[_Place, bool]] = asyncio.get_running_loop().create_future()
        entry = (header, waiter)
        self._waiters.append(entry)
        self._dispatch()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release(waiter.result()[0])  # a place arrived with the cancellation
            elif entry in self._waiters:
                self._waiters.remove(entry)
            raise

    def _choose(self, header: Header) -> tuple[_Place, bool] | None:
        """Takes a place for header if one can be had now: an idle REPL with this header
        (the most recently used, so that surplus REPLs go idle and are evicted), an empty
        slot, or, when no REPL has this header at all, the least recently used idle REPL."""
        idle = [p for p in self._places if not p.busy]
        same = [p for p in idle if p.repl is not None and p.repl.header == header]
        if same:
            place = max(same, key=lambda p: p.repl.last_used if p.repl else 0.0)
            place.busy = True
            return place, False
        empty = [p for p in idle if p.repl is None]
        if empty:
            empty[0].busy = True
            return empty[0], True
        exists = any(p.repl is not None and p.repl.header == header for p in self._places)
        if idle and not exists:
            place = min(idle, key=lambda p: p.repl.last_used if p.repl else 0.0)
            place.busy = True
            self._counts["evictions"] += 1
            return place, True
        return None

    def _dispatch(self) -> None:
        """Hands idle places to waiting calls, first come first served; calls that cannot
        use any idle place keep their turn."""
        kept = []
        while self._waiters and not all(p.busy for p in self._places):
            entry = self._waiters.popleft()
            header, waiter = entry
            if waiter.done():
                continue
            choice = self._choose(header)
            if choice is None:
                kept.append(entry)
            else:
                waiter.set_result(choice)
        self._waiters.extendleft(reversed(kept))

    async def _start_repl(self, place: _Place, header: Header) -> None:
        """Replaces whatever place runs with a fresh REPL for header; place is owned."""
        if place.repl is not None:
            await place.repl.kill()
            place.repl = None
        try:
            cgroup = await asyncio.get_running_loop().run_in_executor(None, self._slot_cgroup, place.slot)
        except OSError as exc:
            raise ReplLost(f"the slot's memory cgroup cannot be made: {exc}") from exc
        repl = LeanRepl(self.spec, place.slot, self.toolchain, header, cgroup)
        try:
            await repl.start(self.start_timeout_s)
        except BaseException:
            await repl.kill()
            raise
        if self._closed:
            await repl.kill()
            raise ReplLost("the Lean pool is shutting down")
        place.repl = repl
        self._counts["starts"] += 1

    def _slot_cgroup(self, slot: Slot) -> MemoryCgroup | None:
        """The slot's memory cgroup (None without them), capped at the REPL's memory: its
        processes together, whatever a proof's code starts included. Raises OSError."""
        cgroup = self._slot_cgroups.of(slot.name)
        if cgroup is not None:
            cgroup.set_limit_mb(self.spec.jail.memory_mb)
        return cgroup

    def _release(self, place: _Place) -> None:
        place.busy = False
        self._dispatch()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _replace(self, place: _Place, header: Header) -> None:
        """Kills place's REPL and starts a new one for header in the background; place
        stays owned (busy) until the new REPL is up or failed to start."""
        self._spawn(self._replace_now(place, header))

    async def _replace_now(self, place: _Place, header: Header) -> None:
        try:
            if self._closed:
                if place.repl is not None:
                    await place.repl.kill()
                return
            await self._start_repl(place, header)
            if self._closed and place.repl is not None:
                await place.repl.kill()
        except (ReplLost, HeaderRejected) as exc:
            log.warning("lean: replacing the REPL of %s failed: %s", place.slot.name, _describe(exc))
        finally:
            if place.repl is not None and not place.repl.alive:
                place.repl = None
            self._release(place)

    async def _sweep(self) -> None:
        period = max(0.05, min(self.idle_evict_s / 4, 30.0))
        while True:
            await asyncio.sleep(period)
            await self.evict_idle()

    async def evict_idle(self) -> int:
        """Closes REPLs idle longer than idle_evict_s (keeping one per pre-warmed header);
        returns how many."""
        now = time.monotonic()
        stale = [p for p in self._places if not p.busy and p.repl is not None
                 and now - p.repl.last_used >= self.idle_evict_s]
        chosen: list[_Place] = []
        for place in sorted(stale, key=lambda p: p.repl.last_used if p.repl else 0.0):
            assert place.repl is not None
            key = place.repl.header.key
            others = [p for p in self._places if p is not place and p not in chosen and p.repl is not None
                      and p.repl.header.key == key]
            if key in self.keep and not others:
                continue
            place.busy = True
            chosen.append(place)
        for place in chosen:
            if place.repl is not None:
                await place.repl.kill()
                place.repl = None
            self._counts["evictions"] += 1
            self._release(place)
        return len(chosen)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, HeaderRejected):
        errors = [str(m.get("data", "")) for m in exc.answer.get("messages") or () if isinstance(m, dict)]
        return "; ".join(errors) or str(exc.answer.get("message", "the header did not elaborate"))
    return str(exc)
