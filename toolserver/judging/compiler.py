"""Compiling a call's source in the jail, once per source and compile step.

A compile runs as a call on the tool's zygotes (its `CompileStep`'s program, which execs
or runs the compiler) with the compile's own limits and sends its artifact back (a binary,
or an archive of what the compiler wrote). Its result is kept by the SHA-256 of the step's
identity (the compiler's command line) and the source: a program judged against many
cases, or sent again in the next rollout, compiles once, and calls that ask for the same
program while it compiles wait for that compile. Compile errors are kept too (they are the
program's); a compile that timed out or whose sandbox failed is not.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import time
from dataclasses import dataclass

from sandbox.calls import CallLimits, CallReply, CallRequest, KeptFile
from toolserver.config import LimitCaps
from toolserver.zygotes.pool import WorkerPool

COMPILER_OUTPUT_BYTES = 4 << 20  # the compiler's messages kept; a compiler that writes more is stopped there
                                 # (OUTPUT_LIMIT: a failed compile, as its messages are the program's)


@dataclass(frozen=True)
class CompileStep:
    """How a language compiles: the program a compile's jailed process runs, what names
    the compile (its compiler's command line: the cache's key), the file the source is
    written to and the file fetched back."""

    program: str
    identity: str
    source_file: str
    artifact: str


def compile_timeout_ms(asked: int, default: int, most: int) -> int:
    """A compile's time limit: what the call asked for (0: the tool's or language's default),
    never past the most the server allows."""
    return min(asked or default, most)


def compile_limits(timeout_ms: int, memory_mb: int, caps: LimitCaps, address_space_mb: int = 0) -> CallLimits:
    """What a compile runs under: its own time and memory (the compiler's processes together),
    the compiler's messages kept up to COMPILER_OUTPUT_BYTES, the server's caps on the rest."""
    return CallLimits(timeout_ms=timeout_ms, memory_mb=memory_mb, max_output_bytes=COMPILER_OUTPUT_BYTES,
                      max_processes=caps.max_processes, max_file_mb=caps.max_file_mb,
                      max_open_files=caps.max_open_files, max_scratch_mb=caps.max_scratch_mb,
                      address_space_mb=address_space_mb)


COMPILE_OUTCOMES = frozenset({"OK", "ERROR", "TIMEOUT", "MEMORY_LIMIT", "CRASHED"})  # what a Compiled's outcome is


@dataclass(frozen=True)
class Compiled:
    """A compile's end: the binary when it succeeded, else the compiler's messages."""

    outcome: str              # the compile call's: OK, ERROR (did not compile), TIMEOUT, MEMORY_LIMIT, CRASHED
    binary: bytes = b""       # the step's artifact
    messages: str = ""        # the compiler's stderr (warnings too)
    error: str = ""
    exit_code: int = 0
    elapsed_us: int = 0
    queued_us: int = 0
    cached: bool = False
    digest: str = ""          # names the binary and its owner for the workers that keep it (`kept`)

    @property
    def ok(self) -> bool:
        return self.outcome == "OK" and bool(self.binary)

    def kept(self) -> KeptFile:
        """The binary as a file the tool's workers keep: each run of it after a worker's
        first is sent its digest."""
        return KeptFile(self.digest, self.binary)


class BinaryCache:
    """Compiles by key, least recently used dropped first past max_bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.entries: collections.OrderedDict[str, Compiled] = collections.OrderedDict()

    def get(self, key: str) -> Compiled | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return found

    def put(self, key: str, compiled: Compiled) -> None:
        cost = len(compiled.binary) + len(compiled.messages)
        if cost > self.max_bytes or key in self.entries:
            return
        self.entries[key] = compiled
        self.size += cost
        while self.size > self.max_bytes:
            _, dropped = self.entries.popitem(last=False)
            self.size -= len(dropped.binary) + len(dropped.messages)


class Compiler:
    def __init__(self, step: CompileStep, pool: WorkerPool, limits: CallLimits, cache_bytes: int) -> None:
        """limits: a compile's, but its time, which each call chooses."""
        self.step = step
        self.pool = pool
        self.limits = limits
        self.cache = BinaryCache(cache_bytes)
        self.compiles = 0
        self._compiling: dict[str, asyncio.Future[Compiled]] = {}  # compiles running, by key

    def key(self, source: str, owner: str) -> str:
        """The cache's key of source compiled for owner: each caller's compiles are its own, so
        that neither `cached` nor a compile's time tells one caller what another compiled."""
        digest = hashlib.sha256(self.step.identity.encode("utf-8", errors="surrogateescape"))
        digest.update(b"\0" + owner.encode("utf-8", errors="surrogateescape"))
        digest.update(b"\0" + source.encode("utf-8", errors="surrogateescape"))
        return digest.hexdigest()

    async def compile(self, source: str, timeout_ms: int, request_id: str, owner: str = "") -> Compiled:
        """The program of source, compiled within timeout_ms or found compiled by owner
        before. The compile is a task of its own: a caller that goes away leaves it to those
        that wait on it, and to the cache."""
        key = self.key(source, owner)
        if (found := self.cache.get(key)) is not None:
            return dataclasses.replace(found, cached=True, elapsed_us=0, queued_us=0)
        task = self._compiling.get(key)
        first = task is None
        if task is None:
            task = asyncio.ensure_future(self._compile_and_keep(key, source, timeout_ms, request_id, owner))
            task.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved, whoever waits
            self._compiling[key] = task
        compiled = await asyncio.shield(task)
        return compiled if first else dataclasses.replace(compiled, cached=True)

    async def _compile_and_keep(self, key: str, source: str, timeout_ms: int, request_id: str,
                                owner: str) -> Compiled:
        try:
            compiled = await self._compile(source, timeout_ms, request_id, owner)
        finally:
            del self._compiling[key]
        if compiled.ok or compiled.outcome == "ERROR":
            self.cache.put(key, compiled)
        return compiled

    async def _compile(self, source: str, timeout_ms: int, request_id: str, owner: str) -> Compiled:
        self.compiles += 1
        request = CallRequest(f"{request_id}/compile", self.step.program,
                              dataclasses.replace(self.limits, timeout_ms=timeout_ms),
                              files={self.step.source_file: source.encode("utf-8", errors="surrogateescape")},
                              fetch_files=(self.step.artifact,))
        started = time.monotonic()
        reply: CallReply = await self.pool.run(request)
        binary = reply.files.get(self.step.artifact, b"")
        outcome = reply.outcome
        if outcome == "OK" and not binary:
            outcome, reply.error = "CRASHED", "the compiler reported success but wrote no program"
        elif outcome == "ERROR":
            reply.error = f"compilation failed (exit status {reply.exit_code})"
        if outcome != "OK":
            binary = b""
        digest = hashlib.sha256(owner.encode("utf-8", errors="surrogateescape") + b"\0" + binary).hexdigest()
        return Compiled(outcome=outcome, binary=binary, digest=digest, messages=reply.stderr,
                        error=reply.error, exit_code=reply.exit_code,
                        elapsed_us=reply.elapsed_us or int((time.monotonic() - started) * 1e6),
                        queued_us=reply.queued_us)
