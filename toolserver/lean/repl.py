"""One Lean REPL process (leanprover-community/repl) in its own jail: start, send, kill.

The REPL reads JSON commands separated by blank lines and answers each with a JSON
object followed by a blank line. A `LeanRepl` starts the process in a sandbox slot,
elaborates its header once (the answer's `env` is the environment every later command
runs on), and sends one command at a time. It does not decide how many REPLs exist or
when to replace one: that is the pool's job. Any failure to get an answer in time
raises `ReplLost`; the caller then kills the REPL.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.cgroups import MemoryCgroup
from sandbox.jail import Slot
from sandbox.slots import prepare_scratch
from sandbox.worker import JailedProcess, ZygoteSpec, confined_program, spawn_jailed
from toolserver.lean.header import Header

log = logging.getLogger(__name__)

STDOUT_LIMIT = 64 * 1024 * 1024  # one answer line (a pretty-printed goal) may be long
MAX_ANSWER_BYTES = 256 * 1024 * 1024
OUT_OF_MEMORY_SIGNS = ("out of memory", "std::bad_alloc", "memoryerror", "cannot allocate memory")


class ReplLost(Exception):
    """The REPL died, hung, or answered something that is not a JSON object."""

    def __init__(self, message: str, *, out_of_memory: bool = False, timed_out: bool = False) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory
        self.timed_out = timed_out


class HeaderRejected(Exception):
    """Lean reported errors elaborating the header (an unknown module, say)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("the header did not elaborate")
        self.answer = answer


@dataclass(frozen=True)
class Toolchain:
    """How to start a REPL: argv and the environment it needs (LEAN_PATH, ...)."""

    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def jail_paths(self) -> tuple[str, ...]:
        """What a REPL's jail must show of the host: the REPL itself and the toolchain's
        and project's directories its environment names (LEAN_SYSROOT, LEAN_PATH, ...)."""
        listed = [path for name in ("LEAN_SYSROOT", "LEAN_PATH", "LEAN_SRC_PATH", "LD_LIBRARY_PATH")
                  for path in self.env.get(name, "").split(":")]
        return tuple(dict.fromkeys(path for path in (self.command[0], *listed) if os.path.isabs(path)))


def has_errors(answer: dict[str, Any]) -> bool:
    return any(m.get("severity") == "error" for m in answer.get("messages") or () if isinstance(m, dict))


class LeanRepl(JailedProcess):
    """One jailed REPL process with its header elaborated."""

    label = "lean repl"

    def __init__(self, spec: ZygoteSpec, slot: Slot, toolchain: Toolchain, header: Header,
                 cgroup: MemoryCgroup | None = None) -> None:
        super().__init__(slot, cgroup)
        self.spec = spec
        self.toolchain = toolchain
        self.header = header
        self.header_env: int | None = None
        self.uses = 0
        self.last_used = time.monotonic()
        self._oom_kills = 0  # of the slot's memory cgroup, when last looked at

    def memory_exceeded(self) -> bool:
        """Whether the OOM killer ended a process of the REPL's memory cgroup since the last
        look (the REPL, or what a proof's code started: together over the cap)."""
        if self.cgroup is None:
            return False
        kills = self.cgroup.oom_kills()
        exceeded = kills > self._oom_kills
        self._oom_kills = kills
        return exceeded

    def looks_out_of_memory(self) -> bool:
        tail = self.stderr_tail.lower()
        return any(sign in tail for sign in OUT_OF_MEMORY_SIGNS)

    async def start(self, timeout_s: float) -> dict[str, Any]:
        """Starts the process and elaborates the header; returns the header's answer.

        Raises ReplLost (could not start, no answer in time) or HeaderRejected; the
        process is killed in both cases."""
        slot = Slot(self.slot.name, self.slot.uid, self.slot.gid, self.slot.scratch,
                    {**self.slot.extra_env, **self.toolchain.env})
        await asyncio.get_running_loop().run_in_executor(None, prepare_scratch, slot)
        try:
            self.hold(await spawn_jailed(
                self.spec, slot, confined_program(self.spec, list(self.toolchain.command)), limit=STDOUT_LIMIT,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            ))
        except OSError as exc:
            raise ReplLost(f"cannot start the Lean REPL: {exc}") from exc
        self._watch_stderr()
        if self.cgroup is not None:  # before the header: the first thing a caller chose
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.enlist_tree)
            except OSError as exc:
                await self.kill()
                raise ReplLost(f"the Lean REPL could not join its memory cgroup: {exc}") from exc
            self._oom_kills = self.cgroup.oom_kills()
        try:
            answer = await self.send({"cmd": self.header.command}, timeout_s)
        except ReplLost as exc:
            await self.kill()
            raise ReplLost(f"the Lean REPL did not start: {exc}; stderr: {self.stderr_tail.strip()[-500:]}",
                           out_of_memory=exc.out_of_memory) from exc
        if has_errors(answer) or not isinstance(answer.get("env"), int):
            await self.kill()
            raise HeaderRejected(answer)
        self.header_env = answer["env"]
        return answer

    async def run(self, text: str, timeout_s: float) -> dict[str, Any]:
        """Runs text on the header's environment and returns the REPL's answer."""
        self.uses += 1
        self.last_used = time.monotonic()
        return await self.send({"cmd": text, "env": self.header_env}, timeout_s)

    async def send(self, command: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Sends one command (one line of JSON, then a blank line) and reads its answer."""
        if not self.alive:
            raise ReplLost("the Lean REPL is not running")
        assert self._process is not None and self._process.stdin is not None
        data = json.dumps(command, ensure_ascii=False).encode() + b"\n\n"
        try:
            async with asyncio.timeout(timeout_s):
                self._process.stdin.write(data)
                await self._process.stdin.drain()
                return await self._read_answer()
        except TimeoutError as exc:
            raise ReplLost(f"the Lean REPL did not answer within {timeout_s:.1f} s", timed_out=True) from exc
        except (OSError, ConnectionError) as exc:
            raise ReplLost(f"the Lean REPL's pipe broke: {exc!r}", out_of_memory=await self._died_of_memory()) from exc

    async def _read_answer(self) -> dict[str, Any]:
        """Reads blocks up to a blank line until one parses as a JSON object. Lines that
        are not JSON (debug output of some REPL versions) before the answer are skipped."""
        assert self._process is not None and self._process.stdout is not None
        lines: list[str] = []
        size = 0
        while True:
            raw = await self._process.stdout.readline()
            if not raw:
                status = await self._process.wait()
                out_of_memory = await self._died_of_memory()
                raise ReplLost(f"the Lean REPL exited (status {status}): {self.stderr_tail.strip()[-500:]}",
                               out_of_memory=out_of_memory)
            size += len(raw)
            if size > MAX_ANSWER_BYTES:
                raise ReplLost("the Lean REPL's answer is too large")
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.strip():
                lines.append(line)
                continue
            answer = _parse_answer(lines)
            if answer is not None:
                return answer

    async def _died_of_memory(self) -> bool:
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
            except (TimeoutError, asyncio.CancelledError):
                pass
        return self.looks_out_of_memory() or self.memory_exceeded()


def _parse_answer(lines: list[str]) -> dict[str, Any] | None:
    """The JSON object that ends lines, or None when there is none (yet)."""
    for start, line in enumerate(lines):
        if not line.lstrip().startswith("{"):
            continue
        try:
            answer = json.loads("\n".join(lines[start:]))
        except ValueError:
            continue
        if isinstance(answer, dict):
            return answer
    return None
