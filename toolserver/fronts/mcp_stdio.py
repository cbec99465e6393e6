"""The MCP bridge on stdio: `toolserver mcp --target ADDR`.

Serves the MCP tools (`toolserver.fronts.mcp`) on stdin/stdout, what Claude Desktop,
Claude Code and the OpenAI Agents SDK start, and forwards each call to a tool server over
gRPC with `toolclient.client`, presenting the bridge's own token: the MCP client's
requests carry no caller of their own.
"""

from __future__ import annotations

from toolclient.client import AsyncToolClient, ToolServerError
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.fronts.mcp import CALL_DEADLINE_S, Headers, Refused, mcp_server


class ClientBackend:
    """The tools' calls made on one gRPC client of a tool server."""

    def __init__(self, client: AsyncToolClient) -> None:
        self.client = client

    async def list_tools(self, headers: Headers) -> list[pb.ToolSpec]:
        try:
            return await self.client.list_tools()
        except ToolServerError as exc:
            raise Refused(str(exc)) from exc

    async def execute(self, request: pb.ExecuteRequest, headers: Headers) -> pb.ExecuteResponse:
        try:
            return await self.client.execute(request)
        except ToolServerError as exc:
            raise Refused(str(exc)) from exc

    async def open_session(self, headers: Headers) -> pb.Session:
        try:
            return await self.client.open_session()
        except ToolServerError as exc:
            raise Refused(str(exc)) from exc

    async def close_session(self, session_id: str, headers: Headers) -> None:
        try:
            await self.client.close_session(session_id)
        except ToolServerError as exc:
            raise Refused(str(exc)) from exc


async def serve_stdio(target: str, *, token: str | None = None, tls_ca: str | None = None,
                      tls_cert: str | None = None, tls_key: str | None = None) -> None:
    """Serves MCP on stdin/stdout until the client closes it, a client of target with the
    token and TLS files given."""
    async with AsyncToolClient(target, timeout_s=CALL_DEADLINE_S, token=token, tls_ca=tls_ca, tls_cert=tls_cert,
                               tls_key=tls_key) as client:
        await mcp_server(ClientBackend(client)).run_stdio_async()
