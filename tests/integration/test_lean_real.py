"""The Lean executor against a REAL Lean REPL, jailed (marker `lean`).

Skipped unless the toolchain is found: the `repl` binary from TOOLSERVER_LEAN_REPL or
PATH, and, for Mathlib, a built Lake project in TOOLSERVER_LEAN_PROJECT (the image in
deploy/lean sets both). Without a project the proofs use core Lean only. Slot users
tsbox26..tsbox27.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sandbox.jail import JailPolicy
from sandbox.worker import ZygoteSpec
from tests.conftest import lent_slots
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.lean.executor import LeanExecutor, ToolchainMissing, find_toolchain
from toolserver.lean.jails import repl_spec
from toolserver.lean.settings import LeanSettings

pytestmark = pytest.mark.lean

ROOT = Path(__file__).resolve().parents[2]
PROJECT = os.environ.get("TOOLSERVER_LEAN_PROJECT", "")
HEADER = "import Mathlib" if PROJECT else ""
ARITHMETIC = "by norm_num" if PROJECT else "by decide"


@pytest.fixture(scope="module")
async def lean():
    settings = LeanSettings(repl=os.environ.get("TOOLSERVER_LEAN_REPL", ""), project_dir=PROJECT, max_repls=2,
                            memory_mb=int(os.environ.get("TOOLSERVER_LEAN_MEMORY_MB", "16384")),
                            prewarm_headers=(HEADER,))
    try:
        toolchain = await find_toolchain(settings)
    except ToolchainMissing as exc:
        pytest.skip(f"no Lean toolchain here ({exc}); these tests run where lake/repl are installed, "
                    f"e.g. the deploy/lean image")
    with lent_slots(2) as slots:
        spec = ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(str(ROOT),)))
        executor = LeanExecutor(settings, repl_spec(spec, settings), slots)
        await executor.start(toolchain)
        assert executor.available and not executor.prewarm_errors, executor.status()
        yield executor
        await executor.close()


async def check(lean: LeanExecutor, code: str, timeout_ms: int = 60_000) -> pb.ExecuteResponse:
    return await lean.check(pb.LeanCall(code=code, header=HEADER), "real", timeout_ms)


async def test_a_complete_proof(lean):
    response = await check(lean, f"theorem two : 2 + 2 = 4 := {ARITHMETIC}")
    assert response.outcome == pb.OK, response.error
    assert response.lean.complete and response.lean.sorries == 0


async def test_a_proof_with_sorry(lean):
    response = await check(lean, "theorem later (n : Nat) : n + 0 = n := by\n  sorry")
    assert response.outcome == pb.OK
    assert not response.lean.complete and response.lean.sorries == 1


async def test_an_error_is_reported_on_the_callers_line(lean):
    response = await check(lean, "theorem ok : 1 = 1 := rfl\n\ntheorem wrong : 2 + 2 = 5 := by decide")
    assert response.outcome == pb.ERROR and not response.lean.complete
    assert any(m.severity == "error" and m.line == 3 for m in response.lean.messages), response.lean.messages


async def test_a_runaway_proof_times_out_and_the_next_one_runs(lean):
    response = await check(lean, "#eval IO.sleep 120000", timeout_ms=2_000)
    assert response.outcome == pb.TIMEOUT
    after = await check(lean, "theorem after : 1 = 1 := rfl")
    assert after.outcome == pb.OK and after.lean.complete
    assert lean.pool is not None and lean.pool.stats().restarts >= 1


async def test_a_new_axiom_is_refused(lean):
    response = await check(lean, "axiom cheat : False\ntheorem t : 1 = 2 := cheat.elim")
    assert response.outcome == pb.ERROR and "axiom" in response.error
