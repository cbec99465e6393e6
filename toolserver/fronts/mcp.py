"""The MCP tools: the server's tools for agents that speak the Model Context Protocol.

The five tools are defined here once — `python` (optional `session_id`),
`python_session_open`, `python_session_close`, `search`, `lean` — with what the model
reads of each answer and the error rule: the model's own failures (an exception, a
timeout, a proof with errors) are normal output for it to read; a failure of the
infrastructure (the server refusing or unreachable, the sandbox lost, the tool not
installed) is an MCP error result (`isError`). A `Backend` makes the calls:
`toolserver.fronts.mcp_stdio` over gRPC to a tool server (`toolserver mcp`), and
`toolserver.fronts.mcp_http` on the server's own dispatcher (`/mcp` on the HTTP port).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from toolserver.answer_text import answer_text
from toolserver.client import python_request
from toolserver.v1 import toolserver_pb2 as pb

INSTRUCTIONS = ("Run Python in an isolated sandbox (sympy, numpy, mpmath available), search offline "
                "document indexes, and check Lean 4 proofs. Open a python session to keep variables "
                "between calls.")
CALL_DEADLINE_S = 120.0  # no tool call waits longer for its answer, on either backend

Headers = Mapping[str, str] | None  # the HTTP request's headers; None on stdio


class Refused(Exception):
    """The tool server did not answer a call; the message starts with its gRPC status name."""


class Backend(Protocol):
    """Where the tools' calls go; each verb raises Refused when the call is not answered."""

    async def execute(self, request: pb.ExecuteRequest, headers: Headers) -> pb.ExecuteResponse: ...

    async def open_session(self, headers: Headers) -> pb.Session: ...

    async def close_session(self, session_id: str, headers: Headers) -> None: ...


class ToolCalls:
    """The MCP tools; their docstrings are the descriptions the model sees. Each takes the
    request's Context for its headers, which name the caller on HTTP."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def call(self, request: pb.ExecuteRequest, ctx: Context) -> str:
        try:
            response = await self.backend.execute(request, ctx.headers)
        except Refused as exc:
            raise ToolError(f"the tool server refused the call: {exc}") from exc
        if response.outcome in (pb.CRASHED, pb.INVALID):
            raise ToolError(answer_text(response))
        return answer_text(response)

    async def python(self, code: str, ctx: Context, session_id: str = "") -> str:
        """Run Python 3 code in an isolated sandbox. Print what you want to see; the value of
        a last bare expression is returned too. Without session_id nothing persists."""
        return await self.call(python_request(code, session_id=session_id), ctx)

    async def python_session_open(self, ctx: Context) -> str:
        """Open a Python session whose variables and imports persist between python calls
        given its session_id. Close it when done."""
        try:
            session = await self.backend.open_session(ctx.headers)
        except Refused as exc:
            raise ToolError(f"no session: {exc}") from exc
        return json.dumps({"session_id": session.session_id, "idle_timeout_s": session.idle_timeout_s})

    async def python_session_close(self, session_id: str, ctx: Context) -> str:
        """Close a Python session opened by python_session_open."""
        try:
            await self.backend.close_session(session_id, ctx.headers)
        except Refused as exc:
            raise ToolError(f"session not closed: {exc}") from exc
        return "closed"

    async def search(self, query: str, ctx: Context, index: str = "", top_k: int = 0) -> str:
        """Search offline document indexes; returns the best documents with id, title,
        text and score. index: empty for the server's default."""
        return await self.call(pb.ExecuteRequest(search=pb.SearchCall(query=query, index=index, top_k=top_k)), ctx)

    async def lean(self, code: str, ctx: Context, header: str = "", statement: str = "") -> str:
        """Check Lean 4 code: Lean's messages, the sorries, and whether the proof is complete.
        header: import lines, e.g. "import Mathlib"; statement: a theorem statement the code
        must prove unchanged."""
        return await self.call(pb.ExecuteRequest(json=pb.JsonCall(tool="lean", arguments=json.dumps(
            {"code": code, "header": header, "statement": statement}))), ctx)


def mcp_server(backend: Backend) -> MCPServer:
    """An MCP server with the five tools, their calls made on backend."""
    server = MCPServer("toolserver", instructions=INSTRUCTIONS)
    calls = ToolCalls(backend)
    for tool in (calls.python, calls.python_session_open, calls.python_session_close, calls.search, calls.lean):
        server.add_tool(tool, structured_output=False)
    return server
