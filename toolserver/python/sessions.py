"""Stateful Python sessions: one Jupyter kernel per session, each in its own jail.

The kernel (`sandbox/kernel.py` around ipykernel) runs through the same firejail command
line as the workers, as its own slot uid, with no network, the guard of the caller's
import profile, the jail's seccomp layer, its home tmpfs capped like a call's, and, where
the host allows, a memory cgroup over all its processes. Its ZeroMQ `ipc` sockets lie in
its private home; the server reaches them through `/proc/<pid>/root`, so no host
directory is shared. The server's sockets refuse oversized messages and queue few, and a
reader per session drains what the kernel publishes, so output that no call asked for
(a background thread printing) is dropped as it arrives instead of piling up.

Calls on one session run one at a time. A call past its timeout is interrupted; a kernel
that does not come back, or dies, ends its session. Idle sessions are closed by a reaper.
An OpenSession whose caller goes away while the kernel starts leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient

from sandbox.calls import CallReply
from sandbox.cgroups import MemoryCgroups, SlotCgroups
from sandbox.hostside import UNIX_PATH_MAX, jail_view
from sandbox.jail import Slot
from sandbox.slots import kill_slot_processes, prepare_scratch
from sandbox.worker import CONFINE_SOURCE, GUARD_SOURCE, KERNEL_SOURCE, JailedProcess, WorkerLost, ZygoteSpec
from toolserver.errors import Exhausted, NotFound, Unavailable

log = logging.getLogger(__name__)

INTERRUPT_GRACE_S = 3.0
EOF = "\x04"  # an input_reply of ^D makes ipykernel raise EOFError
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PORTS = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5}
RECEIVE_QUEUE = 32   # messages a server socket holds before ZeroMQ drops (iopub) or blocks
CALL_INBOX = 64      # a call's messages waiting to be read; the reader waits past it


class KernelProcess(JailedProcess):
    label = "session kernel"


@dataclass
class KernelSession:
    session_id: str
    slot: Slot
    kernel: KernelProcess
    client: AsyncKernelClient
    idle_timeout_s: int
    memory_mb: int
    owner: str = ""
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False
    inbox: tuple[str, asyncio.Queue[dict[str, Any]]] | None = None  # the running call's id and messages
    reader: asyncio.Task[None] | None = None
    oom_kills: int = 0

    @property
    def alive(self) -> bool:
        return self.kernel.alive and not self.closed


class OutputCap:
    """Text kept up to a byte cap per stream; `truncated` says something was dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def add(self, text: str) -> None:
        if self.size >= self.cap:
            self.truncated = self.truncated or bool(text)
            return
        data = text.encode("utf-8", errors="replace")
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[:room]
        if data:
            self.parts.append(data.decode("utf-8", errors="ignore"))
            self.size += len(data)

    def text(self) -> str:
        return "".join(self.parts)


