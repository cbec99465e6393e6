"""The ToolServer gRPC servicer: a thin adapter from requests to executors.

Request errors are mapped to gRPC status codes here and nowhere else; a failure of the
caller's code is a normal response carrying its Outcome. On a stream, a bad message is
answered with outcome INVALID and the stream goes on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import grpc

from sandbox.selftest import Check
from toolserver import __version__, tools
from toolserver.errors import InvalidRequest, RequestError, Unavailable, status_of
from toolserver.python_tool import PythonExecutor
from toolserver.v1 import toolserver_pb2 as pb
from toolserver.v1 import toolserver_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)


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


class ToolServerService(pb_grpc.ToolServerServicer):
    def __init__(self, state: ServerState, python: PythonExecutor, stream_window: int) -> None:
        self.state = state
        self.python = python
        self.stream_window = stream_window
        self.idle = asyncio.Event()
        self.idle.set()

    async def _dispatch(self, request: pb.ExecuteRequest, *, stream: bool) -> pb.ExecuteResponse:
        self.state.admit()
        kind = request.WhichOneof("call")
        if kind is None:
            raise InvalidRequest("request has no call: set one of python, search, lean, json")
        if kind == "json":
            tool = request.json.tool
            if tool == "python":
                call = tools.python_call_from_json(request.json.arguments)
                return await self.python.execute(call, request.limits, request.request_id, wait=stream)
            if tool in tools.KNOWN_TOOLS:
                raise tools.unavailable(tool)
            raise InvalidRequest(f"unknown tool {tool!r}; ListTools says which exist")
        if kind == "python":
            return await self.python.execute(request.python, request.limits, request.request_id, wait=stream)
        raise tools.unavailable(kind)

    async def _tracked(self, request: pb.ExecuteRequest, *, stream: bool) -> pb.ExecuteResponse:
        self.state.inflight += 1
        self.idle.clear()
        try:
            return await self._dispatch(request, stream=stream)
        finally:
            self.state.inflight -= 1
            if self.state.inflight == 0:
                self.idle.set()

    async def Execute(self, request: pb.ExecuteRequest, context: grpc.aio.ServicerContext) -> pb.ExecuteResponse:
        try:
            return await self._tracked(request, stream=False)
        except RequestError as exc:
            code, message = status_of(exc)
            await context.abort(code, message)
        raise AssertionError("unreachable")

    async def ExecuteStream(self, request_iterator, context: grpc.aio.ServicerContext):
        responses: asyncio.Queue[pb.ExecuteResponse | None] = asyncio.Queue()
        window = asyncio.Semaphore(self.stream_window)
        tasks: set[asyncio.Task[None]] = set()

        async def answer(request: pb.ExecuteRequest) -> None:
            try:
                response = await self._tracked(request, stream=True)
            except RequestError as exc:
                code, message = status_of(exc)
                outcome = pb.INVALID if isinstance(exc, InvalidRequest) else pb.DENIED
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    outcome = pb.CRASHED
                response = pb.ExecuteResponse(request_id=request.request_id, outcome=outcome,
                                              error=f"{code.name}: {message}")
            except Exception as exc:  # never lose a call on the stream
                log.exception("stream call %s failed", request.request_id)
                response = pb.ExecuteResponse(request_id=request.request_id, outcome=pb.CRASHED,
                                              error=f"INTERNAL: {type(exc).__name__}")
            finally:
                window.release()
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
        finally:
            reader.cancel()

    async def ListTools(self, request: pb.ListToolsRequest, context: grpc.aio.ServicerContext) -> pb.ListToolsResponse:
        return pb.ListToolsResponse(tools=tools.list_tools())

    async def OpenSession(self, request: pb.OpenSessionRequest, context: grpc.aio.ServicerContext) -> pb.Session:
        try:
            self.state.admit()
            session = await self.python.session_manager().open()
        except RequestError as exc:
            await context.abort(*status_of(exc))
        return pb.Session(session_id=session.session_id, idle_timeout_s=session.idle_timeout_s)

    async def CloseSession(self, request: pb.CloseSessionRequest, context: grpc.aio.ServicerContext) -> pb.CloseSessionResponse:
        try:
            await self.python.session_manager().close(request.session_id)
        except RequestError as exc:
            await context.abort(*status_of(exc))
        return pb.CloseSessionResponse()

    async def GetServerInfo(self, request: pb.ServerInfoRequest, context: grpc.aio.ServicerContext) -> pb.ServerInfo:
        pool = self.python.pool
        state = self.state
        python_detail = "no worker pool"
        if pool is not None:
            stats = pool.stats()
            python_detail = (f"{stats.size} workers, {stats.idle} idle, {stats.waiting} waiting, "
                             f"{stats.restarts} restarts, {stats.calls} calls")
        return pb.ServerInfo(
            version=__version__, serving=state.serving and not state.draining,
            sandbox_verified=state.sandbox_verified, insecure=state.insecure, reason=state.reason,
            draining=state.draining,
            checks=[pb.SandboxCheck(name=c.name, ok=c.ok, detail=c.detail) for c in state.checks],
            tools=[pb.ToolStatus(name="python", available=state.serving, detail=python_detail),
                   pb.ToolStatus(name="search", available=False, detail="not enabled"),
                   pb.ToolStatus(name="lean", available=False, detail="not enabled")],
        )
