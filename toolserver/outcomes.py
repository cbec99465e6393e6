"""The contract's Outcome for the text a sandbox, a compile or a REPL answered: decided here
only.

A sandbox's reply names its outcome as text (`sandbox/calls.py`: decided in the jail by
the zygote's own table); the host turns it into the contract's enum value. Each tool says
which outcomes its answers may carry: a name outside them, or one the contract does not
know, is the sandbox's failure, CRASHED, never an exception on the host.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from toolcontract.v1 import toolserver_pb2 as pb

# What a sandboxed call's reply may say (`CallReply.outcome`, REROUTE aside: the host acts on it).
CALL_OUTCOMES = frozenset({"OK", "ERROR", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT", "DENIED", "CRASHED", "INVALID"})
CONTRACT = {name: cast(pb.Outcome, pb.Outcome.Value(name)) for name in pb.Outcome.keys()}  # read once: every call's


def contract_outcome(name: str, answered: Collection[str] = CALL_OUTCOMES) -> pb.Outcome:
    """The Outcome named name where it is one of answered (what the tool's answers may
    carry), CRASHED otherwise."""
    outcome = CONTRACT.get(name) if name in answered else None
    return pb.CRASHED if outcome is None else outcome
