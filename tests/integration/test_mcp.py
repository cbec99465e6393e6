"""The MCP front, driven by the official `mcp` client against a real server: over stdio
(`toolserver mcp`, forwarding over gRPC) and over streamable HTTP (`/mcp` on the HTTP port)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunningServer, free_port
from tests.integration.test_metrics import scrape
from tests.security.conftest import POLICY_FILE, TOKENS
from toolserver.dispatch import Dispatcher
from toolserver.fronts.http import start_http
from toolserver.policy import Policies
from toolserver.registry import ToolRegistry
from toolserver.settings import Settings
from toolserver.state import ServerState

mcp = pytest.importorskip("mcp", reason="the mcp extra: pip install -e '.[mcp]'")
httpx2 = pytest.importorskip("httpx2", reason="the mcp extra's HTTP client")
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp_types.version import LATEST_MODERN_VERSION  # noqa: E402

ANSWER_WITHIN_S = 60  # a call that has not answered by then has hung


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
    assert set(tools) == {"python", "python_session_open", "python_session_close", "search", "lean", "cpp", "bash",
                          "program"}
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


# Streamable HTTP: the same tools served by the server itself at /mcp.

def http_server(tmp, config: str = "", workers: int = 2) -> tuple[RunningServer, str]:
    port = free_port()
    running = RunningServer(tmp, workers=workers, sessions=1, args=("--http-port", str(port)), config=config)
    return running, f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    running, url = http_server(tmp_path_factory.mktemp("mcp-http"))
    yield url
    running.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A server with the security suite's caller tokens."""
    tmp = tmp_path_factory.mktemp("mcp-policies")
    (tmp / "policies.toml").write_text(POLICY_FILE)
    running, url = http_server(tmp, f'[auth]\npolicy_file = "{tmp / "policies.toml"}"\n', workers=1)
    yield running, url
    running.stop()


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None):
    """An initialized MCP session over streamable HTTP, presenting token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx2.AsyncClient(headers=headers, timeout=ANSWER_WITHIN_S) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with mcp.ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), ANSWER_WITHIN_S)
                yield session


async def call_http(url: str, *calls: tuple[str, dict], token: str | None = None) -> list:
    """Each call's result, over one MCP session; a call that does not answer fails the test."""
    async with http_session(url, token) as session:
        return [await asyncio.wait_for(session.call_tool(name, arguments), ANSWER_WITHIN_S)
                for name, arguments in calls]


async def test_http_serves_the_same_tools_as_stdio(endpoint, server):
    async with http_session(endpoint) as session:
        over_http = {tool.name: tool for tool in (await session.list_tools()).tools}
    async with mcp.stdio_client(bridge(server.target)) as (read, write):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            over_stdio = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(over_http) == {"python", "python_session_open", "python_session_close", "search", "lean", "cpp", "bash",
                              "program"}
    for name, tool in over_http.items():
        assert (tool.description, tool.input_schema) == (over_stdio[name].description, over_stdio[name].input_schema)
    assert "ctx" not in over_http["python"].input_schema["properties"]


async def test_http_python_runs_and_the_models_errors_are_normal_output(endpoint):
    ok, error = await call_http(endpoint, ("python", {"code": "import sympy\nprint(sympy.factorint(360))"}),
                                ("python", {"code": "1 / 0"}))
    assert not ok.is_error and "{2: 3, 3: 2, 5: 1}" in text(ok)
    assert not error.is_error and "outcome: ERROR" in text(error) and "ZeroDivisionError" in text(error)


async def test_http_calls_in_flight_at_once_all_answer(endpoint):
    async with http_session(endpoint) as session:
        results = await asyncio.wait_for(asyncio.gather(*(
            session.call_tool("python", {"code": f"import time\ntime.sleep(0.3)\nprint({i} * {i})"})
            for i in range(6))), ANSWER_WITHIN_S)
    assert [text(result).strip() for result in results] == [f"stdout:\n{i * i}" for i in range(6)]


async def test_http_a_session_keeps_its_variables(endpoint):
    async with http_session(endpoint) as session:
        opened = await session.call_tool("python_session_open", {})
        session_id = json.loads(text(opened))["session_id"]
        await session.call_tool("python", {"code": "x = 41", "session_id": session_id})
        used = await session.call_tool("python", {"code": "print(x + 1)", "session_id": session_id})
        closed = await session.call_tool("python_session_close", {"session_id": session_id})
        gone = await session.call_tool("python", {"code": "x", "session_id": session_id})
    assert not opened.is_error and "42" in text(used) and text(closed) == "closed"
    assert gone.is_error and "NOT_FOUND" in text(gone)


