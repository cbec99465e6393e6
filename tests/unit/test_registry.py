"""The registry: the one list of tools, resolving a request to a tool and its call."""

from __future__ import annotations

import pytest

from toolcontract.names import TOOL_NAMES
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest, PermissionDenied, ToolUnavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import SlotSupply, ToolRegistry


@pytest.fixture
def registry(search) -> ToolRegistry:
    return ToolRegistry([search])


def test_the_contract_names_the_tools():
    assert TOOL_NAMES == ("python", "search", "lean", "cpp", "bash", "program")


def test_a_tool_is_registered_once(search):
    with pytest.raises(ValueError, match="twice"):
        ToolRegistry([search, search])


def test_a_request_resolves_to_its_tool_and_parsed_call(registry, search):
    tool, call = registry.resolve(pb.ExecuteRequest(search=pb.SearchCall(query="tower")), OPEN_POLICY)
    assert tool is search and call.query == "tower"
    tool, call = registry.resolve(pb.ExecuteRequest(json=pb.JsonCall(tool="search", arguments='{"query": "x"}')),
                                  OPEN_POLICY)
    assert tool is search and call == pb.SearchCall(query="x")


@pytest.mark.parametrize("request_, error, message", [
    (pb.ExecuteRequest(), InvalidRequest, "request has no call"),
    (pb.ExecuteRequest(json=pb.JsonCall(tool="shell")), InvalidRequest, "unknown tool 'shell'"),
    (pb.ExecuteRequest(lean=pb.LeanCall(code="x")), ToolUnavailable, "not enabled"),
    (pb.ExecuteRequest(json=pb.JsonCall(tool="search", arguments="{")), InvalidRequest, "not valid JSON"),
])
def test_what_cannot_be_resolved_says_why(registry, request_, error, message):
    with pytest.raises(error, match=message):
        registry.resolve(request_, OPEN_POLICY)


def test_the_callers_tools_are_checked_before_its_arguments_are_read(registry):
    python_only = CallerPolicy(name="coder", tools=frozenset({"python"}))
    with pytest.raises(PermissionDenied, match="search"):
        registry.resolve(pb.ExecuteRequest(json=pb.JsonCall(tool="search", arguments="{")), python_only)
    assert registry.specs(python_only) == []
    assert [spec.name for spec in registry.specs(OPEN_POLICY)] == ["search"]


def test_statuses_cover_every_contract_tool(registry):
    statuses = {status.name: status for status in registry.statuses()}
    assert list(statuses) == list(TOOL_NAMES)
    assert statuses["search"].available and "facts: 12 docs" in statuses["search"].detail
    assert not statuses["python"].available and statuses["python"].detail == "not enabled"


def test_slots_are_handed_out_in_order():
    supply = SlotSupply(range(5))
    assert supply.take(2) == [0, 1] and supply.take(4) == [2, 3, 4] and supply.take(1) == []
