"""Property-based fuzzing of request fields: every request is answered, the server
never crashes, and no answer is an internal error."""

from __future__ import annotations

import grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.test_attacks import still_serving
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc

REQUEST_ERRORS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED,
                  grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.NOT_FOUND,
                  grpc.StatusCode.FAILED_PRECONDITION}
uint32 = st.integers(min_value=0, max_value=2**32 - 1)
small_text = st.text(max_size=40)
code_text = st.text(alphabet="0123456789+-*/() abcxyz=\n\\'\"[]:.,#", max_size=60)

limits = st.builds(pb.Limits, timeout_ms=st.one_of(st.just(0), st.integers(1, 800), uint32),
                   memory_mb=st.one_of(st.just(0), uint32), max_output_bytes=st.one_of(st.just(0), uint32))
calls = st.one_of(
    st.builds(lambda code, stdin, session: {"python": pb.PythonCall(code=code, stdin=stdin, session_id=session)},
              code_text, small_text, st.one_of(st.just(""), small_text)),
    st.builds(lambda q, i, k: {"search": pb.SearchCall(query=q, index=i, top_k=k)}, small_text, small_text, uint32),
    st.builds(lambda c, h: {"lean": pb.LeanCall(code=c, header=h)}, small_text, small_text),
    st.builds(lambda t, a: {"json": pb.JsonCall(tool=t, arguments=a)},
              st.sampled_from(["python", "search", "lean", "", "shell"]) | small_text,
              st.one_of(small_text, st.just('{"code": "1+1"}'), st.just('{"code": 5}'), st.just("[]"))),
    st.just({}),
)
requests = st.builds(lambda rid, call, lim: pb.ExecuteRequest(request_id=rid, limits=lim, **call),
                     small_text, calls, limits)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_every_request_is_answered_without_internal_errors(channel, request):
    stub = pb_grpc.ToolServerStub(channel)
    try:
        response = stub.Execute(request, timeout=60)
    except grpc.RpcError as exc:
        assert exc.code() in REQUEST_ERRORS, (exc.code(), exc.details(), request)
        return
    assert response.request_id == request.request_id
    assert response.outcome != pb.OUTCOME_UNSPECIFIED


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(requests, min_size=1, max_size=12))
def test_a_stream_answers_every_request_exactly_once(channel, batch):
    for number, request in enumerate(batch):
        request.request_id = f"{number}"
    stub = pb_grpc.ToolServerStub(channel)
    answered = [r.request_id for r in stub.ExecuteStream(iter(batch), timeout=120)]
    assert sorted(answered, key=int) == [str(n) for n in range(len(batch))]


def test_undecodable_bytes_are_invalid_argument(channel, client):
    raw = channel.unary_unary("/toolserver.v1.ToolServer/Execute", request_serializer=None,
                              response_deserializer=None)
    refused = 0
    for payload in (b"\xff\xff\xff\xff", b"\x12\x04\x0a\x02\xc3\x28", b"\x0a" * 7):
        try:
            raw(payload, timeout=10)
        except grpc.RpcError as exc:
            refused += 1
            assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, exc.code()
            assert "not a valid toolserver.v1.ExecuteRequest" in exc.details()
    assert refused >= 2
    still_serving(client)
