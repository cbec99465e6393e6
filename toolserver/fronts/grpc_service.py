"""The gRPC front: the contract's ToolServer service over the dispatcher.

Each verb is one line; `answered` maps request errors to gRPC status codes in one
place. A failure of the caller's code is a normal response carrying its Outcome. On a
stream, a refused message is answered in-stream (`refused_response`) and the stream
goes on. `AuthInterceptor` (grpc_transport) turns away callers without a known token
before a verb runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Awaitable, Callable, TypeVar

import grpc

from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc
from toolserver.dispatch import Dispatcher, refused_response
from toolserver.errors import InvalidRequest, RequestError, status_of
from toolserver.fronts.grpc_transport import NOT_STARTED, Undecodable, decoded
from toolserver.policy import CallerPolicy, Policies

log = logging.getLogger(__name__)

Reply = TypeVar("Reply")
# An OpenSession answered with less of its deadline left than this would likely reach its
# caller too late (gRPC reports no deadline passed on the way as a cancellation): its
# session is closed instead.
HANDOVER_MARGIN_S = 0.05


class ToolServerService(pb_grpc.ToolServerServicer):
    def __init__(self, dispatcher: Dispatcher, policies: Policies, stream_window: int) -> None:
        self.dispatcher = dispatcher
        self.policies = policies
        self.stream_window = stream_window
        self._closing: set[asyncio.Task[None]] = set()  # sessions whose OpenSession was not answered

    def caller(self, context: grpc.aio.ServicerContext) -> CallerPolicy:
        return self.policies.authenticate(context.invocation_metadata())

    async def answered(self, context: grpc.aio.ServicerContext, verb: Callable[[Any, CallerPolicy], Awaitable[Reply]],
                       request: Any, *, not_started: bool = False) -> Reply:
        """verb's reply to request for the authenticated caller; a request error aborts
        the call with its status (marked not started where nothing of it ran)."""
        try:
            return await verb(request, self.caller(context))
        except RequestError as exc:
            if not_started:
                context.set_trailing_metadata(NOT_STARTED)
            await context.abort(*status_of(exc))
        raise AssertionError("unreachable")

    async def Execute(self, request: pb.ExecuteRequest, context: grpc.aio.ServicerContext) -> pb.ExecuteResponse:
        return await self.answered(context, self.execute, request, not_started=True)

    async def ListTools(self, request: pb.ListToolsRequest, context: grpc.aio.ServicerContext) -> pb.ListToolsResponse:
        return await self.answered(context, self.list_tools, request)

    async def OpenSession(self, request: pb.OpenSessionRequest, context: grpc.aio.ServicerContext) -> pb.Session:
        """A new session; one whose answer would not reach its caller (its deadline passes as
        the session is handed over, or the caller hangs up) is closed: nobody could name it."""
        session = await self.answered(context, self.open_session, request)
        caller = self.caller(context)
        remaining = context.time_remaining()
        if remaining is not None and remaining < HANDOVER_MARGIN_S:
            await self.close_unanswered(session.session_id, caller)
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                "the deadline passed as the session was handed over: it is closed")

        def unanswered(done: grpc.aio.ServicerContext) -> None:
            if done.cancelled():
                task = asyncio.get_running_loop().create_task(self.close_unanswered(session.session_id, caller))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

        context.add_done_callback(unanswered)
        return session

    async def close_unanswered(self, session_id: str, caller: CallerPolicy) -> None:
        try:
            await self.dispatcher.close_session(session_id, caller)
        except RequestError:
            pass  # closed already

    async def CloseSession(self, request: pb.CloseSessionRequest,
                           context: grpc.aio.ServicerContext) -> pb.CloseSessionResponse:
        return await self.answered(context, self.close_session, request)

    async def GetServerInfo(self, request: pb.ServerInfoRequest, context: grpc.aio.ServicerContext) -> pb.ServerInfo:
        return await self.answered(context, self.server_info, request)

    async def execute(self, request: pb.ExecuteRequest | Undecodable, caller: CallerPolicy) -> pb.ExecuteResponse:
        try:
            call: pb.ExecuteRequest = decoded(request)
        except InvalidRequest as error:
            self.dispatcher.rejected(error, "", "none", caller)
            raise
        return await self.dispatcher.execute(call, caller)

    async def list_tools(self, request: pb.ListToolsRequest, caller: CallerPolicy) -> pb.ListToolsResponse:
        decoded(request)
        return pb.ListToolsResponse(tools=self.dispatcher.list_tools(caller))

    async def open_session(self, request: pb.OpenSessionRequest, caller: CallerPolicy) -> pb.Session:
        return await self.dispatcher.open_session(decoded(request).limits, caller)

    async def close_session(self, request: pb.CloseSessionRequest, caller: CallerPolicy) -> pb.CloseSessionResponse:
        await self.dispatcher.close_session(decoded(request).session_id, caller)
        return pb.CloseSessionResponse()

    async def server_info(self, request: pb.ServerInfoRequest, caller: CallerPolicy) -> pb.ServerInfo:
        decoded(request)
        return self.dispatcher.server_info()

    async def ExecuteStream(self, request_iterator: AsyncIterable[pb.ExecuteRequest | Undecodable],
                            context: grpc.aio.ServicerContext) -> AsyncIterator[pb.ExecuteResponse]:
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

        async def answer(request: pb.ExecuteRequest | Undecodable) -> None:
            request_id = getattr(request, "request_id", "")
            try:
                response = await self.execute(request, caller)
            except RequestError as exc:
                response = refused_response(request_id, exc)
            except Exception as exc:  # never lose a call on the stream
                log.exception("stream call %s failed", request_id)
                response = pb.ExecuteResponse(request_id=request_id, outcome=pb.CRASHED,
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
