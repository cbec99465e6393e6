"""The MCP front over stdio, driven by the official `mcp` client against a real server."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import ROOT, free_port

mcp = pytest.importorskip("mcp", reason="the mcp extra: pip install -e '.[mcp]'")


def bridge(target: str) -> "mcp.StdioServerParameters":
    return mcp.StdioServerParameters(command=sys.executable, args=["-m", "toolserver", "mcp", "--target", target],
                                     cwd=str(ROOT))


async def call(target: str, *calls: tuple[str, dict]) -> list:
    """Each call's result, over one MCP session with a fresh `toolserver mcp` process."""
    async with mcp.stdio_client(bridge(target)) as (read, write):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool(name, arguments) for name, arguments in calls]


def text(result) -> str:
    return "".join(item.text for item in result.content)


async def test_the_tools_are_listed(server):
    async with mcp.stdio_client(bridge(server.target)) as (read, write):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"python", "python_session_open", "python_session_close", "search", "lean"}
    assert "code" in tools["python"].input_schema["properties"]


async def test_python_runs_and_the_models_errors_are_normal_output(server):
    ok, error = await call(server.target, ("python", {"code": "import sympy\nprint(sympy.factorint(360))"}),
                           ("python", {"code": "1 / 0"}))
    assert not ok.is_error and "{2: 3, 3: 2, 5: 1}" in text(ok)
    assert not error.is_error and "outcome: ERROR" in text(error) and "ZeroDivisionError" in text(error)


async def test_a_session_keeps_its_variables(server):
    async with mcp.stdio_client(bridge(server.target)) as (read, write):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            opened = await session.call_tool("python_session_open", {})
            session_id = json.loads(text(opened))["session_id"]
            await session.call_tool("python", {"code": "x = 41", "session_id": session_id})
            used = await session.call_tool("python", {"code": "print(x + 1)", "session_id": session_id})
            closed = await session.call_tool("python_session_close", {"session_id": session_id})
            gone = await session.call_tool("python", {"code": "x", "session_id": session_id})
    assert "42" in text(used) and text(closed) == "closed"
    assert gone.is_error and "NOT_FOUND" in text(gone)


async def test_search_answers_documents(server):
    (result,) = await call(server.target, ("search", {"query": "greatest common divisor", "top_k": 2}))
    hits = json.loads(text(result))
    assert not result.is_error and len(hits) == 2 and {"id", "title", "text", "score"} <= set(hits[0])


async def test_infrastructure_failures_are_errors(server):
    (lean,) = await call(server.target, ("lean", {"code": "theorem t : 1 = 1 := rfl"}))
    assert lean.is_error and "not installed" in text(lean)  # no Lean toolchain on this machine
    (down,) = await call(f"127.0.0.1:{free_port()}", ("python", {"code": "print(1)"}))
    assert down.is_error and "UNAVAILABLE" in text(down)
