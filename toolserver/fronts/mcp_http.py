"""The MCP endpoint over streamable HTTP: `/mcp` on the HTTP fronts' port.

The same tools as `toolserver mcp` (`toolserver.fronts.mcp`), served by the official
SDK's session manager inside the server's process and called on its dispatcher: the same
jail, pools, policies, metrics and limits as every other front.

- Callers: with a policy file, a request to /mcp without a known bearer token
  (`Authorization: Bearer ...`) is refused with HTTP 401 by the fronts' door
  (`http_guard`) before the SDK reads it; each tool call runs for the caller its token
  names, and one its policy refuses (a tool not granted, limits above its maxima) is an
  MCP error result.
- Stateless, JSON answers: each POST gets a transport of its own and one JSON body back,
  so no MCP session lives on the server, nothing waits on an open SSE stream, and any
  number of requests may be in flight at once. Python sessions need none of it: they are
  named by the session_id their tools pass. The price: no server-to-client requests or
  progress notifications, which these tools do not send.
- `toolserver_front_requests_total{front="mcp"}` counts each tool call by the HTTP status
  the same refusal gets on the other fronts (200: the dispatcher answered, whatever the
  outcome); requests refused at the door are in `toolserver_http_refused_total`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack
from typing import Iterator

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.dispatch import Dispatcher
from toolserver.errors import (
    Exhausted,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RequestError,
    ToolUnavailable,
    Unauthenticated,
    Unavailable,
    status_of,
)
from toolserver.fronts.http_json import status_for
from toolserver.fronts.mcp import CALL_DEADLINE_S, Headers, Refused, mcp_server
from toolserver.policy import CallerPolicy, Policies

FRONT = "mcp"
PATH = "/mcp"
HTTP_STATUS = {Unauthenticated: 401, PermissionDenied: 403, NotFound: 404, InvalidRequest: 400,
               Exhausted: 503, Unavailable: 503, ToolUnavailable: 503}


class DispatcherBackend:
    """The tools' calls made on this server's dispatcher, for the caller the HTTP
    request's bearer token names."""

    def __init__(self, dispatcher: Dispatcher, policies: Policies) -> None:
        self.dispatcher = dispatcher
        self.policies = policies

    async def list_tools(self, headers: Headers) -> list[pb.ToolSpec]:
        try:
            return self.dispatcher.list_tools(self.caller(headers))
        except RequestError as exc:
            code, message = status_of(exc)
            raise Refused(f"{code.name}: {message}") from exc

    async def execute(self, request: pb.ExecuteRequest, headers: Headers) -> pb.ExecuteResponse:
        with self.answered():
            return await asyncio.wait_for(self.dispatcher.execute(request, self.caller(headers)), CALL_DEADLINE_S)

    async def open_session(self, headers: Headers) -> pb.Session:
        with self.answered():
            return await asyncio.wait_for(self.dispatcher.open_session(pb.Limits(), self.caller(headers)),
                                          CALL_DEADLINE_S)

    async def close_session(self, session_id: str, headers: Headers) -> None:
        with self.answered():
            await asyncio.wait_for(self.dispatcher.close_session(session_id, self.caller(headers)), CALL_DEADLINE_S)

    def caller(self, headers: Headers) -> CallerPolicy:
        return self.policies.authenticate((headers or {}).items())

    @contextlib.contextmanager
    def answered(self) -> Iterator[None]:
        """Counts the call its block makes and raises its request error or timeout as Refused."""
        try:
            yield
        except RequestError as exc:
            self.count(status_for(exc, HTTP_STATUS, 500))
            code, message = status_of(exc)
            raise Refused(f"{code.name}: {message}") from exc
        except TimeoutError as exc:
            self.count(504)
            raise Refused(f"DEADLINE_EXCEEDED: no answer within {CALL_DEADLINE_S:.0f} s") from exc
        self.count(200)

    def count(self, status: int) -> None:
        self.dispatcher.metrics.front_requests.labels(FRONT, str(status)).inc()


class ManagerEndpoint:
    """The SDK's session manager as an ASGI app (Starlette would call a bound method as a
    request handler, not as ASGI)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


async def mcp_routes(settings: CoreSettings, dispatcher: Dispatcher, policies: Policies, stack: AsyncExitStack
                     ) -> list[Route]:
    """The /mcp route; its session manager runs until stack closes (the embedded uvicorn
    has no lifespan to run it), so stack must close the HTTP server first."""
    server = mcp_server(DispatcherBackend(dispatcher, policies))
    # Builds the session manager, with the SDK's DNS-rebinding check for a loopback host;
    # the Starlette app it returns is not used: the route below serves the manager.
    server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                               host=settings.http.host)
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every request at INFO
    await stack.enter_async_context(server.session_manager.run())
    # POST only: a GET would open an SSE stream that a stateless server never writes to.
    return [Route(PATH, ManagerEndpoint(server.session_manager), methods=["POST"])]
