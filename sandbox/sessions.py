"""Host side of stateful sessions: the session zygote, the jails made ahead for sessions,
and one session's process (`sandbox/inside/session_zygote.py` is the other side).

A session is a process forked from one warm zygote into a jail of its slot's own: the
same firejail command line as a worker's, as the slot's uid, with a holder that keeps the
jail alive. The host names the jail to the zygote by a pidfd of its holder and holds the
session's process by a pidfd the zygote hands back: no pid is ever a handle. It talks to
a session over three descriptors it made: a stream socket for frames (start, calls,
results) and a pipe each for stdout and stderr.

Whatever the session writes is untrusted input (its code holds all three): frames are
read only while the host waits for one, each bounded in size, a result must carry its
call's number, and anything else (a frame nobody asked for, one too large, one of another
call, one that is not an object) is a broken protocol: the session is closed, never
believed. Its stdout and stderr are read only while a call runs. A session ends when its
process exits, whoever still holds its descriptors. Nothing here decides policy (how
many, when to close): that is the session manager's job (`toolserver/python/sessions.py`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import signal
import socket
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sandbox.cgroups import MemoryCgroup
from sandbox.jail import Slot, jail_environment, runtime_environment
from sandbox.slots import kill_slot_processes
from sandbox.worker import (
    BOOTSTRAP,
    CONFINE_SOURCE,
    GUARD_SOURCE,
    INSIDE,
    LIBRARY,
    JailedProcess,
    WorkerLost,
    ZygoteSpec,
)

log = logging.getLogger(__name__)

SESSION_ZYGOTE_SOURCE = (INSIDE / "session_zygote.py").read_text()
READ_CHUNK = 1 << 16
DRAIN_BYTES = 1 << 20  # read from a session's stream at one go, at most
HOLDER_NAME = "jail-holder"  # the holder's process name (comm), as ps and /proc show it
# The jail's holder: names itself, makes itself not dumpable (no process of the slot's uid may then open
# its memory, descriptors or root, nor trace it: the kernel's ptrace access check), says
# where it is, then only waits, in this interpreter: an exec would make it dumpable again.
HOLDER_SOURCE = (
    "import ctypes, json, os, signal, struct\n"
    "PR_SET_NAME, PR_SET_DUMPABLE = 15, 4\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"libc.prctl(PR_SET_NAME, {HOLDER_NAME.encode()!r}, 0, 0, 0)\n"
    "if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:\n"
    "    raise SystemExit('the holder cannot make itself not dumpable')\n"
    "hello = json.dumps({'ready': True, 'pid': os.getpid()}).encode()\n"
    "os.write(1, struct.pack('>I', len(hello)) + hello)\n"
    "while True:\n"
    "    signal.pause()\n"
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


def empty_for_the_next_session(jail: SessionJail) -> None:
    """Kills every process the last session left in jail (all of its memory cgroup but the
    jail's own: firejail, its init and its holder) and resets the cgroup's charge, so that
    the jail can serve the next session of its slot (whose process empties the writable
    places before it waits); raises OSError where that cannot be proven, or where the last
    session may have touched the holder it leaves (`holder_untouched`)."""
    if jail.cgroup is None or not jail.whole() or jail.inside is None:
        raise OSError("the jail is not whole, or has no memory cgroup to prove it empty")
    if not jail.cgroup.kill_all_but(jail.own_pids):
        raise OSError("processes of the last session did not end")
    holder_untouched(jail.inside)
    jail.cgroup.reset_charge()
    if not jail.whole():
        raise OSError("the jail ended as it was emptied")


def holder_untouched(pid: int) -> None:
    """Proves that the holder (host pid, held by a pidfd: it is the jail's own) is as it
    started: not dumpable (its /proc files are root's, so no process of the slot's uid could
    open its memory or descriptors, trace it or read its root), one thread, neither stopped
    nor traced, no signal pending. A tenant may still kill it: then the jail is not whole
    and not recycled. Raises OSError."""
    try:
        owner = os.stat(f"/proc/{pid}/status").st_uid  # its files (not its directory) are root's when not dumpable
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":" in line)
    except OSError as exc:
        raise OSError(f"the jail's holder cannot be read: {exc}") from exc
    state = status.get("State", "?").split()[0]
    wrong = [text for text, bad in (
        ("dumpable", owner != 0),
        (f"in state {state}", state not in ("S", "R")),
        (f"traced by {status.get('TracerPid', '?').strip()}", status.get("TracerPid", "").strip() != "0"),
        (f"{status.get('Threads', '?').strip()} threads", status.get("Threads", "").strip() != "1"),
        ("signalled", any(int(status.get(key, "1"), 16) for key in ("SigPnd", "ShdPnd"))),
    ) if bad]
    if wrong:
        raise OSError(f"the jail's holder was touched: {', '.join(wrong)}")


class SessionZygote:
    """The warm root interpreter that forks sessions into their jails."""

    def __init__(self, spec: ZygoteSpec, home_root: Path) -> None:
        """home_root: a directory of the server's (the slots' scratch root: writable where
        the root filesystem is not) in which the zygote gets a home of its own."""
        self.spec = spec
        self.home_root = home_root
        self.hello: dict[str, Any] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._pidfd: int | None = None  # the zygote's: what it is killed through
        self._control: socket.socket | None = None
        self._lock = asyncio.Lock()
        self._requests = 0
        self._stderr: asyncio.Task[None] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._home: tempfile.TemporaryDirectory[str] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> dict[str, Any]:
        """Starts the zygote and waits until it is warm; raises WorkerLost."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        control_fd = theirs.fileno()
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.spec.interpreter, "-I", "-c", BOOTSTRAP, env=self._environment(),
                cwd="/", start_new_session=True, close_fds=True, pass_fds=(control_fd,),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            ours.close()
            raise WorkerLost(f"cannot start the session zygote: {exc}") from exc
        finally:
            theirs.close()
        with contextlib.suppress(ProcessLookupError):  # gone already: start fails below
            self._pidfd = os.pidfd_open(self._process.pid)
        ours.setblocking(False)
        self._control = ours
        self._stderr = asyncio.get_running_loop().create_task(self._log_stderr())
        config = {"control_fd": control_fd, "preload": list(self.spec.preload), "huge_pages": self.spec.huge_pages,
                  "confine_source": CONFINE_SOURCE, "guard_source": GUARD_SOURCE}
        payload = json.dumps({"config": config, "source": SESSION_ZYGOTE_SOURCE, "name": "session_zygote",
                              "library": LIBRARY}).encode()
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

    def _environment(self) -> dict[str, str]:
        """The runtime's environment, with a home of the zygote's own under home_root: what
        its preloads write as they load (matplotlib's font cache) goes there, never into
        root's home or a directory of the host's, and a session finds it readable (or, in its
        jail, absent)."""
        if self._home is None:
            self._home = tempfile.TemporaryDirectory(prefix="session-zygote-", dir=self.home_root)
            os.chmod(self._home.name, 0o755)
        home = self._home.name
        return {**runtime_environment(self.spec.interpreter), "HOME": home, "MPLCONFIGDIR": home}

    async def _log_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            text = line.decode("utf-8", errors="replace")
            self._stderr_tail.append(text)
            log.warning("session zygote: %s", text.rstrip())

    async def fork(self, request: dict[str, Any], descriptors: dict[str, int]) -> tuple[int, int]:
        """A pidfd and the host pid of a new session's process, forked as request says with
        descriptors by name: its control socket, stdout and stderr, and, where there are,
        a pidfd of its jail's holder and its memory cgroup's procs; raises WorkerLost."""
        if not self.alive or self._control is None:
            raise WorkerLost("the session zygote is not running")
        async with self._lock:
            self._requests += 1
            message = json.dumps({**request, "id": self._requests, "descriptors": list(descriptors)}).encode()
            try:
                socket.send_fds(self._control, [message], list(descriptors.values()))
                data, pidfds = await receive_with_fds(self._control, 1)
                reply = json.loads(data or b"null")
            except (OSError, ValueError) as exc:
                raise WorkerLost(f"the session zygote's socket broke: {exc!r}") from exc
        if not isinstance(reply, dict) or "error" in reply or len(pidfds) != 1:
            for fd in pidfds:
                os.close(fd)
            if not isinstance(reply, dict):
                raise WorkerLost("the session zygote went away")
            raise WorkerLost(f"the session could not join its jail: {reply.get('error', 'no pidfd came')}")
        return pidfds[0], int(reply["pid"])

    async def close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            os.close(self._pidfd)
            self._pidfd = None
        if self._process is not None:
            await self._process.wait()
        if self._stderr is not None:
            await asyncio.gather(self._stderr, return_exceptions=True)
        if self._home is not None:
            self._home.cleanup()
            self._home = None


async def receive_with_fds(sock: socket.socket, max_fds: int) -> tuple[bytes, list[int]]:
    """The next message of a non-blocking SOCK_SEQPACKET socket and the descriptors it carried."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, max_fds)
            return data, fds
        except BlockingIOError:
            readable = loop.create_future()
            loop.add_reader(sock.fileno(), readable.set_result, None)
            try:
                await readable
            finally:
                loop.remove_reader(sock.fileno())


def session_request(spec: ZygoteSpec, slot: Slot, jail: SessionJail | None) -> dict[str, Any]:
    """What the zygote needs to make a session of slot (its jail comes as a pidfd): the
    places it may write are its home and the jail's private dirs, as a call's, each of
    which it empties before it serves. Without a jail (a server without a sandbox) the
    private dirs would be the host's own /tmp, /var/tmp, /dev/shm and /run/lock: the session
    has its home alone (its TMPDIR), and nothing of the host's is emptied."""
    policy = spec.jail
    private_dirs = () if jail is None else jail.private_dirs
    return {
        "uid": slot.uid, "gid": slot.gid, "home": str(slot.scratch), "writable": [str(slot.scratch), *private_dirs],
        "env": jail_environment(slot, spec.interpreter),
        "rlimits": {"RLIMIT_NPROC": policy.max_processes, "RLIMIT_FSIZE": policy.max_file_mb << 20,
                    "RLIMIT_NOFILE": policy.max_open_files},
    }


class ProtocolBroken(WorkerLost):
    """The session wrote on its control socket what the host did not ask for."""


class SessionProcess:
    """One session's process as the host sees it: held by a pidfd, frames read from its
    control socket only while a frame is awaited, its stdout and stderr read only while a
    call runs (`listen`) and handed to `on_output`."""

    def __init__(self, pidfd: int, pid: int, control: socket.socket, stdout: int, stderr: int,
                 exit_pipe: int) -> None:
        self.pidfd = pidfd
        self.pid = pid  # for logs only: the pidfd is the handle
        self.control = control
        self.outputs = {"stdout": stdout, "stderr": stderr}
        self.exit_pipe = exit_pipe  # the session zygote writes the wait status here once it reaps the process
        self.on_output: Callable[[str, bytes], None] | None = None
        self.closed = False  # by the host
        self.exited = False  # the process has ended (its pidfd said so)
        self._buffer = bytearray()
        self._eof = False
        self._woken: asyncio.Future[None] | None = None
        control.setblocking(False)
        for fd in (*self.outputs.values(), exit_pipe):
            os.set_blocking(fd, False)
        asyncio.get_running_loop().add_reader(pidfd, self._process_exited)

    @property
    def ended(self) -> bool:
        """The process is gone or going: it exited, or its control socket closed."""
        return self.closed or self.exited or self._eof

    def _process_exited(self) -> None:
        asyncio.get_running_loop().remove_reader(self.pidfd)
        self.exited = True
        self._wake()

    def _wake(self) -> None:
        if self._woken is not None and not self._woken.done():
            self._woken.set_result(None)

    def listen(self, on_output: Callable[[str, bytes], None] | None) -> None:
        """Reads the session's stdout and stderr as they come, handing them to on_output,
        until listen(None), which reads what is left (the call's last output) and stops."""
        loop = asyncio.get_running_loop()
        if on_output is None:
            for name, fd in self.outputs.items():
                loop.remove_reader(fd)
                self.drain(name)
            self.on_output = None
            return
        self.on_output = on_output
        for name, fd in self.outputs.items():
            loop.add_reader(fd, self.drain, name)

    def drain(self, name: str) -> None:
        """Reads what the session wrote to one of its streams so far, DRAIN_BYTES at most
        (a writer as fast as the reader never lets it see an empty pipe: the event loop
        gets its turn): hands it to on_output, or drops it between calls."""
        fd = self.outputs[name]
        budget = DRAIN_BYTES
        while not self.closed and budget > 0:
            budget -= READ_CHUNK
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

    def unasked(self) -> bool:
        """Whether the session wrote on its control socket while no frame was awaited (or
        closed it)."""
        if self._buffer or self._eof:
            return True
        try:
            self.control.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            pass
        return True

    async def send(self, message: dict[str, Any]) -> None:
        """Sends a frame; raises WorkerLost when the session is gone."""
        data = json.dumps(message).encode()
        try:
            await asyncio.get_running_loop().sock_sendall(self.control, struct.pack(">I", len(data)) + data)
        except OSError as exc:
            raise WorkerLost(f"the session's socket broke: {exc!r}") from exc

    async def receive(self, max_size: int) -> dict[str, Any]:
        """The next frame, read now that one is awaited; raises WorkerLost once the session's
        process has ended or its socket closed, ProtocolBroken for a frame over max_size
        bytes or one that is not a JSON object."""
        size = None
        while True:
            if self.ended:
                raise WorkerLost("the session's process ended")
            if size is None and len(self._buffer) >= 4:
                (size,) = struct.unpack(">I", self._buffer[:4])
                if size > max_size:
                    raise ProtocolBroken(f"the session announced a frame of {size} bytes (at most {max_size})")
            if size is not None and len(self._buffer) >= 4 + size:
                body = bytes(self._buffer[4:4 + size])
                del self._buffer[:4 + size]
                try:
                    message = json.loads(body)
                except (ValueError, RecursionError) as exc:  # nested past the parser's depth: not JSON to us
                    raise ProtocolBroken(f"the session sent a frame that is not JSON: {exc}") from exc
                if not isinstance(message, dict):
                    raise ProtocolBroken("the session sent a frame that is not an object")
                return message
            await self._read_control(4 + (size or 0) - len(self._buffer))

    async def _read_control(self, wanted: int) -> None:
        """Reads at most wanted bytes of the control socket into the buffer, once it has some."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                data = self.control.recv(min(max(wanted, 1), READ_CHUNK))
            except BlockingIOError:
                self._woken = loop.create_future()
                loop.add_reader(self.control.fileno(), self._wake)
                try:
                    await self._woken
                finally:
                    self._woken = None
                    if not self.closed:
                        loop.remove_reader(self.control.fileno())
                if self.exited or self.closed:
                    return
                continue
            except OSError:
                data = b""
            if not data:
                self._eof = True
            self._buffer += data
            return

    async def wait_status(self, within_s: float) -> int | None:
        """The process's wait status as its zygote reaped it, waited for within_s seconds;
        None where none came (the zygote writes 4 bytes, big-endian, once)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while not self.closed:
            try:
                data = os.read(self.exit_pipe, 4)
            except BlockingIOError:
                data = None
            except OSError:
                return None
            if data is not None:
                return struct.unpack(">i", data)[0] if len(data) == 4 else None
            readable: asyncio.Future[None] = loop.create_future()

            def ready(future: asyncio.Future[None] = readable) -> None:
                if not future.done():
                    future.set_result(None)

            loop.add_reader(self.exit_pipe, ready)
            try:
                await asyncio.wait_for(readable, max(deadline - loop.time(), 0))
            except asyncio.TimeoutError:
                return None
            finally:
                loop.remove_reader(self.exit_pipe)
        return None

    def signal(self, signum: int) -> None:
        """Sends signum to the session's process, through its pidfd: never to another."""
        if self.closed:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signum)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """Kills the process and closes the host's descriptors; idempotent."""
        if self.closed:
            return
        self.signal(signal.SIGKILL)
        self.closed = True
        loop = asyncio.get_running_loop()
        for fd in (self.pidfd, self.control.fileno(), *self.outputs.values()):
            loop.remove_reader(fd)
        self._wake()
        self.control.close()
        for fd in (self.pidfd, *self.outputs.values(), self.exit_pipe):
            os.close(fd)


