"""The Lean executor: a LeanCall in, an ExecuteResponse with a LeanResult out.

It finds the toolchain (config or PATH) at start, grants a call its wall time, refuses
calls it cannot serve (no toolchain, a header the server or the caller's policy does not
allow, empty code, a proof the guard refuses), hands the rest to the REPL pool and turns
the REPL's answer into the contract's message, with line numbers of the caller's code.
It knows nothing of gRPC status codes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import shutil
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.cgroups import MemoryCgroups
from sandbox.jail import Slot
from sandbox.worker import ZygoteSpec
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments
from toolserver.errors import InvalidRequest, PermissionDenied, ToolUnavailable
from toolserver.lean.guard import check_proof
from toolserver.lean.header import HeaderError, SplitSource, parse_header, split_source
from toolserver.lean.jails import repl_spec
from toolserver.lean.pool import REPL_OUTCOMES, ReplOutcome, ReplPool
from toolserver.lean.repl import Toolchain
from toolserver.lean.rules import LeanRules
from toolserver.lean.settings import LeanSettings
from toolserver.outcomes import contract_outcome
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import BuildContext, Tool
from toolserver.text import valid_text

log = logging.getLogger(__name__)

INSTALL_HINT = ("install Lean 4 (elan), build leanprover-community/repl and a Mathlib project, then set "
                "[lean] repl and project_dir, or use the image in deploy/lean (see deploy/lean/README.md)")
ARGUMENTS = ("code", "header", "statement")
LAKE_VARIABLES = ("LEAN_PATH", "LEAN_SYSROOT", "LEAN_SRC_PATH", "LD_LIBRARY_PATH")
HIDDEN_ROOT = Path("/root")  # the jail does not show it: a toolchain there cannot run
SORRY_WARNING = "declaration uses 'sorry'"


class ToolchainMissing(Exception):
    """The Lean toolchain is absent or unusable; the message says what is missing."""


@dataclass(frozen=True)
class LeanArguments:
    """What a JSON tool call for Lean asks: the call and the statement to hold fixed."""

    call: pb.LeanCall
    statement: str = ""


def lean_call_from_json(arguments: str) -> LeanArguments:
    """Parses JsonCall arguments for the lean tool; raises InvalidRequest."""
    values = json_arguments(arguments, "lean", dict.fromkeys(ARGUMENTS, str), "code")
    return LeanArguments(pb.LeanCall(code=values["code"], header=values.get("header", "")),
                         values.get("statement", ""))


async def _output_of(argv: list[str], timeout_s: float) -> str:
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError as exc:
        process.kill()
        await process.wait()
        raise ToolchainMissing(f"`{' '.join(argv)}` did not finish within {timeout_s:.0f} s") from exc
    if process.returncode != 0:
        raise ToolchainMissing(f"`{' '.join(argv)}` failed ({process.returncode}): "
                               f"{err.decode(errors='replace').strip()[-300:]}")
    return out.decode(errors="replace")


def _executable(configured: str, name: str, field: str) -> str:
    path = configured or shutil.which(name)
    if not path:
        raise ToolchainMissing(f"`{name}` was not found (lean.{field} is empty and `{name}` is not on PATH)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ToolchainMissing(f"lean.{field} {path!r} is not an executable file")
    return os.path.realpath(path)


async def find_toolchain(settings: LeanSettings) -> Toolchain:
    """The REPL command and the environment it needs; raises ToolchainMissing.

    With a project directory, the environment is what `lake env` sets for it (read once
    here, outside the jail, so that no jailed REPL runs lake). Without one, the REPL sees
    only the core libraries of the `lean` on PATH."""
    repl = _executable(settings.repl, "repl", "repl")
    if settings.project_dir:
        if not os.path.isdir(settings.project_dir):
            raise ToolchainMissing(f"lean.project_dir {settings.project_dir!r} is not a directory")
        lake = _executable(settings.lake, "lake", "lake")
        printed = await _output_of([lake, "-d", settings.project_dir, "env", "printenv"], 300)
        values = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line)
        env = {name: values[name] for name in LAKE_VARIABLES if values.get(name)}
        described = f"repl {repl}, project {settings.project_dir}"
    else:
        lean = _executable("", "lean", "repl")
        sysroot = (await _output_of([lean, "--print-prefix"], 60)).strip()
        env = {"LEAN_SYSROOT": sysroot, "LD_LIBRARY_PATH": f"{sysroot}/lib/lean:{sysroot}/lib"}
        described = f"repl {repl}, core Lean at {sysroot} (no project: no Mathlib)"
    sysroot = env.get("LEAN_SYSROOT", "")
    for path in (repl, sysroot, settings.project_dir):
        if path and Path(path).is_relative_to(HIDDEN_ROOT):
            raise ToolchainMissing(f"{path} is under {HIDDEN_ROOT}, which the sandbox hides; install the "
                                   f"toolchain elsewhere (the image uses ELAN_HOME=/opt/elan)")
    if sysroot:
        env["PATH"] = f"{sysroot}/bin:/usr/local/bin:/usr/bin:/bin"
    env.update(settings.environment())
    return Toolchain((repl,), env, described)


def _position(entry: dict[str, Any]) -> tuple[int, int]:
    pos = entry.get("pos")
    if not isinstance(pos, dict):
        return 0, 0
    line, column = pos.get("line", 0), pos.get("column", 0)
    return (max(line, 0) if isinstance(line, int) else 0, max(column, 0) if isinstance(column, int) else 0)


class LeanExecutor(Tool):
    """Checks Lean 4 proofs on pooled, jailed REPLs; serves nothing without a toolchain.

    spec: how a REPL's jail starts (`toolserver.lean.jails.repl_spec`); cgroups: where each
    REPL's slot gets its memory cgroup (None: each process is capped alone)."""

    name = "lean"

    def __init__(self, settings: LeanSettings, spec: ZygoteSpec, slots: list[Slot],
                 cgroups: MemoryCgroups | None = None) -> None:
        self.settings = settings
        self.cgroups = cgroups
        self.jail_spec = spec
        self.slots = slots[:settings.max_repls]
        self.ready = False
        self.header_keys = frozenset(parse_header(header).key for header in settings.allowed_headers) or None
        self.pool: ReplPool | None = None
        self.toolchain: Toolchain | None = None
        self.prewarm_errors: list[str] = []
        self._reason = "the Lean tool has not started"

    async def start(self, toolchain: Toolchain | None = None) -> None:
        """Finds the toolchain (or uses the one given) and pre-warms headers. When the
        toolchain is absent it records why and serves nothing; the server starts anyway."""
        settings = self.settings
        if not settings.enabled:
            self._reason = "the Lean tool is disabled ([lean] enabled = false)"
            return
        try:
            self.toolchain = toolchain or await find_toolchain(settings)
        except ToolchainMissing as exc:
            self._reason = f"the Lean toolchain is not installed here: {exc}"
            log.warning("lean: %s; %s", self._reason, INSTALL_HINT)
            return
        if not self.slots:
            self._reason = "no sandbox slots are left for Lean REPLs (raise [sandbox] slots)"
            log.warning("lean: %s", self._reason)
            return
        prewarm = tuple(dict.fromkeys(parse_header(h) for h in settings.prewarm_headers))
        jail = self.jail_spec.jail
        spec = dataclasses.replace(self.jail_spec, jail=dataclasses.replace(
            jail, root=jail.root.with_paths(*self.toolchain.jail_paths(), settings.project_dir)))
        self.pool = ReplPool(spec, self.slots, self.toolchain, start_timeout_s=settings.start_timeout_s,
                             max_queue=settings.max_queue,
                             idle_evict_s=settings.idle_evict_s, recycle_after=settings.recycle_after,
                             keep_headers=prewarm, cgroups=self.cgroups)
        self.prewarm_errors = await self.pool.start(prewarm)
        for error in self.prewarm_errors:
            log.warning("lean: pre-warming failed: %s", error)
        self.ready = True
        log.info("lean: %s; %d REPL slots", self.toolchain.description, len(self.slots))

    @staticmethod
    def call_from_json(arguments: str) -> LeanArguments:
        return lean_call_from_json(arguments)

    @property
    def available(self) -> bool:
        return self.ready and self.pool is not None

    def grant(self, limits: pb.Limits, caller: CallerPolicy) -> int:
        """A call's wall time in milliseconds: what it asked for, else the default, within
        the caller's Lean maximum and the server's."""
        asked = caller.rules_of(LeanRules).timeout_ms(limits.timeout_ms, self.settings.default_timeout_ms,
                                                       caller.name)
        return min(asked, self.settings.max_timeout_ms)

    def call_from_request(self, request: pb.ExecuteRequest) -> LeanArguments:
        return LeanArguments(request.lean)

    async def run(self, call: LeanArguments, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        return await self.check(call.call, request_id, self.grant(limits, caller), caller, statement=call.statement)

    async def close(self) -> None:
        """Stops the REPLs; the builder's exit stack calls it at shutdown."""
        self.ready = False
        if self.pool is not None:
            await self.pool.close()

    def status(self) -> str:
        """One line for health details: why Lean is unavailable, or the pool's state."""
        if not self.available or self.pool is None:
            return f"unavailable: {self._reason}; to enable it, {INSTALL_HINT}"
        stats = self.pool.stats()
        headers = ", ".join(f"{key or '(no imports)'} x{n}" for key, n in sorted(stats.headers.items())) or "none"
        line = (f"ready: {stats.size}/{stats.slots} REPLs ({stats.busy} busy); headers: {headers}; "
                f"starts {stats.starts}, restarts {stats.restarts}, evictions {stats.evictions}, "
                f"recycled {stats.recycled}")
        if self.prewarm_errors:
            line += f"; pre-warming failed: {'; '.join(self.prewarm_errors)}"
        return line

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        settings = self.settings
        header_description = "Import lines, e.g. \"import Mathlib\"; environments are cached per header."
        if settings.allowed_headers:
            header_description += " Allowed: " + " | ".join(json.dumps(h) for h in settings.allowed_headers) + "."
        schema = {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Lean 4 source after the header: theorems and their "
                                                          "proofs. Imports at its top join the header."},
                "header": {"type": "string", "description": header_description},
                "statement": {"type": "string", "description": "Optional: the theorem statement the code must "
                                                               "prove unchanged, e.g. \"theorem t (n : Nat) : "
                                                               "n + 0 = n\"."},
            },
            "required": ["code"],
            "additionalProperties": False,
        }
        description = ("Check Lean 4 code with Lean" + (" and Mathlib" if settings.project_dir else "") +
                       ". Returns Lean's messages (severity, line, column, text), the number of sorries, and "
                       "complete = no error and no sorry. New axioms are refused.")
        if not self.available:
            description += f" Unavailable on this server: {self._reason}."
        return pb.ToolSpec(name="lean", description=description, parameters=json.dumps(schema))

    def _split(self, call: pb.LeanCall, caller: CallerPolicy) -> SplitSource:
        try:
            source = split_source(call.code, call.header)
        except HeaderError as exc:
            raise InvalidRequest(f"lean header: {exc}") from exc
        key = source.header.key
        if self.header_keys is not None and key not in self.header_keys:
            raise PermissionDenied(f"lean header {key or '(no imports)'!r} is not allowed for this server")
        caller.rules_of(LeanRules).require_header(key, caller.name)
        return source

    async def check(self, call: pb.LeanCall, request_id: str, timeout_ms: int,
                    caller: CallerPolicy = OPEN_POLICY, *, statement: str = "") -> pb.ExecuteResponse:
        """Checks one call within timeout_ms (as `grant` gave it) with a header the server
        and the caller allow.

        statement: a theorem statement the code must prove unchanged ("" for none)."""
        settings = self.settings
        if not self.available or self.pool is None:
            raise ToolUnavailable(f"lean is unavailable: {self._reason}; to enable it, {INSTALL_HINT}")
        if not call.code.strip():
            raise InvalidRequest("lean.code is empty")
        if len(call.code) > settings.max_code_chars:
            raise InvalidRequest(f"lean.code has {len(call.code)} characters; the most is {settings.max_code_chars}")
        source = self._split(call, caller)
        started = time.monotonic()
        violations = check_proof(call.code, statement)
        if violations:
            messages = [pb.LeanMessage(severity="error", line=v.line, column=v.column, text=f"proof guard: {v.reason}")
                        for v in violations]
            return pb.ExecuteResponse(request_id=request_id, outcome=pb.ERROR,
                                      error=f"refused by the proof guard: {violations[0].reason}",
                                      lean=pb.LeanResult(complete=False, messages=messages))
        outcome = await self.pool.run(source.header, source.command, timeout_ms / 1000)
        response = self._response(request_id, source, outcome)
        response.elapsed_us = int((time.monotonic() - started) * 1e6)
        return response

    def _response(self, request_id: str, source: SplitSource, outcome: ReplOutcome) -> pb.ExecuteResponse:
        if outcome.status not in ("OK", "HEADER_ERROR"):
            return pb.ExecuteResponse(request_id=request_id, outcome=contract_outcome(outcome.status, REPL_OUTCOMES),
                                      error=outcome.error, lean=pb.LeanResult(complete=False))
        answer = outcome.answer
        in_header = outcome.status == "HEADER_ERROR"
        entries = [m for m in answer.get("messages") or () if isinstance(m, dict)]
        if isinstance(answer.get("message"), str):  # the REPL refused the command itself
            entries.append({"severity": "error", "data": answer["message"]})
        truncated = len(entries) > self.settings.max_messages
        messages = []
        for entry in entries[:self.settings.max_messages]:
            line, column = _position(entry)
            text = valid_text(str(entry.get("data", "")))
            if len(text) > self.settings.max_message_chars:
                text, truncated = text[:self.settings.max_message_chars], True
            messages.append(pb.LeanMessage(severity=valid_text(str(entry.get("severity", "info"))),
                                           line=0 if in_header else source.caller_line(line),
                                           column=0 if in_header else column, text=text))
        sorry_warnings = sum(1 for m in entries if m.get("severity") == "warning" and SORRY_WARNING in str(m.get("data")))
        sorries = max(len(answer.get("sorries") or ()), sorry_warnings)
        errors = [m for m in messages if m.severity == "error"]
        error = ""
        if in_header:
            error = "the header did not elaborate" + (f": {errors[0].text}" if errors else "")
        elif errors:
            error = f"line {errors[0].line}, column {errors[0].column}: {errors[0].text}"
        return pb.ExecuteResponse(
            request_id=request_id, outcome=pb.ERROR if errors or in_header else pb.OK,
            error=error.split("\n", 1)[0][:1000], truncated=truncated,
            lean=pb.LeanResult(complete=not errors and not in_header and sorries == 0, messages=messages,
                               sorries=sorries))


async def build_lean(context: BuildContext, stack: AsyncExitStack) -> LeanExecutor:
    """The Lean tool on the slots left after the python tool's, started when its
    toolchain is here (else it serves nothing and says why)."""
    settings = context.settings.section(LeanSettings)
    slots = context.slots.take(settings.slots().wanted)  # none when it is off
    lean = LeanExecutor(settings, repl_spec(context.sandbox, settings), slots, context.cgroups)
    stack.push_async_callback(lean.close)
    await lean.start()
    return lean
