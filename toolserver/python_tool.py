"""The Python executor: a PythonCall and its Limits in, an ExecuteResponse out.

It caps the caller's limits by the server's, hands the call to the worker pool, and
turns the zygote's reply into the contract's message. It knows nothing of gRPC status.
"""

from __future__ import annotations

from typing import Any

from toolserver.config import Settings
from toolserver.errors import InvalidRequest, ToolUnavailable, Unavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.pool import WorkerPool
from toolserver.text import valid_text
from toolserver.tools import python_call_from_json, python_tool_spec
from toolserver.sessions import KernelSession, SessionManager
from toolserver.v1 import toolserver_pb2 as pb

OUTCOMES = {name: pb.Outcome.Value(name) for name in
            ("OK", "ERROR", "TIMEOUT", "MEMORY_LIMIT", "DENIED", "CRASHED", "INVALID")}


def effective_limits(requested: pb.Limits, settings: Settings, caller: CallerPolicy = OPEN_POLICY) -> dict[str, int]:
    """Each limit: the request's value, or the default when 0, never above the server's
    cap nor the caller's. Asking explicitly for more than the caller's policy grants is
    refused (PermissionDenied); above the server's cap the value is capped."""
    caller.check_limits({"timeout_ms": requested.timeout_ms, "memory_mb": requested.memory_mb,
                         "max_output_bytes": requested.max_output_bytes})
    caps, defaults, mine = settings.limits, settings.defaults, caller.caps()

    def pick(name: str, asked: int) -> int:
        value = min(asked or getattr(defaults, name), getattr(caps, name))
        return min(value, mine[name]) if mine[name] else value

    return {
        "timeout_ms": pick("timeout_ms", requested.timeout_ms),
        "memory_mb": pick("memory_mb", requested.memory_mb),
        "max_output_bytes": pick("max_output_bytes", requested.max_output_bytes),
        "max_processes": caps.max_processes,
        "max_file_mb": caps.max_file_mb,
        "max_open_files": caps.max_open_files,
        "max_scratch_mb": caps.max_scratch_mb,
    }


def session_memory_mb(requested: pb.Limits, settings: Settings, caller: CallerPolicy = OPEN_POLICY) -> int:
    """A new session's memory: what OpenSession asked for, else sessions.memory_mb, never
    above it nor the caller's max_memory_mb (asking for more than that is refused)."""
    caller.check_limits({"memory_mb": requested.memory_mb})
    value = min(requested.memory_mb or settings.sessions.memory_mb, settings.sessions.memory_mb)
    return min(value, caller.max_memory_mb) if caller.max_memory_mb else value


def response_from_reply(request_id: str, reply: dict[str, Any]) -> pb.ExecuteResponse:
    return pb.ExecuteResponse(
        request_id=request_id,
        outcome=OUTCOMES.get(str(reply.get("outcome")), pb.CRASHED),
        stdout=valid_text(str(reply.get("stdout", ""))),
        stderr=valid_text(str(reply.get("stderr", ""))),
        error=valid_text(str(reply.get("error", ""))),
        truncated=bool(reply.get("truncated", False)),
        elapsed_us=max(0, int(reply.get("elapsed_us", 0))),
        python=pb.PythonResult(value=valid_text(str(reply.get("value", ""))), exit_code=int(reply.get("exit_code", 0))),
    )


class PythonExecutor:
    def __init__(self, settings: Settings, pool: WorkerPool | None, sessions: SessionManager | None) -> None:
        self.settings = settings
        self.pool = pool
        self.sessions = sessions

    @staticmethod
    def call_from_json(arguments: str) -> pb.PythonCall:
        return python_call_from_json(arguments)

    def import_profile(self, caller: CallerPolicy) -> str:
        return caller.import_profile or self.settings.python.import_profile

    def tool_spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        profile = self.import_profile(caller)
        python = self.settings.python
        return python_tool_spec(profile, python.allow_list(profile) if python.import_guard else None,
                                python.denied_imports)

    async def open_session(self, limits: pb.Limits, caller: CallerPolicy = OPEN_POLICY) -> KernelSession:
        return await self.session_manager().open(caller.name, caller.max_sessions,
                                                 session_memory_mb(limits, self.settings, caller),
                                                 self.import_profile(caller))

    def session_manager(self) -> SessionManager:
        if self.sessions is None:
            raise ToolUnavailable("stateful sessions are not enabled on this server")
        return self.sessions

    async def execute(self, call: pb.PythonCall, limits: pb.Limits, request_id: str, *,
                      caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        if not call.code.strip():
            raise InvalidRequest("python.code is empty")
        limits_now = effective_limits(limits, self.settings, caller)
        if call.session_id:
            reply = await self.session_manager().execute(call.session_id, caller.name, call.code, call.stdin,
                                                         limits_now["timeout_ms"], limits_now["max_output_bytes"])
            return response_from_reply(request_id, reply)
        if self.pool is None:
            raise Unavailable("no python worker pool: the sandbox is not proven safe")
        request = {"id": request_id, "code": call.code, "stdin": call.stdin,
                   "profile": self.import_profile(caller), **limits_now}
        reply = await self.pool.run(request)
        return response_from_reply(request_id, reply)