async def test_http_search_and_infrastructure_failures(endpoint):
    search, lean = await call_http(endpoint, ("search", {"query": "greatest common divisor", "top_k": 2}),
                                   ("lean", {"code": "theorem t : 1 = 1 := rfl"}))
    hits = json.loads(text(search))
    assert not search.is_error and len(hits) == 2 and {"id", "title", "text", "score"} <= set(hits[0])
    assert lean.is_error and "not installed" in text(lean)  # no Lean toolchain on this machine


async def test_http_needs_a_known_token_and_applies_the_callers_policy(guarded):
    running, url = guarded
    before = scrape(running)
    async with httpx2.AsyncClient(timeout=10) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": TOKENS["bob"]}):
            reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                    headers={"Accept": "application/json, text/event-stream", **headers})
            assert reply.status_code == 401 and reply.json()["error"] == "invalid_token"
    with pytest.raises(ExceptionGroup) as refused:  # the SDK client's task groups wrap its error
        await call_http(url, ("python", {"code": "print(1)"}))
    assert refused.group_contains(mcp.MCPError)
    python, search = await call_http(url, ("python", {"code": "print(6 * 7)"}), ("search", {"query": "sorting"}),
                                     token=TOKENS["bob"])  # bob: python only
    assert not python.is_error and "42" in text(python)
    assert search.is_error and "PERMISSION_DENIED" in text(search) and "'bob'" in text(search)
    (denied,) = await call_http(url, ("python_session_open", {}), token=TOKENS["carol"])  # carol: search only
    assert denied.is_error and "PERMISSION_DENIED" in text(denied)
    after = scrape(running)

    def counted(key: str) -> float:
        return after.get(key, 0) - before.get(key, 0)

    def front(status: str) -> float:
        return counted(f'toolserver_front_requests_total{{front="mcp",status="{status}"}}')

    assert counted('toolserver_http_refused_total{reason="token"}') >= 4  # at the fronts' door
    assert front("200") == 1 and front("403") == 2


async def test_http_over_the_per_request_protocol_the_caller_is_still_its_token(guarded):
    _, url = guarded
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS['bob']}"}, timeout=ANSWER_WITHIN_S) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http), mode=LATEST_MODERN_VERSION) as client:
            python = await asyncio.wait_for(client.call_tool("python", {"code": "print(2 ** 10)"}), ANSWER_WITHIN_S)
            search = await asyncio.wait_for(client.call_tool("search", {"query": "sorting"}), ANSWER_WITHIN_S)
    assert not python.is_error and "1024" in text(python)
    assert search.is_error and "PERMISSION_DENIED" in text(search)


async def test_http_a_get_is_refused_rather_than_left_open(endpoint):
    async with httpx2.AsyncClient(timeout=10) as http:
        reply = await http.get(endpoint, headers={"Accept": "text/event-stream"})
    assert reply.status_code == 405


def test_the_server_stops_cleanly_after_mcp_calls(tmp_path):
    running, url = http_server(tmp_path)
    try:
        (result,) = asyncio.run(call_http(url, ("python", {"code": "print('served')"})))
        assert "served" in text(result)
        assert "MCP /mcp" in running.output()
    finally:
        code = running.stop()
    assert code == 0 and "stopped" in Path(running.log.name).read_text()


async def test_without_the_mcp_extra_the_other_http_fronts_serve(monkeypatch, caplog):
    loaded = [name for name in sys.modules if name.startswith("mcp.")] + ["toolserver.fronts.mcp_http",
                                                                          "toolserver.fronts.mcp"]
    for name in loaded:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "mcp", None)  # any import of it or its modules now fails
    dispatcher = Dispatcher(ServerState(serving=True, reason=""), ToolRegistry([]))
    caplog.set_level(logging.INFO, logger="toolserver.fronts.http")
    async with AsyncExitStack() as stack:
        port = await start_http(Settings(), dispatcher, Policies({}), stack)
        async with httpx2.AsyncClient(timeout=10) as http:
            ping = await http.get(f"http://127.0.0.1:{port}/v1/ping")
            absent = await http.post(f"http://127.0.0.1:{port}/mcp", json={})
    assert ping.status_code == 200 and absent.status_code == 404
    assert "MCP endpoint off (mcp" in caplog.text and "pip install 'toolserver[mcp]'" in caplog.text
