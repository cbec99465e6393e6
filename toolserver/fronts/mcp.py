"""The MCP tools: the server's tools for agents that speak the Model Context Protocol.

The tools are the server's own, as ListTools gives them to the caller (name, description,
JSON schema), and for the tool that has sessions two more, `<tool>_session_open` and
`<tool>_session_close`; none is written here. Each call goes to the server as a JsonCall,
and its answer is what a model reads of it (`toolcontract.answer_text`), then the images
its call displayed (a session's figures) as image content. The error rule:
the model's own failures (an exception, a timeout, a proof with errors) are normal output
for it to read; a failure of the infrastructure (the server refusing or unreachable, the
sandbox lost, the tool not installed) is an MCP error result (`isError`). A `Backend`
makes the calls: a gRPC client of a tool server (the `toolserver mcp` bridge), and the
server's own dispatcher (`toolserver.fronts.mcp_http`, `/mcp` on the HTTP port).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, CallToolResult, ImageContent, ListToolsResult, TextContent
from mcp.types import Tool as MCPTool

from toolcontract.answer_text import answer_text
from toolcontract.displays import displayed_images
from toolcontract.names import SESSION_TOOL, TOOL_NAMES
from toolcontract.v1 import toolserver_pb2 as pb

INSTRUCTIONS = (f"Tools that run in isolated sandboxes on this server: {', '.join(TOOL_NAMES)}; each is listed "
                f"with what it does and its JSON schema (a tool the server or your policy does not serve is "
                f"left out). Open a {SESSION_TOOL} session to keep variables between {SESSION_TOOL} calls.")
CALL_DEADLINE_S = 120.0  # no tool call waits longer for its answer, on either backend
OUTPUT_BYTES = 65_536  # of each stream, for a model's context (the server's default, 16 MiB, is a judge's)
OPEN, CLOSE = f"{SESSION_TOOL}_session_open", f"{SESSION_TOOL}_session_close"
SESSION_TOOLS = (
    MCPTool(name=OPEN, description=f"Open a {SESSION_TOOL} session whose state (variables, imports, files) persists "
            f"between {SESSION_TOOL} calls given its session_id. Close it when done.",
            input_schema={"type": "object", "properties": {}}),
    MCPTool(name=CLOSE, description=f"Close a {SESSION_TOOL} session opened by {OPEN}.",
            input_schema={"type": "object", "properties": {"session_id": {"type": "string"}},
                          "required": ["session_id"]}),
)

Headers = Mapping[str, str] | None  # the HTTP request's headers; None on stdio


class Refused(Exception):
    """The tool server did not answer a call; the message starts with its gRPC status name."""


class Backend(Protocol):
    """Where the tools' calls go; each verb raises Refused when the call is not answered."""

    async def list_tools(self, headers: Headers) -> list[pb.ToolSpec]: ...

    async def execute(self, request: pb.ExecuteRequest, headers: Headers) -> pb.ExecuteResponse: ...

    async def open_session(self, headers: Headers) -> pb.Session: ...

    async def close_session(self, session_id: str, headers: Headers) -> None: ...


def mcp_tools(specs: list[pb.ToolSpec]) -> list[MCPTool]:
    """The server's tools as MCP lists them, with the session tools after the tool that
    has sessions."""
    tools = []
    for spec in specs:
        tools.append(MCPTool(name=spec.name, description=spec.description,
                             input_schema=json.loads(spec.parameters or '{"type": "object"}')))
        if spec.name == SESSION_TOOL:
            tools += SESSION_TOOLS
    return tools


class ToolServerMCP(MCPServer):
    """An MCP server whose tools are the tool server's, listed and called on a backend.

    tools/list is answered per request (the SDK's handler is overridden, as `call_tool`
    is), so that each caller sees the tools its policy grants."""

    def __init__(self, backend: Backend) -> None:
        super().__init__("toolserver", instructions=INSTRUCTIONS)
        self.backend = backend

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        try:
            specs = await self.backend.list_tools(Context(request_context=ctx, mcp_server=self).headers)
        except Refused as exc:
            raise MCPError(code=INTERNAL_ERROR, message=f"the tool server did not list its tools: {exc}") from exc
        return ListToolsResult(tools=mcp_tools(specs))

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> CallToolResult:
        """One tool call; raises ToolError for an answer that is an MCP error result."""
        headers = context.headers if context is not None else None
        text, images = await self.answer(name, arguments, headers)
        return CallToolResult(content=[TextContent(type="text", text=text),
                                       *(ImageContent(type="image", data=base64.b64encode(data).decode("ascii"),
                                                      mime_type=mime) for mime, data in images)])

    async def answer(self, name: str, arguments: dict[str, Any], headers: Headers) -> tuple[str, list[tuple[str, bytes]]]:
        """The answer's text, and the images among what its call displayed (a figure of a
        session's cell): MCP image content after the text."""
        if name == OPEN:
            try:
                session = await self.backend.open_session(headers)
            except Refused as exc:
                raise ToolError(f"no session: {exc}") from exc
            return json.dumps({"session_id": session.session_id, "idle_timeout_s": session.idle_timeout_s}), []
        if name == CLOSE:
            try:
                await self.backend.close_session(str(arguments.get("session_id", "")), headers)
            except Refused as exc:
                raise ToolError(f"session not closed: {exc}") from exc
            return "closed", []
        request = pb.ExecuteRequest(json=pb.JsonCall(tool=name, arguments=json.dumps(arguments)),
                                    limits=pb.Limits(max_output_bytes=OUTPUT_BYTES))
        try:
            response = await self.backend.execute(request, headers)
        except Refused as exc:
            raise ToolError(f"the tool server refused the call: {exc}") from exc
        if response.outcome in (pb.CRASHED, pb.INVALID):
            raise ToolError(answer_text(response))
        return answer_text(response), displayed_images(response)


def mcp_server(backend: Backend) -> MCPServer:
    """An MCP server with the tool server's tools, their calls made on backend."""
    return ToolServerMCP(backend)
