"""Host side of stateful sessions: the session zygote, the jails made ahead for sessions,
and one session's process (`sandbox/session_zygote.py` is the other side).

A session is a process forked from one warm zygote into a jail of its slot's own: the
same firejail command line as a worker's, as the slot's uid, with a holder that keeps the
jail alive. The host talks to a session over three descriptors it made: a stream socket
for frames (start, calls, results) and a pipe each for stdout and stderr, which it reads
as they come. Nothing here decides policy (how many, when to close): that is the session
manager's job (`toolserver/python/sessions.py`).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import signal
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sandbox.cgroups import MemoryCgroup
from sandbox.jail import Slot, jail_environment, runtime_environment
from sandbox.slots import kill_slot_processes
from sandbox.worker import (BOOTSTRAP, CONFINE_SOURCE, GUARD_SOURCE, ZYGOTE_SOURCE, JailedProcess, WorkerLost,
                            ZygoteSpec)

log = logging.getLogger(__name__)

SESSION_ZYGOTE_SOURCE = (Path(__file__).parent / "session_zygote.py").read_text()
READ_CHUNK = 1 << 16
# The jail's holder: says where it is, then becomes a process that only waits.
HOLDER_SOURCE = (
    "import json, os, struct\n"
    "hello = json.dumps({'ready': True, 'pid': os.getpid()}).encode()\n"
    "os.write(1, struct.pack('>I', len(hello)) + hello)\n"
    "os.execv('/bin/sleep', ['sleep', 'infinity'])\n"
)


class SessionJail(JailedProcess):
    """A jail made ahead of time for one session: firejail and its holder, in one slot."""

    label = "session jail"

    async def kill(self) -> None:
        """Kills the jail and every process of its session. With the slot's memory cgroup,
        which holds all of them (the jail's from its start, the session's from its fork,
        whatever they started since), that is the cgroup's processes: no scan of every
        process of the host, which a thousand sessions closing at once cannot afford."""
        if self.cgroup is None:
            await super().kill()
            return
        process = self._process
        self.signal_kill()
        loop = asyncio.get_running_loop()
        if not await loop.run_in_executor(None, self.cgroup.kill_all):
            await loop.run_in_executor(None, kill_slot_processes, self.slot)
        if process is not None:
            await process.wait()
        self.stop_watching()


class SessionZygote:
    """The warm root interpreter that forks sessions into their jails."""

    def __init__(self, spec: ZygoteSpec) -> None:
        self.spec = spec
        self.hello: dict[str, Any] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._control: socket.socket | None = None
        self._lock = asyncio.Lock()
        self._requests = 0
        self._stderr: asyncio.Task[None] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> dict[str, Any]:
        """Starts the zygote and waits until it is warm; raises WorkerLost."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        control_fd = theirs.fileno()
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.spec.interpreter, "-I", "-c", BOOTSTRAP, env=runtime_environment(self.spec.interpreter),
                cwd="/", start_new_session=True, close_fds=True, pass_fds=(control_fd,),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            ours.close()
            raise WorkerLost(f"cannot start the session zygote: {exc}") from exc
        finally:
            theirs.close()
        ours.setblocking(False)
        self._control = ours
        self._stderr = asyncio.get_running_loop().create_task(self._log_stderr())
        config = {"control_fd": control_fd, "preload": list(self.spec.preload), "huge_pages": self.spec.huge_pages,
                  "confine_source": CONFINE_SOURCE, "guard_source": GUARD_SOURCE, "zygote_source": ZYGOTE_SOURCE}
        payload = json.dumps({"config": config, "source": SESSION_ZYGOTE_SOURCE, "name": "session_zygote"}).encode()
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(b"%010d" % len(payload) + payload)
            await self._process.stdin.drain()
            async with asyncio.timeout(self.spec.start_timeout_s):
                (size,) = struct.unpack(">I", await self._process.stdout.readexactly(4))
                self.hello = json.loads(await self._process.stdout.readexactly(size))
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            await self.close()
            raise WorkerLost(f"{exc!r}; stderr: {''.join(self._stderr_tail).strip()[-500:]}") from exc
        return self.hello

    async def _log_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            text = line.decode("utf-8", errors="replace")
            self._stderr_tail.append(text)
            log.warning("session zygote: %s", text.rstrip())

    async def fork(self, request: dict[str, Any], fds: tuple[int, int, int]) -> int:
        """The host pid of a new session's process, forked as request says with fds (its
        control socket, stdout and stderr); raises WorkerLost."""
        if not self.alive or self._control is None:
            raise WorkerLost("the session zygote is not running")
        loop = asyncio.get_running_loop()
        async with self._lock:
            self._requests += 1
            message = json.dumps({**request, "id": self._requests}).encode()
            try:
                socket.send_fds(self._control, [message], list(fds))
                reply = json.loads(await loop.sock_recv(self._control, 1 << 16) or b"null")
            except (OSError, ValueError) as exc:
                raise WorkerLost(f"the session zygote's socket broke: {exc!r}") from exc
        if not isinstance(reply, dict):
            raise WorkerLost("the session zygote went away")
        if "error" in reply:
            raise WorkerLost(f"the session could not join its jail: {reply['error']}")
        return int(reply["pid"])

    async def close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None and self._process.returncode is None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await self._process.wait()
        if self._stderr is not None:
            await asyncio.gather(self._stderr, return_exceptions=True)


