"""The one call path every front uses: admission, per-caller caps, metrics, logs, tools.

A front (`toolserver.fronts`) authenticates its caller, translates its wire format to
the contract's messages and calls a `Dispatcher` verb; the dispatcher decides whether
the server serves (self-test, draining), counts the call against the caller's in-flight
cap, finds the tool in the registry and runs it. Request faults are raised as
`toolserver.errors.RequestError` for the front to translate into its own status.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver import __version__
from toolserver.errors import Exhausted, PermissionDenied, RequestError, Unauthenticated, Unavailable, status_of
from toolserver.metrics import ServerMetrics
from toolserver.policy import CallerPolicy
from toolserver.registry import ToolRegistry
from toolserver.state import ServerState

log = logging.getLogger(__name__)


def tool_named(request: pb.ExecuteRequest) -> str:
    """The tool a request names, for metrics and logs ("none" when it names none)."""
    kind = request.WhichOneof("call")
    return request.json.tool if kind == "json" else kind or "none"


class Dispatcher:
    def __init__(self, state: ServerState, registry: ToolRegistry, metrics: ServerMetrics | None = None) -> None:
        self.state = state
        self.registry = registry
        self.metrics = metrics or ServerMetrics()
        self.idle = asyncio.Event()
        self.idle.set()
        self.inflight_by_caller: collections.Counter[str] = collections.Counter()
        self.replica = ""  # this replica's advertised address, set once the port is bound

    async def execute(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> pb.ExecuteResponse:
        """Runs one call, counting it for the caller's in-flight cap and the metrics."""
        started = time.monotonic()
        tool = tool_named(request)
        try:
            response = await self._counted(request, caller)
        except RequestError as exc:
            self.rejected(exc, request.request_id, tool, caller)
            raise
        outcome = pb.Outcome.Name(response.outcome)
        elapsed = time.monotonic() - started
        self.metrics.calls.labels(tool, outcome).inc()
        self.metrics.latency.labels(tool).observe(elapsed)
        self.metrics.queued.labels(tool).observe(response.queued_us / 1e6)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("answered %s", outcome, extra={"request_id": request.request_id, "tool": tool,
                                                     "caller": caller.name, "outcome": outcome,
                                                     "elapsed_ms": round(elapsed * 1000, 2)})
        return response

    def rejected(self, error: RequestError, request_id: str, tool: str, caller: CallerPolicy) -> None:
        """Counts and logs a call refused before (or instead of) running."""
        status = status_of(error)[0].name
        self.metrics.rejected.labels(status).inc()
        log.info("refused: %s", error, extra={"request_id": request_id, "tool": tool, "caller": caller.name,
                                              "status": status})

    async def _counted(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> pb.ExecuteResponse:
        if caller.max_inflight and self.inflight_by_caller[caller.name] >= caller.max_inflight:
            raise Exhausted(f"caller {caller.name!r} has {caller.max_inflight} calls in flight, "
                            "the most its policy allows")
        self.state.inflight += 1
        self.inflight_by_caller[caller.name] += 1
        self.metrics.inflight.inc()
        self.idle.clear()
        try:
            self.state.admit()
            tool, call = self.registry.resolve(request, caller)
            return await tool.run(call, request.limits, request.request_id, caller)
        finally:
            self.state.inflight -= 1
            self.inflight_by_caller[caller.name] -= 1
            self.metrics.inflight.dec()
            if self.state.inflight == 0:
                self.idle.set()

    def list_tools(self, caller: CallerPolicy) -> list[pb.ToolSpec]:
        return self.registry.specs(caller)

    async def open_session(self, limits: pb.Limits, caller: CallerPolicy) -> pb.Session:
        tool = self.registry.session_tool()
        caller.require_tool(tool.name)
        self.state.admit()
        session = await tool.open_session(limits, caller)
        session.replica = self.replica  # calls of the session must come here
        return session

    async def close_session(self, session_id: str, caller: CallerPolicy) -> None:
        await self.registry.session_tool().close_session(session_id, caller)

    def server_info(self) -> pb.ServerInfo:
        state = self.state
        return pb.ServerInfo(
            version=__version__, serving=state.serving and not state.draining,
            sandbox_verified=state.sandbox_verified, insecure=state.insecure, reason=state.reason,
            draining=state.draining,
            checks=[pb.SandboxCheck(name=c.name, ok=c.ok, detail=c.detail) for c in state.checks],
            tools=self.registry.statuses(),
        )


def refused_response(request_id: str, error: RequestError) -> pb.ExecuteResponse:
    """The answer to a refused call where the wire has no status of its own for it (a
    stream, a batch): its error starts with the gRPC status a unary call would get, and
    its outcome is INVALID for a request that cannot be served as asked (malformed,
    unknown session, tool not here), DENIED for one the caller's policy refuses, CRASHED
    when the server could not take it (unavailable, full)."""
    code, message = status_of(error)
    if isinstance(error, (PermissionDenied, Unauthenticated)):
        outcome = pb.DENIED
    elif isinstance(error, (Unavailable, Exhausted)):
        outcome = pb.CRASHED
    else:
        outcome = pb.INVALID
    return pb.ExecuteResponse(request_id=request_id, outcome=outcome, error=f"{code.name}: {message}")
