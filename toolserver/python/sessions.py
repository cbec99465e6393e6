"""Stateful Python sessions: the table of open ones, and their calls.

Each session is a process of its own slot (its uid, its scratch, its memory cgroup over
all its processes) inside a firejail jail made for it with the workers' command line; the
process is forked from the session zygote (`sandbox/inside/session_zygote.py`), which has the
workers' preloads imported, and joins that jail (`sandbox/sessions.py`). Sessions are made
ahead of time (`toolserver/python/session_pool.py`), so that OpenSession only hands one
over: it sends the session its start (memory cap, import profile) and waits for it to
serve. CloseSession answers at once; the pool destroys the jail and makes the slot ready
again behind it.

Calls on one session run one at a time, each a cell of the session's `__main__` whose
answer reads as a zygote's (`cell_reply`). A call past its timeout is interrupted (SIGINT,
KeyboardInterrupt in its code); a session that does not come back, or whose process dies,
is closed. Idle sessions are closed by a reaper (counted as evictions). An OpenSession
whose caller goes away leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sandbox.calls import CallReply, CellRequest, SessionStart, session_state
from sandbox.cgroups import MemoryCgroups
from sandbox.jail import Slot
from sandbox.sessions import ProtocolBroken, SessionProcess
from sandbox.worker import WorkerLost, ZygoteSpec
from toolserver.errors import Exhausted, NotFound, Unavailable
from toolserver.python.session_pool import START_FRAME_BYTES, ReadySession, SessionPool

log = logging.getLogger(__name__)

SELF_TEST_OWNER = "\0selftest"  # the self-test's sessions: no caller's name has a NUL

INTERRUPT_GRACE_S = 3.0
EXIT_STATUS_WAIT_S = 2.0  # for the session zygote to reap a session's process that ended
VALUE_CHARS = 1 << 20  # a cell's value (its repr) is cut at this many characters, or the call's output cap


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
    """Bytes kept up to a cap; `truncated` says something was dropped, `read` how many
    came in all."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.read = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        self.read += len(data)
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


