"""The ToolServer gRPC servicer: a thin adapter from requests to executors.

Request errors are mapped to gRPC status codes here and nowhere else; a failure of the
caller's code is a normal response carrying its Outcome. On a stream, a bad message is
answered with outcome INVALID and the stream goes on. Every call is made on behalf of
a caller whose policy (`toolserver.policy`) decides which tools, indexes, headers and
limits it gets; `AuthInterceptor` turns away callers without a known token first.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from sandbox.selftest import Check
from toolserver import __version__, tools
from toolserver.errors import (Exhausted, InvalidRequest, PermissionDenied, RequestError, Unauthenticated, Unavailable,
                               status_of)
from toolserver.lean.executor import LeanArguments
from toolserver.metrics import ServerMetrics
from toolserver.policy import CallerPolicy, Policies
from toolserver.python_tool import PythonExecutor
from toolserver.v1 import toolserver_pb2 as pb
from toolserver.v1 import toolserver_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

SERVICE_PREFIX = "/" + pb.DESCRIPTOR.services_by_name["ToolServer"].full_name + "/"
# Trailing metadata of a refused call: nothing of it ran, so a client may retry it
# elsewhere (a transport failure carries no such mark: the call may have run).
NOT_STARTED = (("toolserver-not-started", "1"),)


@dataclass
class ServerState:
    """What decides whether calls are served: the self-test, insecure mode, draining."""

    serving: bool = False
    reason: str = "starting"
    insecure: bool = False
    draining: bool = False
    sandbox_verified: bool = False
    checks: list[Check] = field(default_factory=list)
    inflight: int = 0

    def admit(self) -> None:
        if self.draining:
            raise Unavailable("server is draining for shutdown")
        if not self.serving:
            raise Unavailable(f"server is not serving: {self.reason}")


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Answers UNAUTHENTICATED to ToolServer calls without a known bearer token.

    Health and reflection stay open, as load balancers and grpcurl need them."""

    def __init__(self, policies: Policies) -> None:
        self.policies = policies

    async def intercept_service(self, continuation, handler_call_details):
        if self.policies.open or not handler_call_details.method.startswith(SERVICE_PREFIX):
            return await continuation(handler_call_details)
        try:
            self.policies.authenticate(handler_call_details.invocation_metadata)
        except RequestError as exc:
            return refusal(await continuation(handler_call_details), *status_of(exc))
        return await continuation(handler_call_details)


def refusal(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape as handler that aborts with code."""

    async def abort_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message)

    async def abort_stream(request: Any, context: grpc.aio.ServicerContext):
        await context.abort(code, message)
        yield  # pragma: no cover - makes this an async generator

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(abort_stream)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort_unary)
    return grpc.unary_unary_rpc_method_handler(abort_unary)


@dataclass(frozen=True)
class Undecodable:
    """Stands for a request whose bytes are not a valid message: the servicer answers
    INVALID_ARGUMENT (INVALID on a stream) instead of gRPC's UNKNOWN."""

    message: str
    reason: str


def require_decoded(request: Any) -> None:
    if isinstance(request, Undecodable):
        raise InvalidRequest(f"request is not a valid {request.message}: {request.reason}")


def tolerant_parser(message_class: Any):
    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except DecodeError as exc:
            return Undecodable(message_class.DESCRIPTOR.full_name, str(exc))
    return parse


def add_to_server(service: "ToolServerService", server: grpc.aio.Server) -> None:
    """Registers the servicer like the generated add_ToolServerServicer_to_server, with
    request parsers that turn undecodable bytes into `Undecodable`."""
    descriptor = pb.DESCRIPTOR.services_by_name["ToolServer"]
    handlers = {}
    for method in descriptor.methods:
        kind = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}[(method.client_streaming, method.server_streaming)]
        handlers[method.name] = kind(
            getattr(service, method.name),
            request_deserializer=tolerant_parser(message_factory.GetMessageClass(method.input_type)),
            response_serializer=message_factory.GetMessageClass(method.output_type).SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(descriptor.full_name, handlers),))
    server.add_registered_method_handlers(descriptor.full_name, handlers)


