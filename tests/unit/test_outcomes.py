"""The contract's Outcome of a sandbox's, a compile's or a REPL's answer: one decision."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox.calls import CallReply
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.judging.compiler import COMPILE_OUTCOMES
from toolserver.lean.pool import REPL_OUTCOMES
from toolserver.outcomes import CALL_OUTCOMES, contract_outcome
from toolserver.zygotes.programs import PROGRAM_OUTCOMES, program_outcome

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("answered", [CALL_OUTCOMES, PROGRAM_OUTCOMES, COMPILE_OUTCOMES, REPL_OUTCOMES])
def test_each_outcome_a_tool_answers_is_the_contracts_value_of_that_name(answered):
    assert answered <= set(pb.Outcome.keys())
    for name in answered:
        assert pb.Outcome.Name(contract_outcome(name, answered)) == name


@pytest.mark.parametrize("name", ["REROUTE", "HEADER_ERROR", "", "ok", "OUTCOME_UNSPECIFIED", "COMPILE_ERROR"])
def test_a_name_the_tool_does_not_answer_is_the_sandboxs_crash_never_an_exception(name):
    assert contract_outcome(name) == pb.CRASHED


def test_a_program_run_the_jail_denied_is_a_crash_with_the_sandboxs_word():
    outcome, error = program_outcome(CallReply(id="1", outcome="DENIED", error=""))
    assert (outcome, error) == (pb.CRASHED, "the sandbox answered DENIED")
    outcome, error = program_outcome(CallReply(id="1", outcome="TIMEOUT", error="time limit"))
    assert (outcome, error) == (pb.TIMEOUT, "time limit")
    assert isinstance(outcome, int)


def test_every_outcome_the_zygotes_write_is_one_the_host_reads():
    """The jail's own table (sandbox/inside) names no outcome the host would read as a crash."""
    written = set()
    for path in (ROOT / "sandbox" / "inside").glob("*.py"):
        written |= set(re.findall(r'"outcome"\]? ?[=:] ?"([A-Z_]+)"', path.read_text()))
        written |= set(re.findall(r'return "([A-Z_]+)", ', path.read_text()))
    assert written, "the zygotes' outcomes were not found"
    assert written - {"REROUTE"} <= CALL_OUTCOMES