class SessionManager:
    """The open sessions by id, their owners' counts, their calls; the sessions made ahead
    are the pool's (`pool`)."""

    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_sessions: int, ready: int, idle_timeout_s: int,
                 memory_mb: int, keep_peak_s: float = 900.0, cgroups: MemoryCgroups | None = None,
                 makers: int = 2, recycle_jails: bool = True, output_cap: int = 16 << 20,
                 display_bytes: int = 8 << 20) -> None:
        """output_cap: the server's own cap on a stream of one call (a cell past it is
        interrupted); display_bytes: what a cell's displays may come to, as JSON."""
        self.spec = spec  # toolserver.python.jails.session_spec
        self.output_cap = output_cap
        self.display_bytes = display_bytes
        self.max_sessions = min(max_sessions, len(slots))
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str, Session] = {}
        self.counts = SessionCounts()
        self.unavailable = ""  # why sessions cannot be served, once known
        self.pool = SessionPool(spec, slots, ready=min(ready, self.max_sessions), memory_mb=memory_mb,
                                room=self._room, opening=lambda: self._opening > 0, keep_peak_s=keep_peak_s,
                                cgroups=cgroups, makers=makers, recycle=recycle_jails)
        self._opening = 0
        self._opening_by: dict[str, int] = {}
        self._open_by: dict[str, int] = {}
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None

    def _room(self) -> int:
        return self.max_sessions - len(self.sessions) - self._opening

    async def start(self) -> None:
        """Starts the pool (its zygote, its making of ready sessions) and the reaper; a zygote
        that cannot start leaves the manager refusing sessions (`unavailable` says why)."""
        try:
            await self.pool.start()
        except WorkerLost as exc:
            self.refuse(f"the session zygote did not start: {exc}")
            return
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())

    def refuse(self, reason: str) -> None:
        """Stops serving sessions for reason (a failed check of their jail); the self-test
        may still open its own (SELF_TEST_OWNER) to check again."""
        self.unavailable = reason
        self.pool.stopped = True
        log.error("refusing sessions: %s", reason)

    def resume(self) -> None:
        """Serves sessions again (their jail's check passed once more)."""
        if self._closed or not self.unavailable:
            return
        log.warning("serving sessions again: %s no longer holds", self.unavailable)
        self.unavailable = ""
        self.pool.stopped = False
        self.pool.refill()

    # ---- open, call, close

    async def open(self, owner: str = "", max_for_owner: int = 0, memory_mb: int = 0, profile: str = "") -> Session:
        """Starts a session for owner with memory_mb for its code (0: none beyond the host's)
        and the guard of its import profile; max_for_owner > 0 caps how many owner may hold."""
        if self._closed:
            raise Unavailable("server is shutting down")
        if self.unavailable and owner != SELF_TEST_OWNER:
            raise Unavailable(f"sessions are not served: {self.unavailable}")
        if len(self.sessions) + self._opening >= self.max_sessions or \
                (max_for_owner and self._held_by(owner) >= max_for_owner):
            for dead in [s for s in self.sessions.values() if not s.alive and not s.lock.locked()]:
                self._end(dead)  # a session whose process died holds no place under the caps
        if max_for_owner and self._held_by(owner) >= max_for_owner:
            raise Exhausted(f"caller {owner!r} holds {max_for_owner} sessions, the most its policy allows")
        if len(self.sessions) + self._opening >= self.max_sessions:
            raise Exhausted(f"session limit reached ({self.max_sessions} open)")
        self._opening += 1
        self.pool.note_demand(len(self.sessions) + self._opening)
        self.pool.last_request = time.monotonic()
        self._opening_by[owner] = self._opening_by.get(owner, 0) + 1
        rules = None if self.spec.guard is None else self.spec.guard.profiles[profile]
        guard = None if rules is None or rules.refuses_nothing() else rules.config()
        start = asyncio.get_running_loop().create_task(self._open(owner, memory_mb, guard))
        try:
            return await asyncio.shield(start)
        except asyncio.CancelledError:
            if start in self.pool.waiting_opens:
                start.cancel()  # nothing taken yet: it waits for a slot or a session made ahead
            start.add_done_callback(self._close_orphan)
            raise

    async def _open(self, owner: str, memory_mb: int, guard: dict[str, Any] | None) -> Session:
        try:
            made = await self.pool.take(self.max_sessions)
            try:
                session = await self._start(made, owner, memory_mb, guard)
            except BaseException:
                self.pool.release(made)
                raise
            self.sessions[session.session_id] = session
            self._open_by[owner] = self._open_by.get(owner, 0) + 1
            self.counts.opened += 1
        finally:
            self._opening -= 1
            self._opening_by[owner] -= 1
            self.pool.refill()
        return session

    async def _start(self, made: ReadySession, owner: str, memory_mb: int, guard: dict[str, Any] | None) -> Session:
        process = made.process
        session = Session(uuid.uuid4().hex, made, self.idle_timeout_s, memory_mb, owner, oom_kills=made.oom_kills)
        try:
            made.cap_memory(memory_mb)
            async with asyncio.timeout(self.spec.start_timeout_s):
                await process.send(SessionStart(memory_mb, guard).wire())
                serving = await process.receive(START_FRAME_BYTES)
            if session_state(serving) != "serving":
                raise WorkerLost(f"the session did not serve: {serving!r}")
        except (WorkerLost, TimeoutError, OSError) as exc:
            raise Unavailable(f"the session did not start: {exc!r}") from exc
        return session

    def _close_orphan(self, start: asyncio.Task[Session]) -> None:
        """The OpenSession that started this session was cancelled: nobody will use it."""
        if not start.cancelled() and start.exception() is None:
            self._end(start.result())

    def _held_by(self, owner: str) -> int:
        return self._opening_by.get(owner, 0) + self._open_by.get(owner, 0)

    def get(self, session_id: str, owner: str = "") -> Session:
        """The owner's session; another caller's session is NOT_FOUND, as an unknown one."""
        session = self.sessions.get(session_id)
        if session is None or not session.alive or session.owner != owner:
            raise NotFound(f"unknown or closed session {session_id!r}")
        return session

    async def close(self, session_id: str, owner: str = "") -> None:
        self.pool.last_request = time.monotonic()
        self._end(self.get(session_id, owner))

    def _end(self, session: Session, evicted: bool = False) -> None:
        """Ends a session at once (its process killed, its place free) and hands its jail to
        the pool to destroy behind it; once, whoever reaches it first."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.session_id, None)
        self._open_by[session.owner] -= 1
        if not self._open_by[session.owner]:
            del self._open_by[session.owner]
        self.counts.closed += 1
        self.counts.evicted += evicted
        self.pool.release(session.made, recycle=True)

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
        """The cell's answer as the session gives it (CallReply.from_wire, its outcome
        decided in the jail), with what only the host knows: the output it read (what the
        session wrote since the last call first), an interrupt it sent, output past a cap,
        a session that broke or whose process ended.

        Output past max_output_bytes is cut from the answer while the cell runs on; a stream
        past the server's own cap (output_cap) interrupts it there."""
        process = session.process
        outputs = {"stdout": OutputCap(max_output_bytes), "stderr": OutputCap(max_output_bytes)}
        started = time.monotonic()
        reply: CallReply | None = None
        interrupted = False
        broken = ""
        cell = CellRequest(secrets.token_hex(8), code, stdin, min(max_output_bytes, VALUE_CHARS), self.display_bytes)
        stopped: list[str] = []  # the streams that went past output_cap: the cell is interrupted there

        def printed(name: str, data: bytes) -> None:
            outputs[name].add(data)
            if outputs[name].read > self.output_cap and name not in stopped:
                stopped.append(name)
                process.signal(signal.SIGINT)

        if process.unasked():
            broken = "the session wrote on its control socket between calls"
        else:
            process.listen(printed)  # first what the session wrote since its last call: a thread's, a child's
            try:
                frame, interrupted = await self._answer(session, cell, timeout_ms / 1000.0,
                                                        result_frame_bytes(cell.value_chars, cell.display_bytes),
                                                        abandoned)
                reply = None if frame is None else cell_reply(frame, cell)
            except ProtocolBroken as exc:
                broken = str(exc)
            except WorkerLost:
                pass
            finally:
                process.listen(None)
        if reply is None:
            reply = await self._lost(session, broken, interrupted, timeout_ms)
        elif stopped:
            reply.outcome, reply.exit_code, reply.error = "OUTPUT_LIMIT", 1, (
                f"output limit of {self.output_cap} bytes exceeded on {' and '.join(stopped)}: interrupted there, "
                "session kept")
        elif interrupted and reply.outcome == "ERROR" and reply.error == "KeyboardInterrupt":
            reply.outcome, reply.exit_code, reply.error = (
                "TIMEOUT", -1, f"time limit of {timeout_ms} ms exceeded; interrupted, session kept")
        reply.stdout, reply.stderr = outputs["stdout"].text(), outputs["stderr"].text()
        reply.truncated = reply.truncated or outputs["stdout"].truncated or outputs["stderr"].truncated
        reply.elapsed_us = int((time.monotonic() - started) * 1e6)
        return reply

    async def _lost(self, session: Session, broken: str, interrupted: bool, timeout_ms: int) -> CallReply:
        """The answer to a cell that gave none, and the session's end: it broke its protocol,
        did not stop when interrupted, or its process ended (as a kernel that dies: the
        program's exit status, or the signal that ended it, as python3 would end)."""
        process = session.process
        if broken:
            reply = CallReply("", "CRASHED", exit_code=-1, error=f"{broken}: the session broke its protocol and is closed")
        elif interrupted and session.alive and not process.ended:
            reply = CallReply("", "TIMEOUT", exit_code=-1,
                              error=f"time limit of {timeout_ms} ms exceeded; the session did not stop, session closed")
        else:
            reply = ended_reply(await process.wait_status(EXIT_STATUS_WAIT_S))
        self._end(session)
        return reply

    async def _answer(self, session: Session, cell: CellRequest, timeout_s: float, max_size: int,
                      abandoned: asyncio.Event) -> tuple[dict[str, Any] | None, bool]:
        """Sends cell and waits for the session's answer: until timeout_s, or until the
        caller goes away (abandoned), then interrupts it and waits INTERRUPT_GRACE_S more.
        Returns the answer (None: none came) and whether the call was interrupted; raises
        WorkerLost (ProtocolBroken)."""
        process = session.process
        await process.send(cell.wire())
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
        """Closes idle sessions, and has the pool give back what it no longer wants made ahead."""
        while not self._closed:
            await asyncio.sleep(1.0)
            self.pool.trim()
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.lock.locked():
                    continue
                if not session.alive:
                    self._end(session)
                elif now - session.last_used > session.idle_timeout_s:
                    log.info("closing session %s (idle)", session.session_id)
                    self._end(session, evicted=True)

    async def shutdown(self) -> None:
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        for session in list(self.sessions.values()):
            self._end(session)
        await self.pool.shutdown()


