"""Stateful Python sessions: one Jupyter kernel per session, each in its own jail.

The kernel (ipykernel) is started through the same firejail command line as the
workers, as its own slot uid, with no network: it talks to the server over ZeroMQ
`ipc` sockets in a directory of its own that the jail shares with the host (its home
is a private tmpfs the host cannot see); Unix sockets cross the network namespace. Calls on
one session run one at a time. A call past its timeout is interrupted; a kernel that
does not come back, or dies, ends its session. Idle sessions are closed by a reaper.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import write_connection_file

from sandbox.jail import JailPolicy, Slot
from sandbox.slots import kill_slot_processes, prepare_private_directory, prepare_scratch, running_as_root
from sandbox.worker import ZygoteSpec, spawn_jailed
from toolserver.errors import Exhausted, NotFound, Unavailable

log = logging.getLogger(__name__)

INTERRUPT_GRACE_S = 3.0
# firejail drops TMPDIR from the environment; the home is the only writable place.
KERNEL_BOOTSTRAP = ("import os, runpy, sys\n"
                    "os.environ['TMPDIR'] = os.environ['HOME']\n"
                    "sys.argv[0] = 'ipykernel_launcher'\n"
                    "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)\n")
EOF = "\x04"  # an input_reply of ^D makes ipykernel raise EOFError
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class KernelSession:
    session_id: str
    slot: Slot
    process: asyncio.subprocess.Process
    client: AsyncKernelClient
    idle_timeout_s: int
    owner: str = ""
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.closed


class OutputCap:
    """Text kept up to a byte cap per stream; `truncated` says something was dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def add(self, text: str) -> None:
        data = text.encode("utf-8", errors="replace")
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self.parts.append(data.decode("utf-8", errors="ignore"))
            self.size += len(data)

    def text(self) -> str:
        return "".join(self.parts)