class SessionManager:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_sessions: int, idle_timeout_s: int,
                 max_message_text: int, cgroups: MemoryCgroups | None = None) -> None:
        self.spec = spec  # toolserver.python.jails.kernel_spec
        self.free_slots = list(slots)
        self._releasing = 0                   # slots being cleaned after their session ended
        self._slot_returned = asyncio.Event()
        self.max_sessions = min(max_sessions, len(slots))
        self.idle_timeout_s = idle_timeout_s
        self.max_message_text = max_message_text
        self.sessions: dict[str, KernelSession] = {}
        self._opening = 0
        self._opening_by: dict[str, int] = {}
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._slot_cgroups = SlotCgroups(cgroups)
        # One context for every client (a context of its own each would hold an I/O thread
        # and its descriptors); its sockets take no message larger than a capped one.
        self.context = zmq.asyncio.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, 8 * max_message_text + (256 << 10))
        self.context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)

    def start(self) -> None:
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())

    async def open(self, owner: str = "", max_for_owner: int = 0, memory_mb: int = 0,
                   profile: str = "") -> KernelSession:
        """Starts a session for owner with memory_mb for its code (0: none beyond the host's)
        and the guard's import profile; max_for_owner > 0 caps how many owner may hold. If the caller goes away while the
        kernel starts, the session is closed as soon as it is up."""
        if self._closed:
            raise Unavailable("server is shutting down")
        for dead in [s for s in self.sessions.values() if not s.alive and not s.lock.locked()]:
            await self._kill(dead)  # a kernel that died holds no place under the caps
        if max_for_owner and self._held_by(owner) >= max_for_owner:
            raise Exhausted(f"caller {owner!r} holds {max_for_owner} sessions, the most its policy allows")
        while not self.free_slots and self._releasing:  # a session just ended: its slot is on its way
            self._slot_returned.clear()
            await self._slot_returned.wait()
        if len(self.sessions) + self._opening >= self.max_sessions or not self.free_slots:
            raise Exhausted(f"session limit reached ({self.max_sessions} open)")
        slot = self.free_slots.pop()
        self._opening += 1
        self._opening_by[owner] = self._opening_by.get(owner, 0) + 1
        start = asyncio.get_running_loop().create_task(self._start_session(slot, owner, memory_mb, profile))
        try:
            return await asyncio.shield(start)
        except asyncio.CancelledError:
            start.add_done_callback(self._close_orphan)
            raise

    def _close_orphan(self, start: asyncio.Task[KernelSession]) -> None:
        """The OpenSession that started this session was cancelled: nobody will use it."""
        if not start.cancelled() and start.exception() is None:
            self._spawn(self._kill(start.result()))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _held_by(self, owner: str) -> int:
        return self._opening_by.get(owner, 0) + sum(1 for s in self.sessions.values() if s.owner == owner)

    async def _start_session(self, slot: Slot, owner: str, memory_mb: int, profile: str) -> KernelSession:
        try:
            session = await self._start_kernel(slot, owner, memory_mb, profile)
        except BaseException:
            await self._release_slot(slot)
            raise
        finally:
            self._opening -= 1
            self._opening_by[owner] -= 1
        self.sessions[session.session_id] = session
        return session

    async def _start_kernel(self, slot: Slot, owner: str, memory_mb: int, profile: str) -> KernelSession:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, prepare_scratch, slot)
        connection = {**PORTS, "transport": "ipc", "key": secrets.token_hex(16),
                      "signature_scheme": "hmac-sha256", "kernel_name": ""}
        try:
            cgroup = await loop.run_in_executor(None, self._slot_cgroups.of, slot.name)
        except OSError as exc:
            raise Unavailable(f"session kernel did not start: no memory cgroup: {exc}") from exc
        kernel = KernelProcess(slot, cgroup)
        guard = self.spec.guard
        try:
            await kernel.launch(self.spec, "kernel", KERNEL_SOURCE, {
                "connection": connection, "memory_mb": memory_mb, "max_message_text": self.max_message_text,
                "confine_source": CONFINE_SOURCE, "guard_source": GUARD_SOURCE,
                "guard": None if guard is None else guard.profiles[profile].config(),
                "preload": list(self.spec.preload),
            })
        except WorkerLost as exc:
            raise Unavailable(f"session kernel did not start: {exc}") from exc
        client: AsyncKernelClient | None = None
        try:
            assert kernel.inside is not None
            ip = jail_view(kernel.inside, slot.scratch / "kernel")
            if len(f"{ip}-{max(PORTS.values())}") > UNIX_PATH_MAX:
                raise Unavailable(f"session socket path {ip!r} is too long: shorten sandbox.scratch_root")
            client = AsyncKernelClient(context=self.context)
            client.load_connection_info({**connection, "ip": ip})
            client.start_channels()
            # The kernel binds its sockets only after this monitor is on, so that the stdin
            # handshake cannot pass unseen.
            stdin_socket = client.stdin_channel.socket
            stdin_monitor = stdin_socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
            session = KernelSession(uuid.uuid4().hex, slot, kernel, client, self.idle_timeout_s, memory_mb, owner,
                                    oom_kills=cgroup.oom_kills() if cgroup is not None else 0)
            try:
                async with asyncio.timeout(self.spec.start_timeout_s):
                    await kernel.write(b"g")
                    serving = await kernel.read_frame()
                    if not serving.get("serving"):
                        raise RuntimeError(f"kernel did not serve: {serving!r}")
                    await self._wait_ready(session, stdin_monitor)
            finally:
                stdin_socket.disable_monitor()
                stdin_monitor.close(linger=0)
            if cgroup is not None:  # what its code may add to the warm kernel
                cgroup.set_limit_mb(cgroup.usage_mb() + memory_mb if memory_mb else 0)
        except BaseException as exc:
            await self._stop_kernel(kernel, client)
            if isinstance(exc, (TimeoutError, RuntimeError, OSError, WorkerLost)):
                raise Unavailable(f"session kernel did not start: {exc!r}; "
                                  f"stderr: {kernel.stderr_tail.strip()[-300:]}") from exc
            raise
        session.reader = loop.create_task(self._read_iopub(session))
        return session

    async def _wait_ready(self, session: KernelSession, stdin_monitor: zmq.asyncio.Socket) -> None:
        """Until the kernel knows our stdin socket and answers kernel_info on shell and iopub.

        The kernel's stdin is a ROUTER: an input_request sent before our socket's
        handshake is silently dropped and input() would wait forever. iopub is a SUB
        socket: messages published before it joined are lost, so a kernel is ready
        only once a kernel_info's status messages arrive.
        """
        while not await stdin_monitor.poll(500):
            raise_if_exited(session)
        await stdin_monitor.recv_multipart()
        client = session.client
        while True:
            raise_if_exited(session)
            msg_id = client.kernel_info()
            try:
                while True:
                    reply = await client.get_shell_msg(timeout=0.5)
                    if reply["parent_header"].get("msg_id") == msg_id:
                        break
                while True:
                    message = await client.get_iopub_msg(timeout=0.5)
                    if message["parent_header"].get("msg_id") == msg_id:
                        return
            except Exception:  # queue.Empty from the client: not ready yet
                continue

    async def _read_iopub(self, session: KernelSession) -> None:
        """Hands each message the kernel publishes to the call it belongs to; the rest
        (output of no call in flight) is dropped as it arrives."""
        channel = session.client.iopub_channel
        while not session.closed:
            try:
                message = await channel.get_msg(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception:  # queue.Empty, or a channel closed under us
                if not session.alive:
                    return
                continue
            inbox = session.inbox
            if inbox is not None and message["parent_header"].get("msg_id") == inbox[0]:
                await inbox[1].put(message)

    def get(self, session_id: str, owner: str = "") -> KernelSession:
        """The owner's session; another caller's session is NOT_FOUND, as an unknown one."""
        session = self.sessions.get(session_id)
        if session is None or not session.alive or session.owner != owner:
            raise NotFound(f"unknown or closed session {session_id!r}")
        return session

    async def close(self, session_id: str, owner: str = "") -> None:
        await self._kill(self.get(session_id, owner))

    async def _kill(self, session: KernelSession) -> None:
        """Ends a session and frees its slot, once: close, a failed call and the
        reaper may all reach the same session."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.session_id, None)
        if session.reader is not None:
            session.reader.cancel()
        self._releasing += 1  # its slot is on its way back from now on: OpenSession waits for it
        try:
            await self._stop_kernel(session.kernel, session.client)
        finally:
            self._releasing -= 1
        await self._release_slot(session.slot)

    async def _stop_kernel(self, kernel: KernelProcess, client: AsyncKernelClient | None) -> None:
        """Closes the client's sockets and kills the jail with everything its uid runs."""
        if client is not None:
            try:
                client.stop_channels()
            except Exception as exc:  # a broken channel must not keep the slot
                log.warning("closing the channels of a session on %s: %r", kernel.slot.name, exc)
        await kernel.kill()

    async def _release_slot(self, slot: Slot) -> None:
        self._releasing += 1
        try:
            await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, slot)
            self.free_slots.append(slot)
        finally:
            self._releasing -= 1
            self._slot_returned.set()

    async def execute(self, session_id: str, owner: str, code: str, stdin: str, timeout_ms: int,
                      max_output_bytes: int) -> CallReply:
        """Runs code in the owner's session; returns a reply as a zygote's (with no id)."""
        session = self.get(session_id, owner)
        async with session.lock:  # the reaper leaves a locked session alone
            if not session.alive:
                raise NotFound(f"session {session_id!r} was closed")
            try:
                reply = await self._run(session, code, stdin, timeout_ms, max_output_bytes)
            finally:
                session.last_used = time.monotonic()
            self._account_memory(session, reply)
            return reply

    def _account_memory(self, session: KernelSession, reply: CallReply) -> None:
        """Applies the OOM kills of the session's cgroup during the call to reply."""
        cgroup = session.kernel.cgroup
        if cgroup is None:
            return
        kills = cgroup.oom_kills()
        ended = "; the session is closed" if not session.alive else ""
        reply.note_oom_kills(kills - session.oom_kills,
                             f"session memory limit of {session.memory_mb} MB reached by its processes together{ended}")
        session.oom_kills = kills

    async def _run(self, session: KernelSession, code: str, stdin: str, timeout_ms: int,
                   max_output_bytes: int) -> CallReply:
        client = session.client
        stdout, stderr = OutputCap(max_output_bytes), OutputCap(max_output_bytes)
        lines = stdin.splitlines()
        reply = CallReply("", "OK")
        started = time.monotonic()
        deadline = started + timeout_ms / 1000.0
        value_cut = False
        messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue(CALL_INBOX)
        msg_id = client.execute(code, store_history=False, allow_stdin=True)
        session.inbox = (msg_id, messages)
        stdin_task = asyncio.get_running_loop().create_task(self._answer_input(client, lines))
        interrupted = False
        try:
            while True:
                now = time.monotonic()
                if not session.kernel.alive:
                    reply.outcome, reply.exit_code, reply.error = (
                        "CRASHED", -1, "session kernel died; the session is closed")
                    await self._kill(session)
                    break
                if now >= deadline:
                    if interrupted:
                        reply.outcome, reply.exit_code, reply.error = (
                            "TIMEOUT", -1, f"time limit of {timeout_ms} ms exceeded; the kernel did not stop, session closed")
                        await self._kill(session)
                        break
                    self._interrupt(session)
                    interrupted = True
                    deadline = now + INTERRUPT_GRACE_S
                try:
                    message = await asyncio.wait_for(messages.get(), min(0.2, max(deadline - now, 0.01)))
                except asyncio.TimeoutError:
                    continue
                kind, content = message["msg_type"], message["content"]
                cut = bool(content.get("truncated"))
                if kind == "stream":
                    target = stdout if content.get("name") == "stdout" else stderr
                    target.add(str(content.get("text", "")))
                    target.truncated = target.truncated or cut
                elif kind == "execute_result":
                    value = str(content.get("data", {}).get("text/plain", ""))
                    value_cut = cut or len(value) > max_output_bytes
                    reply.value = value[:max_output_bytes]
                elif kind == "display_data":
                    stdout.add(str(content.get("data", {}).get("text/plain", "")) + "\n")
                    stdout.truncated = stdout.truncated or cut
                elif kind == "error":
                    stderr.add(strip_ansi("\n".join(map(str, content.get("traceback", [])))) + "\n")
                    stderr.truncated = stderr.truncated or cut
                    reply.outcome, reply.exit_code, reply.error = kernel_error(
                        str(content.get("ename", "Error")), content.get("evalue", ""), interrupted, timeout_ms)
                elif kind == "status" and content.get("execution_state") == "idle":
                    break
        finally:
            session.inbox = None
            stdin_task.cancel()
        reply.stdout, reply.stderr = stdout.text(), stderr.text()
        reply.truncated = stdout.truncated or stderr.truncated or value_cut
        reply.elapsed_us = int((time.monotonic() - started) * 1e6)
        return reply

    async def _answer_input(self, client: AsyncKernelClient, pending: list[str]) -> None:
        """Answers input() in the kernel with the call's stdin, line by line; past its
        end input() raises EOFError, as it does in a fresh interpreter."""
        while True:
            try:
                message = await client.get_stdin_msg(timeout=0.2)
            except Exception:  # queue.Empty: no input() yet; cancellation is not an Exception
                continue
            if message["msg_type"] == "input_request":
                client.input(pending.pop(0) if pending else EOF)

    def _interrupt(self, session: KernelSession) -> None:
        message = session.client.session.msg("interrupt_request", content={})
        session.client.control_channel.send(message)

    async def _reap_idle(self) -> None:
        while not self._closed:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if not session.lock.locked() and (now - session.last_used > session.idle_timeout_s or not session.alive):
                    log.info("closing session %s (idle or dead)", session.session_id)
                    await self._kill(session)

    async def shutdown(self) -> None:
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        await asyncio.gather(*(self._kill(s) for s in list(self.sessions.values())), return_exceptions=True)
        await asyncio.gather(*list(self._background), return_exceptions=True)
        self._slot_cgroups.remove_all()
        self.context.destroy(linger=0)


def kernel_error(name: str, evalue: Any, interrupted: bool, timeout_ms: int) -> tuple[str, int, str]:
    """The outcome, exit code and error of a call whose code raised name (evalue): a
    KeyboardInterrupt the server's interrupt caused is its time limit."""
    if interrupted and name == "KeyboardInterrupt":
        return "TIMEOUT", -1, f"time limit of {timeout_ms} ms exceeded; interrupted, session kept"
    if name == "MemoryError":
        return "MEMORY_LIMIT", 1, "MemoryError: session memory limit reached"
    if name in ("ImportDenied", "ActionDenied"):
        return "DENIED", 1, f"{name}: {evalue}"
    return "ERROR", 1, f"{name}: {evalue}"


def raise_if_exited(session: KernelSession) -> None:
    if not session.kernel.alive:
        raise RuntimeError("kernel exited")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)