@dataclass
class SessionChannels:
    """The descriptors of a session being made: the host's ends and the session's."""

    host_control: socket.socket
    session_control: socket.socket
    stdout: tuple[int, int]  # read, write
    stderr: tuple[int, int]
    exit: tuple[int, int]    # the zygote writes the process's wait status here once it reaps it

    @classmethod
    def make(cls) -> "SessionChannels":
        host, session = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return cls(host, session, os.pipe(), os.pipe(), os.pipe())

    def session_ends(self) -> dict[str, int]:
        return {"control": self.session_control.fileno(), "stdout": self.stdout[1], "stderr": self.stderr[1],
                "exit": self.exit[1]}

    def close_session_ends(self) -> None:
        self.session_control.close()
        for _, write_end in (self.stdout, self.stderr, self.exit):
            os.close(write_end)

    def close_host_ends(self) -> None:
        self.host_control.close()
        for read_end, _ in (self.stdout, self.stderr, self.exit):
            os.close(read_end)


async def make_session_process(zygote: SessionZygote, slot: Slot, jail: SessionJail | None,
                               cgroup: MemoryCgroup | None) -> SessionProcess:
    """A session's process forked into jail (None: no jail, a server without a sandbox),
    in slot's memory cgroup before it runs anything of a caller's; raises WorkerLost.

    The process moves itself into the cgroup (through a descriptor of the cgroup's procs
    opened here) before it joins the jail: no pid of it is ever written."""
    if jail is not None and jail.inside_pidfd is None:
        raise WorkerLost("the session's jail has no holder")
    channels = SessionChannels.make()
    descriptors = channels.session_ends()
    try:
        if jail is not None and jail.inside_pidfd is not None:
            descriptors["holder"] = jail.inside_pidfd
        if cgroup is not None:
            descriptors["cgroup"] = cgroup.open_procs()
        pidfd, pid = await zygote.fork(session_request(zygote.spec, slot, jail), descriptors)
    except OSError as exc:
        channels.close_host_ends()
        raise WorkerLost(f"the session's memory cgroup cannot be opened: {exc}") from exc
    except BaseException:
        channels.close_host_ends()
        raise
    finally:
        channels.close_session_ends()
        if "cgroup" in descriptors:
            os.close(descriptors["cgroup"])
    return SessionProcess(pidfd, pid, channels.host_control, channels.stdout[0], channels.stderr[0], channels.exit[0])
