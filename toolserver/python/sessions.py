"""Stateful Python sessions: processes forked from one warm zygote into jails made ahead.

Each session is a process of its own slot (its uid, its scratch, its memory cgroup over
all its processes) inside a firejail jail made for it with the workers' command line; the
process is forked from the session zygote (`sandbox/session_zygote.py`), which has the
workers' preloads imported, and joins that jail (`sandbox/sessions.py`). Sessions are made
ahead of time, up to `sessions.ready` of them, so that OpenSession only hands one over:
it sends the session its start (memory cap, import profile) and waits for it to serve.
CloseSession answers at once; the jail is killed and the slot made ready again behind it.

Calls on one session run one at a time. A call past its timeout is interrupted (SIGINT,
KeyboardInterrupt in its code); a session that does not come back, or whose process dies,
is closed. Idle sessions are closed by a reaper (counted as evictions). An OpenSession
whose caller goes away leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sandbox.calls import CallReply
from sandbox.cgroups import MemoryCgroup, MemoryCgroups, SlotCgroups
from sandbox.jail import Slot
from sandbox.sessions import (
    HOLDER_SOURCE,
    ProtocolBroken,
    SessionJail,
    SessionProcess,
    SessionZygote,
    make_session_process,
)
from sandbox.slots import kill_slot_processes, prepare_scratch
from sandbox.worker import WorkerLost, ZygoteSpec
from toolserver.errors import Exhausted, NotFound, Unavailable

log = logging.getLogger(__name__)

INTERRUPT_GRACE_S = 3.0
START_FRAME_BYTES = 4096  # a session's "waiting" and "serving" frames are a few dozen bytes
VALUE_CHARS = 1 << 20  # a cell's value (its repr) is cut at this many characters, or the call's output cap
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


@dataclass
class Session:
    session_id: str
    made: ReadySession
    idle_timeout_s: int
    memory_mb: int
    owner: str = ""
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False
    oom_kills: int = 0

    @property
    def process(self) -> SessionProcess:
        return self.made.process

    @property
    def alive(self) -> bool:
        return not self.closed and not self.process.ended


class OutputCap:
    """Bytes kept up to a cap; `truncated` says something was dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[:max(room, 0)]
        if data:
            self.parts.append(data)
            self.size += len(data)

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", errors="replace")


@dataclass
class SessionCounts:
    opened: int = 0
    closed: int = 0
    evicted: int = 0
    made: int = 0
    failed: int = 0