class ToolServerService(pb_grpc.ToolServerServicer):
    def __init__(self, state: ServerState, python: PythonExecutor, policies: Policies, stream_window: int, *,
                 search: Any = None, lean: Any = None, metrics: ServerMetrics | None = None) -> None:
        self.state = state
        self.python = python
        self.search = search
        self.lean = lean
        self.policies = policies
        self.stream_window = stream_window
        self.idle = asyncio.Event()
        self.idle.set()
        self.inflight_by_caller: collections.Counter[str] = collections.Counter()
        self.metrics = metrics or ServerMetrics()
        self.replica = ""  # this replica's advertised address, set once the port is bound

    def caller(self, context: grpc.aio.ServicerContext) -> CallerPolicy:
        return self.policies.authenticate(context.invocation_metadata())

    async def _dispatch(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> pb.ExecuteResponse:
        self.state.admit()
        kind = request.WhichOneof("call")
        if kind is None:
            raise InvalidRequest("request has no call: set one of python, search, lean, json")
        if kind == "json":
            tool = request.json.tool
            if tool not in tools.KNOWN_TOOLS:
                raise InvalidRequest(f"unknown tool {tool!r}; ListTools says which exist")
            executor = self._executor(tool, caller)
            return await self._run(tool, executor, executor.call_from_json(request.json.arguments), request, caller)
        return await self._run(kind, self._executor(kind, caller), getattr(request, kind), request, caller)

    def _executor(self, tool: str, caller: CallerPolicy) -> Any:
        caller.require_tool(tool)
        executor = {"python": self.python, "search": self.search, "lean": self.lean}[tool]
        if executor is None:
            raise tools.unavailable(tool)
        return executor

    async def _run(self, tool: str, executor: Any, call: Any, request: pb.ExecuteRequest,
                   caller: CallerPolicy) -> pb.ExecuteResponse:
        if tool == "python":
            return await executor.execute(call, request.limits, request.request_id, caller=caller)
        if tool == "search":
            return await executor.search(call, request.request_id, caller.indexes)
        arguments = call if isinstance(call, LeanArguments) else LeanArguments(call)
        timeout_ms = caller.lean_timeout_ms(request.limits.timeout_ms, executor.settings.default_timeout_ms)
        return await executor.check(arguments.call, request.request_id, timeout_ms, caller.lean_headers,
                                    statement=arguments.statement)

    async def _tracked(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> pb.ExecuteResponse:
        """Runs one call, counting it for the caller's in-flight cap and the metrics."""
        started = time.monotonic()
        tool = tool_of(request)
        call = {"request_id": getattr(request, "request_id", ""), "tool": tool, "caller": caller.name}
        try:
            response = await self._counted(request, caller)
        except RequestError as exc:
            status = status_of(exc)[0].name
            self.metrics.rejected.labels(status).inc()
            log.info("refused: %s", exc, extra={**call, "status": status})
            raise
        outcome = pb.Outcome.Name(response.outcome)
        elapsed = time.monotonic() - started
        self.metrics.calls.labels(tool, outcome).inc()
        self.metrics.latency.labels(tool).observe(elapsed)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("answered %s", outcome, extra={**call, "outcome": outcome, "elapsed_ms": round(elapsed * 1000, 2)})
        return response

    async def _counted(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> pb.ExecuteResponse:
        require_decoded(request)
        if caller.max_inflight and self.inflight_by_caller[caller.name] >= caller.max_inflight:
            raise Exhausted(f"caller {caller.name!r} has {caller.max_inflight} calls in flight, "
                            "the most its policy allows")
        self.state.inflight += 1
        self.inflight_by_caller[caller.name] += 1
        self.metrics.inflight.inc()
        self.idle.clear()
        try:
            return await self._dispatch(request, caller)
        finally:
            self.state.inflight -= 1
            self.inflight_by_caller[caller.name] -= 1
            self.metrics.inflight.dec()
            if self.state.inflight == 0:
                self.idle.set()

    async def Execute(self, request: pb.ExecuteRequest, context: grpc.aio.ServicerContext) -> pb.ExecuteResponse:
        try:
            return await self._tracked(request, self.caller(context))
        except RequestError as exc:
            code, message = status_of(exc)
            context.set_trailing_metadata(NOT_STARTED)
            await context.abort(code, message)
        raise AssertionError("unreachable")

    async def ExecuteStream(self, request_iterator, context: grpc.aio.ServicerContext):
        try:
            caller = self.caller(context)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        # The window counts calls from the moment they are read until their answer has
        # been written to the client, so a client that stops reading stops the server
        # reading its requests: its unread answers never exceed the window.
        responses: asyncio.Queue[pb.ExecuteResponse | None] = asyncio.Queue()
        window = asyncio.Semaphore(self.stream_window)
        tasks: set[asyncio.Task[None]] = set()

        async def answer(request: pb.ExecuteRequest) -> None:
            try:
                response = await self._tracked(request, caller)
            except RequestError as exc:
                response = stream_refusal(getattr(request, "request_id", ""), exc)
            except Exception as exc:  # never lose a call on the stream
                log.exception("stream call %s failed", getattr(request, "request_id", ""))
                response = pb.ExecuteResponse(request_id=getattr(request, "request_id", ""), outcome=pb.CRASHED,
                                              error=f"INTERNAL: {type(exc).__name__}")
            await responses.put(response)

        async def read_all() -> None:
            try:
                async for request in request_iterator:
                    await window.acquire()
                    task = asyncio.get_running_loop().create_task(answer(request))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                while tasks:
                    await asyncio.gather(*list(tasks), return_exceptions=True)
            finally:
                await responses.put(None)

        reader = asyncio.get_running_loop().create_task(read_all())
        try:
            while True:
                response = await responses.get()
                if response is None:
                    break
                yield response
                window.release()
        finally:
            reader.cancel()
            for task in list(tasks):  # the client is gone: nobody reads these answers
                task.cancel()

    async def ListTools(self, request: pb.ListToolsRequest, context: grpc.aio.ServicerContext) -> pb.ListToolsResponse:
        try:
            require_decoded(request)
            caller = self.caller(context)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        specs = []
        if "python" in caller.tools:
            specs.append(self.python.tool_spec(caller))
        if "search" in caller.tools and self.search is not None:
            specs.append(self.search.tool_spec(caller.indexes))
        if "lean" in caller.tools and self.lean is not None:
            specs.append(self.lean.tool_spec())  # says when Lean is not installed here
        return pb.ListToolsResponse(tools=specs)

    async def OpenSession(self, request: pb.OpenSessionRequest, context: grpc.aio.ServicerContext) -> pb.Session:
        try:
            require_decoded(request)
            caller = self.caller(context)
            caller.require_tool("python")
            self.state.admit()
            session = await self.python.open_session(request.limits, caller)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        return pb.Session(session_id=session.session_id, idle_timeout_s=session.idle_timeout_s, replica=self.replica)

    async def CloseSession(self, request: pb.CloseSessionRequest, context: grpc.aio.ServicerContext) -> pb.CloseSessionResponse:
        try:
            require_decoded(request)
            caller = self.caller(context)
            await self.python.session_manager().close(request.session_id, caller.name)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        return pb.CloseSessionResponse()

    async def GetServerInfo(self, request: pb.ServerInfoRequest, context: grpc.aio.ServicerContext) -> pb.ServerInfo:
        try:
            require_decoded(request)
            self.caller(context)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        pool = self.python.pool
        state = self.state
        python_detail = "no worker pool"
        if pool is not None:
            stats = pool.stats()
            python_detail = (f"{stats.size} workers, {stats.idle} idle, {stats.waiting} waiting, "
                             f"{stats.restarts} restarts, {stats.calls} calls")
        statuses = [pb.ToolStatus(name="python", available=state.serving, detail=python_detail)]
        for name, executor in (("search", self.search), ("lean", self.lean)):
            if executor is None:
                statuses.append(pb.ToolStatus(name=name, available=False, detail="not enabled"))
            else:
                statuses.append(pb.ToolStatus(name=name, available=getattr(executor, "available", True),
                                              detail=executor.status()))
        return pb.ServerInfo(
            version=__version__, serving=state.serving and not state.draining,
            sandbox_verified=state.sandbox_verified, insecure=state.insecure, reason=state.reason,
            draining=state.draining,
            checks=[pb.SandboxCheck(name=c.name, ok=c.ok, detail=c.detail) for c in state.checks],
            tools=statuses,
        )


def tool_of(request: pb.ExecuteRequest | Undecodable) -> str:
    if isinstance(request, Undecodable):
        return "none"
    kind = request.WhichOneof("call")
    return request.json.tool if kind == "json" else kind or "none"


def stream_refusal(request_id: str, error: RequestError) -> pb.ExecuteResponse:
    """The response a stream gives for a request it refuses, its error starting with the
    gRPC status a unary call would get: INVALID for a request that cannot be served as
    asked (malformed, unknown session, tool not here), DENIED for one the caller's
    policy refuses, CRASHED when the server could not take it (unavailable, full)."""
    code, message = status_of(error)
    if isinstance(error, (PermissionDenied, Unauthenticated)):
        outcome = pb.DENIED
    elif isinstance(error, (Unavailable, Exhausted)):
        outcome = pb.CRASHED
    else:
        outcome = pb.INVALID
    return pb.ExecuteResponse(request_id=request_id, outcome=outcome, error=f"{code.name}: {message}")
