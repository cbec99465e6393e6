"""The client's verbs against the real server, and its one error and retry path."""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import pytest

from tests.conftest import free_port
from toolclient.client import (
    RETRYABLE_CODES,
    AsyncToolClient,
    DeadlineExceeded,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    ToolClient,
    ToolServerError,
    Unavailable,
    error_from,
    may_retry,
    python_request,
)
from toolcontract.v1 import toolserver_pb2 as pb

NOT_STARTED = (("toolserver-not-started", "1"),)


def mixed_requests() -> list[pb.ExecuteRequest]:
    """A slow call first, then quick ones: answered in completion order, the slow one last."""
    return [python_request("import time\ntime.sleep(1)\n'slow'", request_id="slow"),
            python_request("6 * 7", request_id="quick"),
            python_request("raise ValueError('bad')", request_id="bad")]


def check_answers(answers: list[pb.ExecuteResponse]) -> None:
    by_id = {answer.request_id: answer for answer in answers}
    assert len(answers) == len(by_id) == 3
    assert by_id["slow"].python.value == "'slow'" and by_id["quick"].python.value == "42"
    assert by_id["bad"].outcome == pb.ERROR
    assert answers[-1].request_id == "slow"


def test_stream_yields_each_answer_as_it_completes(client):
    check_answers(list(client.stream(mixed_requests(), timeout_s=60)))


async def test_async_stream_yields_each_answer_as_it_completes(server):
    async with AsyncToolClient(server.target) as client:
        check_answers([answer async for answer in client.stream(mixed_requests(), timeout_s=60)])


async def test_async_server_info_says_serving(server):
    async with AsyncToolClient(server.target) as client:
        info = await client.server_info()
        assert info.serving and info.sandbox_verified


def test_an_invalid_request_is_invalid_argument_and_not_retryable(client):
    with pytest.raises(InvalidArgument) as info:
        client.execute(pb.ExecuteRequest(request_id="empty"))
    assert not info.value.retryable


async def test_async_errors_are_the_same_types(server):
    async with AsyncToolClient(server.target) as client:
        with pytest.raises(InvalidArgument) as info:
            await client.execute(pb.ExecuteRequest(request_id="empty"))
        assert not info.value.retryable
        with pytest.raises(NotFound):
            await client.close_session("no-such-session")


def test_a_stream_past_its_deadline_is_deadline_exceeded(client):
    with pytest.raises(DeadlineExceeded) as info:
        list(client.stream([python_request("import time\ntime.sleep(3)", timeout_ms=5000)], timeout_s=0.5))
    assert not info.value.retryable
    assert client.run_python("1").outcome == pb.OK


def test_a_stream_to_no_server_is_unavailable_and_retryable():
    with ToolClient(f"127.0.0.1:{free_port()}", timeout_s=5) as client:
        with pytest.raises(Unavailable) as info:
            list(client.stream([python_request("1")]))
    assert info.value.retryable


async def test_an_async_stream_to_no_server_is_unavailable_and_retryable():
    async with AsyncToolClient(f"127.0.0.1:{free_port()}", timeout_s=5) as client:
        with pytest.raises(Unavailable) as info:
            [answer async for answer in client.stream([python_request("1")])]
    assert info.value.retryable


class RefusedCall(grpc.RpcError):
    """An RpcError as a stub raises it."""

    def __init__(self, code: grpc.StatusCode, trailing: tuple[tuple[str, str], ...] = ()) -> None:
        self._code = code
        self._trailing = trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "refused"

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._trailing


def test_retryable_follows_the_status_code():
    assert RETRYABLE_CODES == {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert Unavailable("x").retryable and ResourceExhausted("x").retryable
    assert ToolServerError("x", grpc.StatusCode.UNAVAILABLE).retryable
    for error in (ToolServerError("x"), InvalidArgument("x"), PermissionDenied("x"), DeadlineExceeded("x"),
                  ToolServerError("x", grpc.StatusCode.DATA_LOSS)):
        assert not error.retryable
    refused = error_from(RefusedCall(grpc.StatusCode.UNAVAILABLE, NOT_STARTED))
    assert isinstance(refused, Unavailable) and refused.retryable and str(refused) == "UNAVAILABLE: refused"
    assert not error_from(RefusedCall(grpc.StatusCode.INTERNAL)).retryable


def test_the_client_resends_only_calls_that_never_started():
    request = python_request("1")
    assert may_retry(RefusedCall(grpc.StatusCode.RESOURCE_EXHAUSTED, NOT_STARTED), request)
    assert not may_retry(RefusedCall(grpc.StatusCode.UNAVAILABLE), request)
    assert not may_retry(RefusedCall(grpc.StatusCode.INVALID_ARGUMENT, NOT_STARTED), request)
    assert not may_retry(RefusedCall(grpc.StatusCode.UNAVAILABLE, NOT_STARTED), python_request("1", session_id="s"))


class RefusingStub:
    """Refuses the first `refusals` calls with `error`, then answers."""

    def __init__(self, refusals: int, error: RefusedCall, asynchronous: bool = False) -> None:
        self.refusals = refusals
        self.error = error
        self.asynchronous = asynchronous
        self.calls = 0

    def Execute(self, request, **kwargs):
        self.calls += 1
        if self.calls <= self.refusals:
            raise self.error
        response = pb.ExecuteResponse(request_id=request.request_id, outcome=pb.OK)
        if not self.asynchronous:
            return response

        async def answer() -> pb.ExecuteResponse:
            return response
        return answer()


def test_execute_resends_a_not_started_call_then_gives_up():
    with ToolClient(f"127.0.0.1:{free_port()}", retries=2) as client:
        client.connection.stub = RefusingStub(2, RefusedCall(grpc.StatusCode.UNAVAILABLE, NOT_STARTED))
        assert client.run_python("1").outcome == pb.OK and client.connection.stub.calls == 3
        client.connection.stub = RefusingStub(3, RefusedCall(grpc.StatusCode.UNAVAILABLE, NOT_STARTED))
        with pytest.raises(Unavailable):
            client.run_python("1")
        assert client.connection.stub.calls == 3
        client.connection.stub = RefusingStub(1, RefusedCall(grpc.StatusCode.UNAVAILABLE))
        with pytest.raises(Unavailable):
            client.run_python("1")
        assert client.connection.stub.calls == 1


async def test_async_execute_resends_a_not_started_call():
    async with AsyncToolClient(f"127.0.0.1:{free_port()}", retries=1) as client:
        client.connection.stub = RefusingStub(1, RefusedCall(grpc.StatusCode.RESOURCE_EXHAUSTED, NOT_STARTED), True)
        assert (await client.run_python("1")).outcome == pb.OK and client.connection.stub.calls == 2
        client.connection.stub = RefusingStub(1, RefusedCall(grpc.StatusCode.PERMISSION_DENIED, NOT_STARTED), True)
        with pytest.raises(PermissionDenied):
            await client.run_python("1")
        assert client.connection.stub.calls == 1


def test_the_cli_stops_quietly_when_its_reader_goes_away(server):
    """`toolserver tools | head`: a reader that closes early ends the command without a traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first write
    try:
        done = subprocess.run([sys.executable, "-m", "toolserver", "tools", "--target", server.target],
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and done.stderr == b""
