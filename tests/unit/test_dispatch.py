"""The dispatcher: admission, per-caller in-flight caps, metrics, in-stream refusals."""

from __future__ import annotations

import asyncio

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.dispatch import Dispatcher, refused_response
from toolserver.errors import Exhausted, InvalidRequest, PermissionDenied, ToolUnavailable, Unavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import ToolRegistry
from toolserver.state import ServerState

QUERY = pb.ExecuteRequest(request_id="q", search=pb.SearchCall(query="tower"))


@pytest.fixture
def dispatcher(search) -> Dispatcher:
    return Dispatcher(ServerState(serving=True, reason=""), ToolRegistry([search]))


def sample(dispatcher: Dispatcher, name: str, **labels: str) -> float:
    return dispatcher.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_call_is_answered_and_counted(dispatcher):
    response = await dispatcher.execute(QUERY, OPEN_POLICY)
    assert response.outcome == pb.OK and response.request_id == "q" and response.search.hits
    assert sample(dispatcher, "toolserver_calls_total", tool="search", outcome="OK") == 1
    assert dispatcher.state.inflight == 0 and dispatcher.idle.is_set()


async def test_nothing_runs_while_the_server_does_not_serve(dispatcher):
    dispatcher.state.refuse("sandbox self-test failed")
    with pytest.raises(Unavailable, match="self-test failed"):
        await dispatcher.execute(QUERY, OPEN_POLICY)
    dispatcher.state.serving, dispatcher.state.draining = True, True
    with pytest.raises(Unavailable, match="draining"):
        await dispatcher.execute(QUERY, OPEN_POLICY)
    assert sample(dispatcher, "toolserver_rejected_calls_total", reason="UNAVAILABLE") == 2


async def test_a_caller_past_its_inflight_cap_is_refused(dispatcher):
    capped = CallerPolicy(name="capped", tools=frozenset({"search"}), max_inflight=1)
    dispatcher.inflight_by_caller["capped"] = 1  # one call of its own is running
    with pytest.raises(Exhausted, match="1 calls in flight"):
        await dispatcher.execute(QUERY, capped)
    dispatcher.inflight_by_caller["capped"] = 0
    assert (await dispatcher.execute(QUERY, capped)).outcome == pb.OK


async def test_sessions_need_the_session_tool(dispatcher):
    with pytest.raises(ToolUnavailable, match="'python' is not enabled"):
        await dispatcher.open_session(pb.Limits(), OPEN_POLICY)


async def test_many_calls_at_once_all_come_back(dispatcher):
    responses = await asyncio.gather(*(dispatcher.execute(pb.ExecuteRequest(request_id=str(i), search=QUERY.search),
                                                          OPEN_POLICY) for i in range(50)))
    assert sorted(r.request_id for r in responses) == sorted(str(i) for i in range(50))
    assert dispatcher.state.inflight == 0


def test_refusals_in_a_stream_carry_an_outcome_and_the_status():
    assert refused_response("a", PermissionDenied("no")).outcome == pb.DENIED
    assert refused_response("b", Exhausted("full")).outcome == pb.CRASHED
    invalid = refused_response("c", InvalidRequest("bad"))
    assert invalid.outcome == pb.INVALID and invalid.error == "INVALID_ARGUMENT: bad"


def test_server_info_lists_the_tools(dispatcher):
    info = dispatcher.server_info()
    assert info.serving and [tool.name for tool in info.tools] == ["python", "search", "lean", "cpp", "bash",
                                                                       "program"]
