"""Caller policies over real gRPC: tokens, tools, limits, in-flight and session caps."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.security.conftest import TOKENS
from toolclient.client import NotFound, PermissionDenied, ResourceExhausted, ToolClient, Unauthenticated, python_request
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc


def as_caller(server, name: str | None, token: str | None = None) -> ToolClient:
    return ToolClient(server.target, timeout_s=60, token=token or (TOKENS[name] if name else None))


def test_missing_and_unknown_tokens_are_unauthenticated(policy_server):
    for client in (as_caller(policy_server, None), as_caller(policy_server, None, token="not-a-token")):
        with client, pytest.raises(Unauthenticated):
            client.run_python("1")
    with grpc.insecure_channel(policy_server.target) as channel:
        stub = pb_grpc.ToolServerStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            list(stub.ExecuteStream(iter([python_request("1")]), timeout=30))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as info:
            stub.ListTools(pb.ListToolsRequest(), timeout=30, metadata=(("authorization", "Basic x"),))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING  # load balancers need no token


def test_a_known_token_runs_code(policy_server):
    with as_caller(policy_server, "bob") as bob:
        assert bob.run_python("6 * 7").python.value == "42"


def test_tools_outside_the_policy_are_permission_denied(policy_server):
    with as_caller(policy_server, "carol") as carol:
        with pytest.raises(PermissionDenied, match="python"):
            carol.run_python("1")
        assert [tool.name for tool in carol.list_tools()] == ["search"]
    with as_caller(policy_server, "bob") as bob:
        with pytest.raises(PermissionDenied, match="search"):
            bob.execute(pb.ExecuteRequest(search=pb.SearchCall(query="prime")))
        assert [tool.name for tool in bob.list_tools()] == ["python"]


def test_limits_above_the_policy_are_refused_by_name(policy_server):
    with as_caller(policy_server, "alice") as alice:
        with pytest.raises(PermissionDenied, match="timeout_ms 5000 exceeds caller 'alice'"):
            alice.run_python("1", timeout_ms=5000)
        slow = alice.run_python("import time\ntime.sleep(10)")  # the default is capped at 2000 ms
        assert slow.outcome == pb.TIMEOUT and "2000 ms" in slow.error


def test_in_flight_cap_is_resource_exhausted_and_others_are_served(policy_server):
    """alice may have 2 calls in flight: two slow ones (the server has one worker, so
    the second waits in the queue, in flight too) make a third refused at once."""
    results: list[object] = []

    def slow() -> None:
        with as_caller(policy_server, "alice") as alice:
            results.append(alice.run_python("import time\ntime.sleep(1.5)", timeout_ms=2000))

    threads = [threading.Thread(target=slow) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    with as_caller(policy_server, "alice") as alice, as_caller(policy_server, "bob") as bob:
        with pytest.raises(ResourceExhausted, match="2 calls in flight"):
            alice.run_python("1")
        assert bob.run_python("2 + 2", timeout_ms=60000).python.value == "4"
    for thread in threads:
        thread.join(30)
    assert len(results) == 2 and all(r.outcome == pb.OK for r in results)


def test_sessions_are_private_and_capped_per_caller(policy_server):
    with as_caller(policy_server, "alice") as alice, as_caller(policy_server, "bob") as bob:
        session = alice.open_session()
        try:
            with pytest.raises(ResourceExhausted, match="alice"):
                alice.open_session()
            alice.run_python("secret = 'alice only'", session_id=session.session_id)
            with pytest.raises(NotFound):
                bob.run_python("secret", session_id=session.session_id)
            with pytest.raises(NotFound):
                bob.close_session(session.session_id)
            assert alice.run_python("secret", session_id=session.session_id).python.value == "'alice only'"
        finally:
            alice.close_session(session.session_id)


def test_tokens_never_reach_the_log(policy_server):
    with as_caller(policy_server, None, token="guess-" + TOKENS["bob"]) as stranger:
        with pytest.raises(Unauthenticated):
            stranger.run_python("1")
    log = policy_server.output()
    assert all(token not in log for token in TOKENS.values())
    assert "4 caller policies" in log


def test_search_indexes_are_allow_listed_per_caller(policy_server):
    with as_caller(policy_server, "carol") as carol:
        response = carol.execute(pb.ExecuteRequest(search=pb.SearchCall(query="gcd", index="python-docs")))
        assert response.outcome == pb.OK and response.search.hits
        with pytest.raises(PermissionDenied, match="other-index"):
            carol.execute(pb.ExecuteRequest(search=pb.SearchCall(query="gcd", index="other-index")))
        assert [tool.name for tool in carol.list_tools()] == ["search"]