def ended_reply(status: int | None) -> CallReply:
    """The answer to a cell whose session's process ended with wait status status (None:
    unknown): its exit status as python3's (`os._exit(7)`: ERROR, 7), or the signal that
    killed it (CRASHED, minus the signal)."""
    closed = "the session's process ended; the session is closed"
    if status is None or not (os.WIFSIGNALED(status) or os.WIFEXITED(status)):
        return CallReply("", "CRASHED", exit_code=-1, error="the session's process died; the session is closed")
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        return CallReply("", "CRASHED", exit_code=-signum, error=f"killed by signal {name}; {closed}")
    code = os.WEXITSTATUS(status)
    if code == 0:
        return CallReply("", "OK", exit_code=0)  # python3 ended well; the next call finds no session
    return CallReply("", "ERROR", exit_code=code, error=f"exited with status {code}; {closed}")


def result_frame_bytes(value_chars: int, display_bytes: int) -> int:
    """The largest result frame a session may send: a value of value_chars characters,
    each at most 12 bytes as JSON escapes it, displays of display_bytes as JSON (and the
    commas between them), and room for the rest."""
    return 12 * value_chars + display_bytes + display_bytes // 8 + 65536


# What a session's cell may report of itself; the host names the rest (TIMEOUT past its
# time, OUTPUT_LIMIT, CRASHED). A frame with another, or another call's token, is broken.
CELL_OUTCOMES = ("OK", "ERROR", "MEMORY_LIMIT", "DENIED")


def cell_reply(frame: dict[str, Any], cell: CellRequest) -> CallReply:
    """The session's answer to cell, read as a zygote's; raises ProtocolBroken for one that
    is not cell's (its token), not of the shape, or of an outcome a cell cannot have."""
    try:
        reply = CallReply.from_wire(frame)
    except (TypeError, ValueError) as exc:
        raise ProtocolBroken(f"the session answered with a frame of the wrong shape: {exc}") from exc
    if reply.id != cell.id:
        raise ProtocolBroken("the session answered with a frame that is not this call's")
    if reply.outcome not in CELL_OUTCOMES:
        raise ProtocolBroken(f"the session answered with outcome {reply.outcome[:40]!r}")
    reply.id, reply.stdout, reply.stderr, reply.files = "", "", "", {}  # the host's own reading of those
    return reply


def open_files_wanted(max_sessions: int) -> int:
    """Descriptors the server holds per session (4 of its own, 3 of its jail's firejail
    pipes) with room for the rest."""
    return 7 * max_sessions + 4096


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
