"""The sessions made ahead: jails and processes of free slots, waiting for an OpenSession.

A session is made on a free slot (its scratch prepared, its memory cgroup, a firejail jail
with the workers' command line and a holder, then a process forked from the session zygote
into it, `sandbox/sessions.py`) once the server is quiet, up to what the pool wants ready
and the room the session table leaves (`toolserver/python/sessions.py` holds the open
ones). The pool learns the batch: it wants `sessions.ready`, or the most sessions open at
once lately (an RL step's batch) if more, so that the next step finds its whole batch made
ahead; a peak not reached again for `keep_peak_s` is forgotten and the sessions made for
it given back. `sessions.ready = 0` turns making ahead off, learning included. An
OpenSession takes a ready one, or one made at once on a free slot, or waits for the next
slot to come back or session to be made. A session that closes is ended behind its
answer. Where another is wanted ahead, its jail is recycled (`sessions.recycle_jails`): every
process of the slot's memory cgroup but the jail's own (firejail, its init, its holder) is
killed, the cgroup's charge and peak reset, and a process forked into the jail empties its
writable places before it waits, which skips starting firejail and capping its mounts; a
jail that is not whole, or has no memory cgroup to prove it empty, is not recycled. Else
the jail is killed, the cgroup emptied, and the slot given back once nothing runs as its
uid, where a session is made ahead again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Coroutine

from sandbox.calls import session_state
from sandbox.cgroups import MemoryCgroup, MemoryCgroups, SlotCgroups
from sandbox.jail import Slot
from sandbox.sessions import (
    HOLDER_SOURCE,
    SessionJail,
    SessionProcess,
    SessionZygote,
    empty_for_the_next_session,
    make_session_process,
)
from sandbox.slots import kill_slot_processes, prepare_scratch
from sandbox.worker import WorkerLost, ZygoteSpec
from toolserver.errors import Exhausted, Unavailable

log = logging.getLogger(__name__)

START_FRAME_BYTES = 4096  # a session's "waiting" and "serving" frames are a few dozen bytes
QUIET_S = 0.1  # sessions are made ahead once OpenSession and CloseSession have been quiet this long
MAKE_RETRY_S = 1.0  # after a session could not be made, the next try waits this long


@dataclass
class ReadySession:
    """A session's jail and process, made ahead, waiting for its start."""

    slot: Slot
    jail: SessionJail | None
    process: SessionProcess
    cgroup: MemoryCgroup | None
    base_mb: int = 0    # what its cgroup held when it was made: the warm process and its jail
    oom_kills: int = 0  # its cgroup's OOM kills by then

    def cap_memory(self, memory_mb: int) -> None:
        """Lets the session's processes add memory_mb (0: no cap) to what they held when made."""
        if self.cgroup is not None:
            self.cgroup.set_limit_mb(self.base_mb + memory_mb if memory_mb else 0)


class Claim:
    """One piece of work counted in an Underway: ended once, however its work ends."""

    def __init__(self, underway: Underway) -> None:
        self.underway = underway
        self.ended = False

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self.underway.ended()

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.end()


class Underway:
    """How many pieces of work of one kind are under way (sessions being made, slots being
    given back, OpenSessions waiting): each is claimed as it starts, the count taken at
    once, and its claim ended where it ends; the end of one sets changed (an OpenSession
    waiting for a slot or a session wakes on it)."""

    def __init__(self, changed: asyncio.Event | None = None) -> None:
        self.count = 0
        self.changed = changed

    def claim(self) -> Claim:
        self.count += 1
        return Claim(self)

    def ended(self) -> None:
        self.count -= 1
        if self.changed is not None:
            self.changed.set()


@dataclass
class PoolCounts:
    made: int = 0  # sessions made, on a new jail or a recycled one
    recycled: int = 0  # of them, on the jail of a session that closed
    failed: int = 0