class SessionManager:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_sessions: int, ready: int, idle_timeout_s: int,
                 memory_mb: int, cgroups: MemoryCgroups | None = None, makers: int = 2) -> None:
        self.spec = spec  # toolserver.python.jails.session_spec
        self.zygote = SessionZygote(spec)
        self.free_slots = list(slots)
        self.max_sessions = min(max_sessions, len(slots))
        self.ready_target = min(ready, self.max_sessions)
        self.idle_timeout_s = idle_timeout_s
        self.default_memory_mb = memory_mb
        self.sessions: dict[str, Session] = {}
        self.ready: list[ReadySession] = []
        self.counts = SessionCounts()
        self.unavailable = ""  # why sessions cannot be served, once known
        self._making = 0
        self._makers = asyncio.Semaphore(makers)
        self._releasing = 0
        self._changed = asyncio.Event()  # a slot came back, or a session made ahead is ready (or failed)
        self._last_request = 0.0  # when the last OpenSession or CloseSession came
        self._starved = 0  # OpenSessions waiting for a session being made
        self._waiting_opens: set[asyncio.Task[Any]] = set()  # their tasks: one whose caller is gone stops there
        self._opening = 0
        self._opening_by: dict[str, int] = {}
        self._open_by: dict[str, int] = {}
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._slot_cgroups = SlotCgroups(cgroups)
        self._zygote_lock = asyncio.Lock()

    async def start(self) -> None:
        """Starts the zygote, the reaper and the making of ready sessions; a zygote that
        cannot start leaves the manager refusing sessions (`unavailable` says why)."""
        try:
            await self.zygote.start()
        except WorkerLost as exc:
            self.unavailable = f"the session zygote did not start: {exc}"
            log.error("%s", self.unavailable)
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())
        self._refill()

    def refuse(self, reason: str) -> None:
        """Stops serving sessions for reason (a failed check of their jail)."""
        self.unavailable = reason
        log.error("refusing sessions: %s", reason)

    # ---- making sessions ahead

    def _refill(self) -> None:
        if self._closed or self.unavailable:
            return
        room = self.max_sessions - len(self.sessions) - self._opening
        while self.free_slots and len(self.ready) + self._making < min(self.ready_target, room):
            self._making += 1
            self._spawn(self._make_ready(self.free_slots.pop(0)))  # the longest free: not a just closed uid

    async def _make_ready(self, slot: Slot) -> None:
        """Makes a session ahead on slot once the server is quiet."""
        made: ReadySession | None = None
        try:
            await self._quiet()
            if self._closed:
                await self._release_slot(slot, refill=False)
                return
            try:
                made = await self._make(slot)
            except Unavailable as exc:
                log.warning("a ready session could not be made: %s", exc)
                await asyncio.sleep(MAKE_RETRY_S)  # a host that cannot make one now is not asked at once again
        finally:
            self._making -= 1
            self._changed.set()
        if made is None:
            self._refill()
            return
        if self._closed:
            await self._destroy(made)
            return
        self.ready.append(made)

    async def _make(self, slot: Slot) -> ReadySession:
        """A new session's jail and process on slot (taken from the free ones); raises
        Unavailable, with the slot given back."""
        jail: SessionJail | None = None
        async with self._makers:
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(None, prepare_scratch, slot)
                cgroup = await loop.run_in_executor(None, self._slot_cgroups.of, slot.name)
                if not self.spec.insecure_no_sandbox:
                    jail = SessionJail(slot, cgroup)
                    await jail.launch(self.spec, "session jail", HOLDER_SOURCE, {})
                await self._zygote_alive()
                process = await make_session_process(self.zygote, slot, jail, cgroup)
                try:
                    async with asyncio.timeout(self.spec.start_timeout_s):
                        ready = await process.receive(START_FRAME_BYTES)
                    if not ready.get("waiting"):
                        raise WorkerLost(f"the session did not get ready: {ready!r}")
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
        if cgroup is not None:  # the usual cap set ahead: OpenSession changes it only when asked for another
            made.base_mb, made.oom_kills = cgroup.usage_mb(), cgroup.oom_kills()
            made.cap_memory(self.default_memory_mb)
        self.counts.made += 1
        return made

    async def _quiet(self) -> None:
        """Until no OpenSession or CloseSession has come for QUIET_S, or an OpenSession waits
        for a session being made: a burst has the CPU first (making a session starts a jail
        and forks the warm interpreter)."""
        while not self._starved and (self._opening or time.monotonic() - self._last_request < QUIET_S):
            await asyncio.sleep(QUIET_S)

    async def _zygote_alive(self) -> None:
        """Starts the session zygote again if it died; raises WorkerLost."""
        async with self._zygote_lock:
            if not self.zygote.alive:
                log.warning("the session zygote died: starting it again")
                await self.zygote.close()
                self.zygote = SessionZygote(self.spec)
                await self.zygote.start()

    async def _take_ready(self) -> ReadySession:
        """A ready session; else one made now on a free slot; else the next slot to come
        back or session to be made ahead."""
        while True:
            while self.ready:
                made = self.ready.pop()
                if not made.process.ended:
                    return made
                self._spawn(self._destroy(made))
            if self.free_slots:
                return await self._make(self.free_slots.pop(0))
            if not (self._releasing or self._making):
                raise Exhausted(f"session limit reached ({self.max_sessions} open)")
            self._starved += 1  # this open waits on the sessions being made ahead
            self._changed.clear()
            waiting = asyncio.current_task()
            if waiting is not None:
                self._waiting_opens.add(waiting)
            try:
                await self._changed.wait()
            finally:
                self._starved -= 1
                self._waiting_opens.discard(waiting)

    # ---- open, call, close

    async def open(self, owner: str = "", max_for_owner: int = 0, memory_mb: int = 0, profile: str = "") -> Session:
        """Starts a session for owner with memory_mb for its code (0: none beyond the host's)
        and the guard of its import profile; max_for_owner > 0 caps how many owner may hold."""
        if self._closed:
            raise Unavailable("server is shutting down")
        if self.unavailable:
            raise Unavailable(f"sessions are not served: {self.unavailable}")
        if len(self.sessions) + self._opening >= self.max_sessions or \
                (max_for_owner and self._held_by(owner) >= max_for_owner):
            for dead in [s for s in self.sessions.values() if not s.alive and not s.lock.locked()]:
                await self._end(dead)  # a session whose process died holds no place under the caps
        if max_for_owner and self._held_by(owner) >= max_for_owner:
            raise Exhausted(f"caller {owner!r} holds {max_for_owner} sessions, the most its policy allows")
        if len(self.sessions) + self._opening >= self.max_sessions:
            raise Exhausted(f"session limit reached ({self.max_sessions} open)")
        self._opening += 1
        self._last_request = time.monotonic()
        self._opening_by[owner] = self._opening_by.get(owner, 0) + 1
        rules = None if self.spec.guard is None else self.spec.guard.profiles[profile]
        guard = None if rules is None or rules.refuses_nothing() else rules.config()
        start = asyncio.get_running_loop().create_task(self._open(owner, memory_mb, guard))
        try:
            return await asyncio.shield(start)
        except asyncio.CancelledError:
            if start in self._waiting_opens:
                start.cancel()  # nothing taken yet: it waits for a slot or a session made ahead
            start.add_done_callback(self._close_orphan)
            raise

    async def _open(self, owner: str, memory_mb: int, guard: dict[str, Any] | None) -> Session:
        try:
            made = await self._take_ready()
            try:
                session = await self._start(made, owner, memory_mb, guard)
            except BaseException:
                self._spawn(self._destroy(made))
                raise
            self.sessions[session.session_id] = session
            self._open_by[owner] = self._open_by.get(owner, 0) + 1
            self.counts.opened += 1
        finally:
            self._opening -= 1
            self._opening_by[owner] -= 1
            self._refill()
        return session

    async def _start(self, made: ReadySession, owner: str, memory_mb: int, guard: dict[str, Any] | None) -> Session:
        process = made.process
        session = Session(uuid.uuid4().hex, made, self.idle_timeout_s, memory_mb, owner, oom_kills=made.oom_kills)
        try:
            made.cap_memory(memory_mb)
            async with asyncio.timeout(self.spec.start_timeout_s):
                await process.send({"memory_mb": memory_mb, "guard": guard})
                serving = await process.receive(START_FRAME_BYTES)
            if not serving.get("serving"):
                raise WorkerLost(f"the session did not serve: {serving!r}")
        except (WorkerLost, TimeoutError, OSError) as exc:
            raise Unavailable(f"the session did not start: {exc!r}") from exc
        return session

    def _close_orphan(self, start: asyncio.Task[Session]) -> None:
        """The OpenSession that started this session was cancelled: nobody will use it."""
        if not start.cancelled() and start.exception() is None:
            self._spawn(self._end(start.result()))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _held_by(self, owner: str) -> int:
        return self._opening_by.get(owner, 0) + self._open_by.get(owner, 0)

    def get(self, session_id: str, owner: str = "") -> Session:
        """The owner's session; another caller's session is NOT_FOUND, as an unknown one."""
        session = self.sessions.get(session_id)
        if session is None or not session.alive or session.owner != owner:
            raise NotFound(f"unknown or closed session {session_id!r}")
        return session

    async def close(self, session_id: str, owner: str = "") -> None:
        self._last_request = time.monotonic()
        await self._end(self.get(session_id, owner))

    async def _end(self, session: Session, evicted: bool = False) -> None:
        """Ends a session at once (its process killed, its place free) and destroys its
        jail behind it; once, whoever reaches it first."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.session_id, None)
        self._open_by[session.owner] -= 1
        if not self._open_by[session.owner]:
            del self._open_by[session.owner]
        self.counts.closed += 1
        self.counts.evicted += evicted
        session.process.close()
        if session.made.jail is not None:
            session.made.jail.signal_kill()  # everything of the session ends now; the rest once quiet
        self._releasing += 1  # OpenSession waits for its slot rather than say the cap is reached
        self._spawn(self._destroy(session.made, released=True))

    async def _destroy(self, made: ReadySession, released: bool = False) -> None:
        made.process.close()
        emptied = False
        try:
            if released:
                await self._quiet()  # a burst of closes is answered first
            if made.jail is not None:
                await made.jail.kill()
                emptied = made.cgroup is not None
            if made.cgroup is not None:
                made.cgroup.set_limit_mb(0)
        except OSError as exc:
            log.warning("cleaning up the session on %s: %r", made.slot.name, exc)
        finally:
            if released:
                self._releasing -= 1
            await self._release_slot(made.slot, emptied)

    async def _release_slot(self, slot: Slot, emptied: bool = False, refill: bool = True) -> None:
        """Gives slot back once nothing runs as its uid (emptied: its jail's kill saw to it),
        and makes a session ahead on it where one is wanted (refill)."""
        self._releasing += 1
        try:
            if not emptied:
                await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, slot)
            self.free_slots.append(slot)
        finally:
            self._releasing -= 1
            self._changed.set()
        if refill:
            self._refill()

    async def execute(self, session_id: str, owner: str, code: str, stdin: str, timeout_ms: int,
                      max_output_bytes: int) -> CallReply:
        """Runs code in the owner's session; returns a reply as a zygote's (with no id). A
        call whose caller goes away is interrupted as one past its time (the session is
        closed where that does not stop it), so the session's next call gets its own answer."""
        session = self.get(session_id, owner)
        abandoned = asyncio.Event()
        call = asyncio.get_running_loop().create_task(
            self._execute(session, code, stdin, timeout_ms, max_output_bytes, abandoned))
        call.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved, caller or not
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            abandoned.set()
            raise

    async def _execute(self, session: Session, code: str, stdin: str, timeout_ms: int, max_output_bytes: int,
                       abandoned: asyncio.Event) -> CallReply:
        async with session.lock:  # the reaper leaves a locked session alone
            if not session.alive:
                raise NotFound(f"session {session.session_id!r} was closed")
            try:
                reply = await self._run(session, code, stdin, timeout_ms, max_output_bytes, abandoned)
            finally:
                session.last_used = time.monotonic()
            self._account_memory(session, reply)
            return reply

    def _account_memory(self, session: Session, reply: CallReply) -> None:
        """Applies the OOM kills of the session's cgroup during the call to reply."""
        cgroup = session.made.cgroup
        if cgroup is None:
            return
        kills = cgroup.oom_kills()
        ended = "; the session is closed" if not session.alive else ""
        reply.note_oom_kills(kills - session.oom_kills,
                             f"session memory limit of {session.memory_mb} MB reached by its processes together{ended}")
        session.oom_kills = kills

    async def _run(self, session: Session, code: str, stdin: str, timeout_ms: int,
                   max_output_bytes: int, abandoned: asyncio.Event) -> CallReply:
        process = session.process
        outputs = {"stdout": OutputCap(max_output_bytes), "stderr": OutputCap(max_output_bytes)}
        reply = CallReply("", "OK")
        started = time.monotonic()
        result: dict[str, Any] | None = None
        interrupted = False
        broken = ""
        number = secrets.token_hex(8)  # the session's answer must carry it: no frame written earlier can
        value_chars = min(max_output_bytes, VALUE_CHARS)
        cut: list[str] = []  # the streams that went past max_output_bytes: the cell is interrupted there

        def printed(name: str, data: bytes) -> None:
            outputs[name].add(data)
            if outputs[name].truncated and name not in cut:
                cut.append(name)
                process.signal(signal.SIGINT)

        if process.unasked():
            broken = "the session wrote on its control socket between calls"
        else:
            process.drain_all()  # what the session wrote between calls is nobody's
            process.listen(printed)
            try:
                result, interrupted = await self._answer(
                    session, {"id": number, "code": code, "stdin": stdin, "value_chars": value_chars},
                    timeout_ms / 1000.0, result_frame_bytes(value_chars), abandoned)
                if result is not None and result.get("id") != number:
                    raise ProtocolBroken("the session answered with a frame that is not this call's")
            except ProtocolBroken as exc:
                broken, result = str(exc), None
            except WorkerLost:
                result = None
            finally:
                process.listen(None)
        if result is None:
            if broken:
                reply.outcome, reply.exit_code, reply.error = (
                    "CRASHED", -1, f"{broken}: the session broke its protocol and is closed")
            elif interrupted and session.alive and not process.ended:
                reply.outcome, reply.exit_code, reply.error = (
                    "TIMEOUT", -1, f"time limit of {timeout_ms} ms exceeded; the session did not stop, session closed")
            else:
                reply.outcome, reply.exit_code, reply.error = (
                    "CRASHED", -1, "the session's process died; the session is closed")
            await self._end(session)
        else:
            value = result.get("value")
            reply.value = value if isinstance(value, str) else ""
            if result.get("ename"):
                reply.outcome, reply.exit_code, reply.error = call_error(
                    str(result["ename"]), result.get("evalue", ""), interrupted, timeout_ms)
                if result["ename"] == "SystemExit":
                    exit_code = result.get("exit_code")
                    reply.exit_code = exit_code if isinstance(exit_code, int) and exit_code else 1
            reply.truncated = bool(result.get("value_cut"))
            if cut:
                reply.outcome, reply.exit_code, reply.error = "OUTPUT_LIMIT", 1, (
                    f"output limit of {max_output_bytes} bytes exceeded on {' and '.join(cut)}: "
                    f"interrupted there, session kept")
        reply.stdout, reply.stderr = outputs["stdout"].text(), outputs["stderr"].text()
        reply.truncated = reply.truncated or outputs["stdout"].truncated or outputs["stderr"].truncated
        reply.elapsed_us = int((time.monotonic() - started) * 1e6)
        return reply

    async def _answer(self, session: Session, call: dict[str, Any], timeout_s: float, max_size: int,
                      abandoned: asyncio.Event) -> tuple[dict[str, Any] | None, bool]:
        """Sends call and waits for the session's answer: until timeout_s, or until the
        caller goes away (abandoned), then interrupts it and waits INTERRUPT_GRACE_S more.
        Returns the answer (None: none came) and whether the call was interrupted; raises
        WorkerLost (ProtocolBroken)."""
        process = session.process
        await process.send(call)
        loop = asyncio.get_running_loop()
        receiving = loop.create_task(process.receive(max_size))
        given_up = loop.create_task(abandoned.wait())
        interrupted = False
        try:
            done, _ = await asyncio.wait({receiving, given_up}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            if receiving not in done:
                interrupted = True
                process.signal(signal.SIGINT)
                done, _ = await asyncio.wait({receiving}, timeout=INTERRUPT_GRACE_S)
        finally:
            given_up.cancel()
            if not receiving.done():
                receiving.cancel()
                await asyncio.gather(receiving, return_exceptions=True)
        return (receiving.result() if receiving in done else None), interrupted

    async def _reap_idle(self) -> None:
        while not self._closed:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.lock.locked():
                    continue
                if not session.alive:
                    await self._end(session)
                elif now - session.last_used > session.idle_timeout_s:
                    log.info("closing session %s (idle)", session.session_id)
                    await self._end(session, evicted=True)

    async def shutdown(self) -> None:
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        for session in list(self.sessions.values()):
            await self._end(session)
        while self.ready:
            self._spawn(self._destroy(self.ready.pop()))
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.zygote.close()
        self._slot_cgroups.remove_all()


def result_frame_bytes(value_chars: int) -> int:
    """The largest result frame a session may send: a value of value_chars characters,
    each at most 12 bytes as JSON escapes it, and room for the rest."""
    return 12 * value_chars + 65536


def call_error(name: str, evalue: Any, interrupted: bool, timeout_ms: int) -> tuple[str, int, str]:
    """The outcome, exit code and error of a call whose code raised name (evalue): a
    KeyboardInterrupt the server's interrupt caused is its time limit."""
    if interrupted and name == "KeyboardInterrupt":
        return "TIMEOUT", -1, f"time limit of {timeout_ms} ms exceeded; interrupted, session kept"
    if name == "MemoryError":
        return "MEMORY_LIMIT", 1, "MemoryError: session memory limit reached"
    if name in ("ImportDenied", "ActionDenied"):
        return "DENIED", 1, f"{name}: {evalue}"
    return "ERROR", 1, f"{name}: {evalue}"


def open_files_wanted(max_sessions: int) -> int:
    """Descriptors the server holds per session (3 of its own, 3 of its jail's firejail
    pipes) with room for the rest."""
    return 6 * max_sessions + 4096


def raise_open_files(wanted: int) -> None:
    """Raises this process's soft limit on open files toward wanted, within the hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        log.info("open files limit raised to %d for sessions", target)
    elif soft < wanted:
        log.warning("open files limit %d is below the %d that sessions need", soft, wanted)
