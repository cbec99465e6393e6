"""Stateful sessions: Jupyter kernels in the jail, over gRPC."""

from __future__ import annotations

import time

import grpc
import pytest

from toolclient.client import NotFound
from toolserver.v1 import toolserver_pb2 as pb

from tests.conftest import RunningServer


def in_session(client, session_id: str, code: str, stdin: str = "", **limits) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(request_id="s", python=pb.PythonCall(code=code, session_id=session_id,
                                                                                 stdin=stdin),
                                            limits=pb.Limits(**limits)))


def open_session(client) -> pb.Session:
    return client.stub.OpenSession(pb.OpenSessionRequest(), timeout=120)


def test_session_keeps_state_until_closed(client):
    session = open_session(client)
    assert session.session_id and session.idle_timeout_s > 0
    assert in_session(client, session.session_id, "import sympy\nx = sympy.Symbol('x')\nn = 41").outcome == pb.OK
    response = in_session(client, session.session_id, "print('n is', n)\nsympy.expand((x + 1)**2), n + 1")
    assert response.outcome == pb.OK
    assert response.stdout == "n is 41\n"
    assert response.python.value == "(x**2 + 2*x + 1, 42)"
    failed = in_session(client, session.session_id, "1 / 0")
    assert failed.outcome == pb.ERROR and failed.error.startswith("ZeroDivisionError")
    uid = in_session(client, session.session_id, "import os\n(os.getuid() != 0, [l.split(':')[0].strip() for l in open('/proc/self/net/dev').readlines()[2:]])")
    assert uid.python.value == "(True, ['lo'])"
    client.stub.CloseSession(pb.CloseSessionRequest(session_id=session.session_id), timeout=30)
    with pytest.raises(NotFound):
        in_session(client, session.session_id, "n")


def test_session_timeout_interrupts_and_keeps_the_session(client):
    session = open_session(client)
    assert in_session(client, session.session_id, "kept = 'yes'").outcome == pb.OK
    response = in_session(client, session.session_id, "import time\ntime.sleep(30)", timeout_ms=1000)
    assert response.outcome == pb.TIMEOUT
    assert in_session(client, session.session_id, "kept").python.value == "'yes'"
    client.stub.CloseSession(pb.CloseSessionRequest(session_id=session.session_id), timeout=30)


def test_session_memory_is_capped_by_default_and_the_session_survives(client):
    session = open_session(client)
    assert in_session(client, session.session_id, "import numpy, sympy\nkept = 7").outcome == pb.OK
    response = in_session(client, session.session_id, "big = bytearray(3 * 1024**3)", timeout_ms=20000)
    assert response.outcome == pb.MEMORY_LIMIT, response
    assert in_session(client, session.session_id, "kept * 6").python.value == "42"
    client.stub.CloseSession(pb.CloseSessionRequest(session_id=session.session_id), timeout=30)


def test_session_stdin_feeds_input(client):
    session = open_session(client)
    response = in_session(client, session.session_id, "a = input()\nb = input()\nint(a) * int(b)", stdin="6\n7\n")
    assert response.python.value == "42", response
    client.stub.CloseSession(pb.CloseSessionRequest(session_id=session.session_id), timeout=30)


def test_unknown_session_call_is_not_found(client):
    with pytest.raises(NotFound):
        in_session(client, "no-such-session", "1")


def test_session_cap_and_idle_timeout(tmp_path):
    server = RunningServer(tmp_path, workers=1, sessions=1, config="[sessions]\nidle_timeout_s = 2\n")
    try:
        with server.client() as client:
            first = open_session(client)
            with pytest.raises(grpc.RpcError) as info:
                open_session(client)
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            time.sleep(4.5)
            with pytest.raises(NotFound):
                in_session(client, first.session_id, "1")
            second = open_session(client)
            assert in_session(client, second.session_id, "2 + 2").python.value == "4"
    finally:
        server.stop()


def test_session_input_past_stdin_is_eof(client):
    session = open_session(client)
    response = in_session(client, session.session_id,
                          "first = input()\ntry:\n    input()\nexcept EOFError:\n    first = first + ' then EOF'\nfirst",
                          stdin="only line\n")
    assert response.outcome == pb.OK, response
    assert response.python.value == "'only line then EOF'"
    client.stub.CloseSession(pb.CloseSessionRequest(session_id=session.session_id), timeout=30)