class SessionPool:
    """The free slots and the sessions made ahead on them.

    room: how many more sessions the table may hold (open and opening ones counted);
    opening: whether an OpenSession is under way (a burst has the CPU before making)."""

    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, ready: int, memory_mb: int,
                 room: Callable[[], int], opening: Callable[[], bool], keep_peak_s: float = 900.0,
                 cgroups: MemoryCgroups | None = None, makers: int = 2, recycle: bool = True) -> None:
        self.spec = spec  # toolserver.python.jails.session_spec
        self.zygote_home_root = slots[0].scratch.parent  # the scratch root: the zygote's home is made there
        self.zygote = SessionZygote(spec, self.zygote_home_root)
        self.free_slots = list(slots)
        self.ready_target = ready  # the least kept made ahead
        self.keep_peak_s = keep_peak_s
        self.recycle = recycle  # a closed session's jail is emptied for the next one, where its cgroup proves it
        self.peak = 0  # the most sessions open (or opening) at once lately
        self.peak_at = 0.0  # when it was last reached
        self.default_memory_mb = memory_mb  # the cap set ahead: a start changes it only when asked for another
        self.ready: list[ReadySession] = []
        self.counts = PoolCounts()
        self.stopped = False  # no more sessions are made (shutting down, or sessions refused)
        self.last_request = 0.0  # when the last OpenSession or CloseSession came
        self._room = room
        self._opening = opening
        self._changed = asyncio.Event()  # a slot came back, or a session made ahead is ready (or failed)
        self._making = Underway(self._changed)  # sessions being made ahead (on a new jail or a recycled one)
        self._makers = asyncio.Semaphore(makers)
        self._releasing = Underway(self._changed)  # slots being given back
        self._starved = Underway()  # OpenSessions waiting for a session being made
        self.waiting_opens: set[asyncio.Task[Any]] = set()  # their tasks: one whose caller is gone stops there
        self._background: set[asyncio.Task[Any]] = set()
        self._slot_cgroups = SlotCgroups(cgroups, spec.jail.max_processes)
        self._zygote_lock = asyncio.Lock()

    async def start(self) -> None:
        """Starts the zygote and the making of ready sessions; raises WorkerLost."""
        await self.zygote.start()
        self.refill()

    def note_demand(self, sessions: int) -> None:
        """An OpenSession came with sessions open or opening, itself counted."""
        now = time.monotonic()
        if sessions >= self.peak or now - self.peak_at > self.keep_peak_s:
            self.peak, self.peak_at = sessions, now

    def wanted(self) -> int:
        """How many sessions to keep made ahead: the ready target, or the recent peak if more;
        none where the target is 0 (making ahead is off: a slot's uid runs processes only
        while its session is open)."""
        if self.peak and time.monotonic() - self.peak_at > self.keep_peak_s:
            self.peak = 0
        return max(self.ready_target, self.peak) if self.ready_target else 0

    def refill(self) -> None:
        """Makes sessions ahead on free slots, up to what is wanted and the table's room."""
        if self.stopped:
            return
        room = self._room()
        while self.free_slots and len(self.ready) + self._making.count < min(self.wanted(), room):
            # the longest free: not a just closed uid
            self.spawn(self._make_ready(self.free_slots.pop(0), self._making.claim()))

    async def _make_ready(self, slot: Slot, making: Claim) -> None:
        """Makes a session ahead on slot once the server is quiet."""
        made: ReadySession | None = None
        with making:
            await self._quiet()
            if self.stopped:
                await self._release_slot(slot, refill=False)
                return
            try:
                made = await self._make(slot)
            except Unavailable as exc:
                log.warning("a ready session could not be made: %s", exc)
                await asyncio.sleep(MAKE_RETRY_S)  # a host that cannot make one now is not asked at once again
        if made is None:
            self.refill()
            return
        if self.stopped:
            await self.destroy(made)
            return
        self.ready.append(made)

    async def _make(self, slot: Slot, recycled: SessionJail | None = None) -> ReadySession:
        """A new session's process on slot (taken from the free ones), in a new jail or in
        recycled, the jail of a session that closed, emptied of its processes and memory
        (the process empties its writable places before it waits); raises Unavailable,
        with the jail killed and the slot given back."""
        jail: SessionJail | None = recycled
        async with self._makers:
            loop = asyncio.get_running_loop()
            try:
                if recycled is not None:
                    cgroup = recycled.cgroup
                    await loop.run_in_executor(None, empty_for_the_next_session, recycled)
                else:
                    await loop.run_in_executor(None, prepare_scratch, slot)
                    cgroup = await loop.run_in_executor(None, self._slot_cgroups.of, slot.name)
                    if not self.spec.insecure_no_sandbox:
                        jail = SessionJail(slot, cgroup)
                        await jail.launch(self.spec, "session jail", HOLDER_SOURCE, {})
                await self._zygote_alive()
                process = await make_session_process(self.zygote, slot, jail, cgroup)
                try:
                    async with asyncio.timeout(self.spec.start_timeout_s):
                        frame = await process.receive(START_FRAME_BYTES)
                    if session_state(frame) != "waiting":
                        raise WorkerLost(f"the session did not get ready: {frame!r}")
                except (WorkerLost, TimeoutError):
                    process.close()
                    raise
            except (WorkerLost, OSError, TimeoutError) as exc:
                self.counts.failed += 1
                if jail is not None:
                    await jail.kill()
                await self._release_slot(slot, refill=False)
                raise Unavailable(f"a session could not be made: {exc}") from exc
        made = ReadySession(slot, jail, process, cgroup)
        if cgroup is not None:
            made.base_mb, made.oom_kills = cgroup.usage_mb(), cgroup.oom_kills()
            made.cap_memory(self.default_memory_mb)
        self.counts.made += 1
        self.counts.recycled += recycled is not None
        return made

    def recyclable(self, made: ReadySession) -> bool:
        """Whether made's jail may serve the next session: recycling is on, and the jail is
        whole and in a memory cgroup, which proves that no process of the last session is
        left (without one, nothing can: the jail is destroyed)."""
        return (self.recycle and not self.stopped and made.jail is not None and made.cgroup is not None
                and made.jail.whole())

    async def _recycle(self, made: ReadySession, making: Claim) -> None:
        """Makes a session ahead in the jail of made, which closed, once the server is
        quiet, where one is wanted; else, or where that fails, destroys the jail."""
        assert made.jail is not None
        again: ReadySession | None = None
        with making:
            await self._quiet()  # a burst of closes is answered first
            if not self.stopped and made.jail.whole() and len(self.ready) + self._making.count <= self.wanted():
                try:
                    again = await self._make(made.slot, made.jail)
                except Unavailable as exc:  # the jail is killed and the slot given back
                    log.warning("a closed session's jail could not be recycled: %s", exc)
                    self.refill()
                    return
        if again is None:
            await self.destroy(made, self._releasing.claim())
        elif self.stopped:
            await self.destroy(again)
        else:
            self.ready.append(again)

    async def _quiet(self) -> None:
        """Until no OpenSession or CloseSession has come for QUIET_S, or an OpenSession waits
        for a session being made: a burst has the CPU first (making a session starts a jail
        and forks the warm interpreter)."""
        while not self._starved.count and (self._opening() or time.monotonic() - self.last_request < QUIET_S):
            await asyncio.sleep(QUIET_S)

    async def _zygote_alive(self) -> None:
        """Starts the session zygote again if it died; raises WorkerLost."""
        async with self._zygote_lock:
            if not self.zygote.alive:
                log.warning("the session zygote died: starting it again")
                await self.zygote.close()
                self.zygote = SessionZygote(self.spec, self.zygote_home_root)
                await self.zygote.start()

    async def take(self, limit: int) -> ReadySession:
        """A ready session; else one made now on a free slot; else the next slot to come
        back or session to be made ahead. Raises Exhausted when none can come (limit: the
        table's, for the message), Unavailable when one could not be made."""
        while True:
            while self.ready:
                made = self.ready.pop()
                if not made.process.ended:
                    return made
                self.release(made)
            if self.free_slots:
                return await self._make(self.free_slots.pop(0))
            if not (self._releasing.count or self._making.count):
                raise Exhausted(f"session limit reached ({limit} open)")
            self._changed.clear()
            waiting = asyncio.current_task()
            if waiting is not None:
                self.waiting_opens.add(waiting)
            try:
                with self._starved.claim():  # this open waits on the sessions being made ahead
                    await self._changed.wait()
            finally:
                self.waiting_opens.discard(waiting)

    def trim(self) -> None:
        """Gives back sessions made ahead beyond what is wanted (a peak forgotten): their
        jails, their memory and their slots; none while an OpenSession is under way."""
        excess = len(self.ready) - self.wanted()
        while excess > 0 and self.ready and not self._opening() and not self.stopped:
            self.release(self.ready.pop(0))  # the longest made
            excess -= 1

    def release(self, made: ReadySession, recycle: bool = False) -> None:
        """Ends a session's use of its slot: its process is killed now, and (recycle: a
        session that closed) its jail emptied for a session made ahead in it where one is
        wanted; else its jail is killed now, destroyed and its slot given back once quiet.
        An OpenSession waits for the slot meanwhile, rather than hear that the limit is
        reached."""
        made.process.close()
        if recycle and self.recyclable(made):
            assert made.jail is not None and made.cgroup is not None
            made.cgroup.kill_all_but(made.jail.own_pids, wait_s=0)  # what it started ends now, not once recycled
            self.spawn(self._recycle(made, self._making.claim()))
            return
        if made.jail is not None:
            made.jail.signal_kill()
        self.spawn(self.destroy(made, self._releasing.claim()))

    async def destroy(self, made: ReadySession, released: Claim | None = None) -> None:
        """Kills made's jail and gives its slot back; released: the claim of a session
        released (its slot counted as coming back), once the server is quiet."""
        made.process.close()
        emptied = False
        try:
            if released is not None:
                await self._quiet()  # a burst of closes is answered first
            if made.jail is not None:
                await made.jail.kill()
                emptied = made.cgroup is not None
            if made.cgroup is not None:
                made.cgroup.set_limit_mb(0)
        except OSError as exc:
            log.warning("cleaning up the session on %s: %r", made.slot.name, exc)
        finally:
            if released is not None:
                released.end()
            await self._release_slot(made.slot, emptied)

    async def _release_slot(self, slot: Slot, emptied: bool = False, refill: bool = True) -> None:
        """Gives slot back once nothing runs as its uid (emptied: its jail's kill saw to it),
        and makes a session ahead on it where one is wanted (refill)."""
        with self._releasing.claim():
            if not emptied:
                await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, slot)
            self.free_slots.append(slot)
        if refill:
            self.refill()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Runs coro behind the answers; shutdown waits for it."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def shutdown(self) -> None:
        """Destroys the sessions made ahead, waits for every destroy, stops the zygote."""
        self.stopped = True
        while self.ready:
            self.spawn(self.destroy(self.ready.pop()))
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.zygote.close()
        self._slot_cgroups.remove_all()
