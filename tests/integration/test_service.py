"""The gRPC surface: streams, JSON calls, tools, status codes, health and reflection."""

from __future__ import annotations

import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from toolclient.client import FailedPrecondition, InvalidArgument, python_request
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc


def test_stream_answers_every_call_and_survives_bad_messages(channel):
    stub = pb_grpc.ToolServerStub(channel)
    requests = [python_request(f"{i} * 2", request_id=f"ok-{i}") for i in range(20)]
    requests.insert(5, pb.ExecuteRequest(request_id="empty"))
    requests.insert(9, pb.ExecuteRequest(request_id="badjson", json=pb.JsonCall(tool="python", arguments="{nope")))
    requests.insert(12, pb.ExecuteRequest(request_id="unknown", json=pb.JsonCall(tool="rm -rf", arguments="{}")))
    responses = {r.request_id: r for r in stub.ExecuteStream(iter(requests), timeout=60)}
    assert len(responses) == len(requests)
    for i in range(20):
        assert responses[f"ok-{i}"].outcome == pb.OK
        assert responses[f"ok-{i}"].python.value == str(i * 2)
    for name in ("empty", "badjson", "unknown"):
        assert responses[name].outcome == pb.INVALID
        assert responses[name].error


def test_json_call_runs_python(client):
    request = pb.ExecuteRequest(request_id="j", json=pb.JsonCall(tool="python", arguments=json.dumps({"code": "40 + 2"})))
    response = client.execute(request)
    assert response.outcome == pb.OK and response.python.value == "42"


def test_list_tools_gives_json_schemas(client):
    tools = {t.name: t for t in client.list_tools()}
    schema = json.loads(tools["python"].parameters)
    assert schema["type"] == "object" and schema["required"] == ["code"]


def test_empty_request_is_invalid_argument(client):
    with pytest.raises(InvalidArgument):
        client.execute(pb.ExecuteRequest(request_id="x"))


def test_bad_json_arguments_are_invalid_argument(client):
    with pytest.raises(InvalidArgument):
        client.execute(pb.ExecuteRequest(json=pb.JsonCall(tool="python", arguments="[1]")))


def test_lean_without_a_toolchain_is_failed_precondition_and_says_how_to_install(client):
    with pytest.raises(FailedPrecondition, match="(?i)install"):
        client.execute(pb.ExecuteRequest(lean=pb.LeanCall(code="theorem t : 1 + 1 = 2 := rfl")))
    tools = {tool.name: tool for tool in client.list_tools()}
    assert "unavailable" in tools["lean"].description.lower()
    lean_status = [t for t in client.server_info().tools if t.name == "lean"][0]
    assert not lean_status.available and "not installed" in lean_status.detail


def test_unknown_session_is_not_found(channel):
    stub = pb_grpc.ToolServerStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.CloseSession(pb.CloseSessionRequest(session_id="nope"), timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND



def test_oversized_message_is_resource_exhausted(channel):
    stub = pb_grpc.ToolServerStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.Execute(python_request("x = 1\n" * 1_000_000), timeout=30)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_health_and_reflection(channel):
    health = health_pb2_grpc.HealthStub(channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service="toolserver.v1.ToolServer"), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answer = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10))
    names = {s.name for s in answer.list_services_response.service}
    assert {"toolserver.v1.ToolServer", "grpc.health.v1.Health"} <= names


def test_server_info_reports_verified_sandbox(client):
    info = client.server_info()
    assert info.serving and info.sandbox_verified and not info.insecure
    assert all(check.ok for check in info.checks) and len(info.checks) >= 10
    assert {f"import_guard_{kind}[{profile}]" for kind in ("warm", "slim", "scientific")
            for profile in ("guarded", "strict")} <= {check.name for check in info.checks}


async def test_async_client_batches_over_one_stream(server):
    from toolclient.client import AsyncToolClient

    async with AsyncToolClient(server.target) as client:
        requests = [python_request(f"{i} + 1", request_id=f"a{i}") for i in range(30)]
        responses = await client.run_many(requests)
        assert [r.python.value for r in responses] == [str(i + 1) for i in range(30)]


def test_client_deadline_raises_deadline_exceeded(client):
    from toolclient.client import DeadlineExceeded

    with pytest.raises(DeadlineExceeded):
        client.run_python("import time\ntime.sleep(3)", timeout_ms=5000, timeout_s=0.5)
    assert client.run_python("1").outcome == pb.OK