class SessionManager:
    def __init__(self, spec: ZygoteSpec, slots: list[Slot], *, max_sessions: int, idle_timeout_s: int,
                 start_timeout_s: float, memory_mb: int, ipc_root: Path) -> None:
        self.spec = ZygoteSpec(
            interpreter=spec.interpreter,
            jail=JailPolicy(**{**spec.jail.__dict__, "memory_mb": memory_mb}),
            insecure_no_sandbox=spec.insecure_no_sandbox,
        )
        self.free_slots = list(slots)
        self._releasing = 0                   # slots being cleaned after their session ended
        self._slot_returned = asyncio.Event()
        self.max_sessions = min(max_sessions, len(slots))
        self.idle_timeout_s = idle_timeout_s
        self.start_timeout_s = start_timeout_s
        self.ipc_root = ipc_root
        self.sessions: dict[str, KernelSession] = {}
        self._opening = 0
        self._opening_by: dict[str, int] = {}
        self._closed = False
        self._reaper: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())

    async def open(self, owner: str = "", max_for_owner: int = 0) -> KernelSession:
        """Starts a session for owner; max_for_owner > 0 caps how many owner may hold."""
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
        try:
            session = await self._start_kernel(slot, owner)
        except BaseException:
            await self._release_slot(slot)
            raise
        finally:
            self._opening -= 1
            self._opening_by[owner] -= 1
        self.sessions[session.session_id] = session
        return session

    def _held_by(self, owner: str) -> int:
        return self._opening_by.get(owner, 0) + sum(1 for s in self.sessions.values() if s.owner == owner)

    async def _start_kernel(self, slot: Slot, owner: str) -> KernelSession:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, prepare_scratch, slot)
        ipc = self.ipc_root / slot.name
        await loop.run_in_executor(None, prepare_private_directory, ipc, slot.uid, slot.gid)
        connection_file = str(ipc / "kernel.json")
        write_connection_file(connection_file, transport="ipc", ip=str(ipc / "kernel"),
                              key=secrets.token_hex(16).encode(), signature_scheme="hmac-sha256")
        if running_as_root():
            os.chown(connection_file, slot.uid, slot.gid)
        program = [self.spec.interpreter, "-I", "-c", KERNEL_BOOTSTRAP, "-f", connection_file,
                   "--transport=ipc", "--HistoryManager.enabled=False",
                   "--IPKernelApp.quiet=True"]
        process = await spawn_jailed(self.spec, slot, program, (str(ipc),), stdin=asyncio.subprocess.DEVNULL,
                                     stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        client = AsyncKernelClient(connection_file=connection_file)
        client.load_connection_file()
        client.start_channels()
        # The kernel cannot have bound its sockets yet, so no handshake precedes this monitor.
        stdin_socket = client.stdin_channel.socket
        stdin_monitor = stdin_socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        session = KernelSession(uuid.uuid4().hex, slot, process, client, self.idle_timeout_s, owner)
        try:
            try:
                await asyncio.wait_for(self._wait_ready(session, stdin_monitor), self.start_timeout_s)
            finally:
                stdin_socket.disable_monitor()
                stdin_monitor.close(linger=0)
        except (asyncio.TimeoutError, RuntimeError) as exc:
            await self._stop_kernel(session)  # open() frees the slot
            raise Unavailable(f"session kernel did not start: {exc!r}") from exc
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
        await self._stop_kernel(session)
        await self._release_slot(session.slot)

    async def _stop_kernel(self, session: KernelSession) -> None:
        try:
            session.client.stop_channels()
        except Exception as exc:  # a broken channel must not keep the slot
            log.warning("closing channels of session %s: %r", session.session_id, exc)
        if session.process.returncode is None:
            try:
                os.killpg(session.process.pid, 9)
            except ProcessLookupError:
                pass
            await session.process.wait()

    async def _release_slot(self, slot: Slot) -> None:
        self._releasing += 1
        try:
            await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, slot)
            self.free_slots.append(slot)
        finally:
            self._releasing -= 1
            self._slot_returned.set()

    async def execute(self, session_id: str, owner: str, code: str, stdin: str, timeout_ms: int,
                      max_output_bytes: int) -> dict[str, Any]:
        """Runs code in the owner's session; returns a reply shaped like a zygote's."""
        session = self.get(session_id, owner)
        async with session.lock:  # the reaper leaves a locked session alone
            if not session.alive:
                raise NotFound(f"session {session_id!r} was closed")
            try:
                return await self._run(session, code, stdin, timeout_ms, max_output_bytes)
            finally:
                session.last_used = time.monotonic()

    async def _run(self, session: KernelSession, code: str, stdin: str, timeout_ms: int,
                   max_output_bytes: int) -> dict[str, Any]:
        client = session.client
        stdout, stderr = OutputCap(max_output_bytes), OutputCap(max_output_bytes)
        lines = stdin.splitlines()
        reply: dict[str, Any] = {"outcome": "OK", "value": "", "error": "", "exit_code": 0}
        started = time.monotonic()
        deadline = started + timeout_ms / 1000.0
        msg_id = client.execute(code, store_history=False, allow_stdin=True)
        stdin_task = asyncio.get_running_loop().create_task(self._answer_input(client, lines))
        interrupted = False
        try:
            while True:
                now = time.monotonic()
                if session.process.returncode is not None:
                    reply.update(outcome="CRASHED", error="session kernel died; the session is closed", exit_code=-1)
                    await self._kill(session)
                    break
                if now >= deadline:
                    if interrupted:
                        reply.update(outcome="TIMEOUT", exit_code=-1,
                                     error=f"time limit of {timeout_ms} ms exceeded; the kernel did not stop, session closed")
                        await self._kill(session)
                        break
                    self._interrupt(session)
                    interrupted = True
                    deadline = now + INTERRUPT_GRACE_S
                try:
                    message = await client.get_iopub_msg(timeout=min(0.2, max(deadline - now, 0.01)))
                except Exception:  # queue.Empty: nothing yet
                    continue
                if message["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = message["msg_type"], message["content"]
                if kind == "stream":
                    (stdout if content.get("name") == "stdout" else stderr).add(content.get("text", ""))
                elif kind == "execute_result":
                    reply["value"] = content.get("data", {}).get("text/plain", "")[:max_output_bytes]
                elif kind == "display_data":
                    stdout.add(content.get("data", {}).get("text/plain", "") + "\n")
                elif kind == "error":
                    stderr.add(strip_ansi("\n".join(content.get("traceback", []))) + "\n")
                    name = content.get("ename", "Error")
                    if interrupted and name == "KeyboardInterrupt":
                        reply.update(outcome="TIMEOUT", exit_code=-1,
                                     error=f"time limit of {timeout_ms} ms exceeded; interrupted, session kept")
                    elif name == "MemoryError":
                        reply.update(outcome="MEMORY_LIMIT", exit_code=1, error="MemoryError: session memory limit reached")
                    else:
                        reply.update(outcome="ERROR", exit_code=1, error=f"{name}: {content.get('evalue', '')}")
                elif kind == "status" and content.get("execution_state") == "idle":
                    break
        finally:
            stdin_task.cancel()
        reply.update(stdout=stdout.text(), stderr=stderr.text(), truncated=stdout.truncated or stderr.truncated,
                     elapsed_us=int((time.monotonic() - started) * 1e6))
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


def raise_if_exited(session: KernelSession) -> None:
    if session.process.returncode is not None:
        raise RuntimeError(f"kernel exited with status {session.process.returncode}")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text)
