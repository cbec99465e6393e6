"""Host side of one jailed zygote: start it, send it one call at a time, kill it.

A `Zygote` owns one process tree (firejail and everything inside) running as one slot's
uid. It does not decide policy (how many, when to replace): that is the pool's job.
Any failure to get a well-formed answer in time raises `WorkerLost`; the caller then
kills and replaces the worker.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import signal
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.jail import JailPolicy, Slot, jail_command, jail_environment
from sandbox.slots import kill_slot_processes, running_as_root

log = logging.getLogger(__name__)

ZYGOTE_SOURCE = (Path(__file__).parent / "zygote.py").read_text()
GUARD_SOURCE = (Path(__file__).parent / "guard.py").read_text()

# Reads a 10-digit length and a JSON object {config, source} from fd 0 without
# buffering past it, then runs the zygote source with its config.
BOOTSTRAP = (
    "import os,json\n"
    "def _r(n):\n"
    " b=b''\n"
    " while len(b)<n:\n"
    "  c=os.read(0,n-len(b))\n"
    "  if not c: raise SystemExit(3)\n"
    "  b+=c\n"
    " return b\n"
    "_m=json.loads(_r(int(_r(10))))\n"
    "exec(compile(_m['source'],'zygote','exec'),{'ZYGOTE_CONFIG':_m['config'],'__name__':'zygote'})\n"
)


class WorkerLost(Exception):
    """The worker died, hung, or answered something that is not a frame."""


@dataclass(frozen=True)
class GuardPolicy:
    """What a call's own code may import (top-level names) and what nobody in the call
    may import; see sandbox/guard.py for what else the guard refuses."""

    allowed: tuple[str, ...]
    denied: tuple[str, ...]


@dataclass(frozen=True)
class ZygoteSpec:
    """How to start a zygote: which interpreter, what it pre-imports, which jail."""

    interpreter: str
    preload: tuple[str, ...] = ()
    huge_pages: bool = True  # back the warm heap with 2 MB pages: cheaper fork and exit
    guard: GuardPolicy | None = None  # None: no Python-level policy, the jail alone
    jail: JailPolicy = field(default_factory=JailPolicy)
    insecure_no_sandbox: bool = False
    start_timeout_s: float = 60.0


def program_argv(spec: ZygoteSpec, slot: Slot, program: list[str], writable: tuple[str, ...] = ()) -> list[str]:
    """The exact argv a jailed program runs under: the same for workers, kernels, probe."""
    if spec.insecure_no_sandbox:
        return list(program)
    return jail_command(spec.jail, slot, program, writable)


async def spawn_jailed(spec: ZygoteSpec, slot: Slot, program: list[str], writable: tuple[str, ...] = (),
                       **kwargs: Any) -> asyncio.subprocess.Process:
    """Starts program in slot's jail, as slot's uid when the server is root."""
    identity: dict[str, Any] = {}
    if running_as_root() and slot.uid != 0:
        identity = {"user": slot.uid, "group": slot.gid, "extra_groups": []}
    return await asyncio.create_subprocess_exec(
        *program_argv(spec, slot, program, writable),
        env=jail_environment(slot),
        cwd="/",
        start_new_session=True,
        close_fds=True,
        **identity,
        **kwargs,
    )


class JailedProcess:
    """A process tree in one slot's jail: whether it lives, the tail of its stderr, and
    killing it with everything the slot's uid still runs."""

    label = "jailed process"

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail)

    def _watch_stderr(self) -> None:
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while True:
            line = await self._process.stderr.readline()
            if not line:
                return
            text = line.decode("utf-8", errors="replace")
            self._stderr_tail.append(text)
            log.debug("%s %s: %s", self.label, self.slot.name, text.rstrip())

    async def kill(self) -> None:
        """Kills the whole jail and everything its uid still runs; idempotent."""
        process = self._process
        if process is not None and process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                log.error("%s %s (pid %d) did not exit after SIGKILL", self.label, self.slot.name, process.pid)
        await asyncio.get_running_loop().run_in_executor(None, kill_slot_processes, self.slot)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            self._stderr_task = None


class Zygote(JailedProcess):
    """One warm, jailed interpreter that runs one call at a time."""

    label = "zygote"

    def __init__(self, spec: ZygoteSpec, slot: Slot) -> None:
        super().__init__(slot)
        self.spec = spec
        self.hello: dict[str, Any] = {}
        self.calls = 0

    async def start(self) -> dict[str, Any]:
        """Starts the jail and waits for the zygote's hello; raises WorkerLost."""
        program = [self.spec.interpreter, "-I", "-c", BOOTSTRAP]
        try:
            self._process = await spawn_jailed(
                self.spec, self.slot, program,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise WorkerLost(f"cannot start the jail: {exc}") from exc
        self._watch_stderr()
        payload = json.dumps({"config": {
            "preload": list(self.spec.preload),
            "huge_pages": self.spec.huge_pages,
            "guard_source": GUARD_SOURCE,
            "guard": None if self.spec.guard is None else {"allowed": list(self.spec.guard.allowed),
                                                           "denied": list(self.spec.guard.denied)},
        }, "source": ZYGOTE_SOURCE}).encode()
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(b"%010d" % len(payload) + payload)
            await self._process.stdin.drain()
            self.hello = await asyncio.wait_for(self._read_frame(), self.spec.start_timeout_s)
        except (asyncio.TimeoutError, OSError, WorkerLost) as exc:
            await self.kill()
            raise WorkerLost(f"zygote did not start: {exc!r}; stderr: {self.stderr_tail.strip()[-500:]}") from exc
        if not self.hello.get("ready"):
            await self.kill()
            raise WorkerLost(f"zygote sent no hello: {self.hello!r}")
        return self.hello

    async def run(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Sends one call and returns the zygote's reply; raises WorkerLost."""
        if not self.alive:
            raise WorkerLost("worker is not running")
        assert self._process is not None and self._process.stdin is not None
        data = json.dumps(request).encode()
        self.calls += 1
        try:
            self._process.stdin.write(struct.pack(">I", len(data)) + data)
            await self._process.stdin.drain()
            reply = await asyncio.wait_for(self._read_frame(), timeout_s)
        except asyncio.TimeoutError as exc:
            raise WorkerLost(f"worker did not answer within {timeout_s:.1f} s") from exc
        except (OSError, ConnectionError) as exc:
            raise WorkerLost(f"worker pipe broke: {exc!r}") from exc
        if reply.get("id") != request.get("id"):
            raise WorkerLost("worker answered another call")
        return reply

    async def _read_frame(self) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        try:
            header = await self._process.stdout.readexactly(4)
            (size,) = struct.unpack(">I", header)
            body = await self._process.stdout.readexactly(size)
            message = json.loads(body)
        except asyncio.IncompleteReadError as exc:
            raise WorkerLost(f"worker exited (status {self._process.returncode})") from exc
        except ValueError as exc:
            raise WorkerLost(f"worker sent a malformed frame: {exc}") from exc
        if not isinstance(message, dict):
            raise WorkerLost("worker sent a frame that is not an object")
        return message