def session_request(spec: ZygoteSpec, slot: Slot, holder: int | None) -> dict[str, Any]:
    """What the zygote needs to make a session of slot in the jail whose holder is holder."""
    policy = spec.jail
    return {
        "holder": holder, "uid": slot.uid, "gid": slot.gid, "home": str(slot.scratch),
        "env": jail_environment(slot, spec.interpreter),
        "rlimits": {"RLIMIT_NPROC": policy.max_processes, "RLIMIT_FSIZE": policy.max_file_mb << 20,
                    "RLIMIT_NOFILE": policy.max_open_files},
    }


class SessionProcess:
    """One session's process as the host sees it: frames in and out on its control socket,
    its stdout and stderr read as they come and handed to `on_output` (or dropped)."""

    def __init__(self, pid: int, control: socket.socket, stdout: int, stderr: int) -> None:
        self.pid = pid
        self.control = control
        self.outputs = {"stdout": stdout, "stderr": stderr}
        self.on_output: Callable[[str, bytes], None] | None = None
        self.closed = False  # by the host
        self.ended = False   # its control socket closed: the process is gone or going
        self._buffer = b""
        self._frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        control.setblocking(False)
        loop.add_reader(control.fileno(), self._read_control)
        for name, fd in self.outputs.items():
            os.set_blocking(fd, False)
            loop.add_reader(fd, self.drain, name)

    def drain(self, name: str) -> None:
        """Reads what the session wrote to one of its streams so far."""
        fd = self.outputs[name]
        while True:
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                asyncio.get_running_loop().remove_reader(fd)
                return
            if self.on_output is not None:
                self.on_output(name, data)

    def drain_all(self) -> None:
        for name in self.outputs:
            self.drain(name)

    def _read_control(self) -> None:
        try:
            data = self.control.recv(READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.control.fileno())
            self.ended = True
            self._frames.put_nowait(None)
            return
        self._buffer += data
        while len(self._buffer) >= 4:
            (size,) = struct.unpack(">I", self._buffer[:4])
            if len(self._buffer) < 4 + size:
                return
            body, self._buffer = self._buffer[4:4 + size], self._buffer[4 + size:]
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            self._frames.put_nowait(message if isinstance(message, dict) else None)

    async def send(self, message: dict[str, Any]) -> None:
        """Sends a frame; raises WorkerLost when the session is gone."""
        data = json.dumps(message).encode()
        try:
            await asyncio.get_running_loop().sock_sendall(self.control, struct.pack(">I", len(data)) + data)
        except OSError as exc:
            raise WorkerLost(f"the session's socket broke: {exc!r}") from exc

    async def receive(self) -> dict[str, Any]:
        """The next frame; raises WorkerLost once the session has closed its socket."""
        message = await self._frames.get()
        if message is None:
            self._frames.put_nowait(None)
            raise WorkerLost("the session's process ended")
        return message

    def signal(self, signum: int) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """Kills the process and closes the host's descriptors; idempotent."""
        if self.closed:
            return
        self.closed = self.ended = True
        self.signal(signal.SIGKILL)
        loop = asyncio.get_running_loop()
        for fd in (self.control.fileno(), *self.outputs.values()):
            loop.remove_reader(fd)
        self.control.close()
        for fd in self.outputs.values():
            os.close(fd)
        self._frames.put_nowait(None)


@dataclass
class SessionChannels:
    """The descriptors of a session being made: the host's ends and the session's."""

    host_control: socket.socket
    session_control: socket.socket
    stdout: tuple[int, int]  # read, write
    stderr: tuple[int, int]

    @classmethod
    def make(cls) -> "SessionChannels":
        host, session = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return cls(host, session, os.pipe(), os.pipe())

    def session_ends(self) -> tuple[int, int, int]:
        return self.session_control.fileno(), self.stdout[1], self.stderr[1]

    def close_session_ends(self) -> None:
        self.session_control.close()
        os.close(self.stdout[1])
        os.close(self.stderr[1])

    def close_host_ends(self) -> None:
        self.host_control.close()
        os.close(self.stdout[0])
        os.close(self.stderr[0])


async def make_session_process(zygote: SessionZygote, slot: Slot, jail: SessionJail | None,
                               cgroup: MemoryCgroup | None) -> SessionProcess:
    """A session's process forked into jail (None: no jail, a server without a sandbox),
    in slot's memory cgroup before it runs anything of a caller's; raises WorkerLost."""
    channels = SessionChannels.make()
    try:
        pid = await zygote.fork(session_request(zygote.spec, slot, jail.inside if jail else None),
                                channels.session_ends())
    except BaseException:
        channels.close_session_ends()
        channels.close_host_ends()
        raise
    channels.close_session_ends()
    process = SessionProcess(pid, channels.host_control, channels.stdout[0], channels.stderr[0])
    if cgroup is not None:
        try:
            await asyncio.get_running_loop().run_in_executor(None, cgroup.adopt, [pid])
        except OSError as exc:
            process.close()
            raise WorkerLost(f"the session's process could not join its memory cgroup: {exc}") from exc
    return process

