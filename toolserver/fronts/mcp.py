"""The MCP front: the server's tools for agents that speak the Model Context Protocol.

`toolserver mcp --target ADDR` runs an MCP server on stdio (what Claude Desktop, Claude
Code and the OpenAI Agents SDK start) that forwards each tool call to a tool server over
gRPC with `toolserver.client`. Tools: `python` (optional `session_id`),
`python_session_open`, `python_session_close`, `search`, `lean`. The model's own
failures (an exception, a timeout, a proof with errors) are normal output for it to
read; a failure of the infrastructure (the server unreachable or refusing, the sandbox
lost) is an MCP error result (`isError`).
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from toolserver.client import AsyncToolClient, ToolServerError, python_request
from toolserver.v1 import toolserver_pb2 as pb

INSTRUCTIONS = ("Run Python in an isolated sandbox (sympy, numpy, mpmath available), search offline "
                "document indexes, and check Lean 4 proofs. Open a python session to keep variables "
                "between calls.")


def outcome_text(response: pb.ExecuteResponse) -> str:
    """What the model reads of a call that ran: its outcome, output and result."""
    parts = []
    if response.outcome != pb.OK:
        parts.append(f"outcome: {pb.Outcome.Name(response.outcome)}" + (f": {response.error}" if response.error else ""))
    if response.stdout:
        parts.append(f"stdout:\n{response.stdout}")
    if response.stderr:
        parts.append(f"stderr:\n{response.stderr}")
    kind = response.WhichOneof("result")
    if kind == "python" and response.python.value:
        parts.append(f"value: {response.python.value}")
    elif kind == "search":
        parts.append(json.dumps([{"id": h.id, "title": h.title, "text": h.text, "score": round(h.score, 4)}
                                 for h in response.search.hits], ensure_ascii=False, indent=1))
    elif kind == "lean":
        lean = response.lean
        parts.append(f"complete: {lean.complete}; sorries: {lean.sorries}")
        parts += [f"{m.severity} at line {m.line}, column {m.column}: {m.text}" for m in lean.messages]
    if response.truncated:
        parts.append("(output truncated at the server's cap)")
    return "\n".join(parts) or "(no output)"


class ToolCalls:
    """The MCP tools' calls, made on one client of the tool server."""

    def __init__(self, client: AsyncToolClient) -> None:
        self.client = client

    async def call(self, request: pb.ExecuteRequest) -> str:
        try:
            response = await self.client.execute(request)
        except ToolServerError as exc:
            raise ToolError(f"the tool server refused the call: {exc}") from exc
        if response.outcome in (pb.CRASHED, pb.INVALID):
            raise ToolError(outcome_text(response))
        return outcome_text(response)

    async def python(self, code: str, session_id: str = "") -> str:
        """Run Python 3 code in an isolated sandbox. Print what you want to see; the value of
        a last bare expression is returned too. Without session_id nothing persists."""
        return await self.call(python_request(code, session_id=session_id))

    async def python_session_open(self) -> str:
        """Open a Python session whose variables and imports persist between python calls
        given its session_id. Close it when done."""
        try:
            session = await self.client.open_session()
        except ToolServerError as exc:
            raise ToolError(f"no session: {exc}") from exc
        return json.dumps({"session_id": session.session_id, "idle_timeout_s": session.idle_timeout_s})

    async def python_session_close(self, session_id: str) -> str:
        """Close a Python session opened by python_session_open."""
        try:
            await self.client.close_session(session_id)
        except ToolServerError as exc:
            raise ToolError(f"session not closed: {exc}") from exc
        return "closed"

    async def search(self, query: str, index: str = "", top_k: int = 0) -> str:
        """Search offline document indexes; returns the best documents with id, title,
        text and score. index: empty for the server's default."""
        return await self.call(pb.ExecuteRequest(search=pb.SearchCall(query=query, index=index, top_k=top_k)))

    async def lean(self, code: str, header: str = "", statement: str = "") -> str:
        """Check Lean 4 code: Lean's messages, the sorries, and whether the proof is complete.
        header: import lines, e.g. "import Mathlib"; statement: a theorem statement the code
        must prove unchanged."""
        return await self.call(pb.ExecuteRequest(json=pb.JsonCall(tool="lean", arguments=json.dumps(
            {"code": code, "header": header, "statement": statement}))))


def mcp_server(client: AsyncToolClient) -> MCPServer:
    server = MCPServer("toolserver", instructions=INSTRUCTIONS)
    calls = ToolCalls(client)
    for tool in (calls.python, calls.python_session_open, calls.python_session_close, calls.search, calls.lean):
        server.add_tool(tool, structured_output=False)
    return server


async def serve_stdio(target: str, **client_args: str | None) -> None:
    """Serves MCP on stdin/stdout until the client closes it; client_args: the token and
    TLS files of `AsyncToolClient`."""
    async with AsyncToolClient(target, timeout_s=120.0, **client_args) as client:
        await mcp_server(client).run_stdio_async()
