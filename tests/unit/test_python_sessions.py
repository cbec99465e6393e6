"""A session's answer to a cell is read as a zygote's answer to a call, and a session that
answers out of turn or out of shape is broken."""

from __future__ import annotations

import pytest

from sandbox.calls import CallReply, CellRequest
from sandbox.sessions import ProtocolBroken
from toolserver.python.sessions import cell_reply

CELL = CellRequest("7f3a", "x", "", 1 << 20, 1 << 20)


def test_a_cells_answer_reads_as_a_calls_reply_without_the_sessions_own_streams():
    frame = {"id": "7f3a", "outcome": "ERROR", "error": "ZeroDivisionError: division by zero", "exit_code": 1,
             "value": "", "truncated": False, "stdout": "claimed", "files": {"a": "AAAA"}}
    assert cell_reply(frame, CELL) == CallReply("", "ERROR", error="ZeroDivisionError: division by zero", exit_code=1)


@pytest.mark.parametrize("frame, why", [
    ({"id": "0000", "outcome": "OK"}, "not this call's"),
    ({"outcome": "OK"}, "not this call's"),
    ({"id": "7f3a", "outcome": "REROUTE"}, "outcome 'REROUTE'"),
    ({"id": "7f3a", "outcome": "TIMEOUT"}, "outcome 'TIMEOUT'"),  # the host's to say
    ({"id": "7f3a", "outcome": "OK", "exit_code": "zero"}, "wrong shape"),
    ({"id": "7f3a", "outcome": "OK", "exit_code": [1]}, "wrong shape"),
])
def test_a_foreign_or_misshapen_answer_breaks_the_session(frame, why):
    with pytest.raises(ProtocolBroken, match=why):
        cell_reply(frame, CELL)
