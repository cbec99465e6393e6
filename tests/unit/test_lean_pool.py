"""The Lean REPL pool and executor against the STAND-IN REPL (tests/fakes), jailed.

The stand-in speaks the REPL's JSON protocol but is not Lean: these tests prove the pool's
mechanics (keying, LRU, timeout kill and replace, crash recovery, recycling, idle
eviction, concurrency, line offsets), not Lean's answers; tests/integration/test_lean_real.py
checks those where Lean is installed. The toolchain search runs against small shell scripts
standing in for `repl` and `lake`. Slot users tsbox24..tsbox27 are used by no other test.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from sandbox.cgroups import CgroupUnavailable, MemoryCgroups
from sandbox.jail import JailPolicy
from sandbox.worker import ZygoteSpec
from tests.conftest import lent_slots
from tests.fakes.lean_repl_standin import standin_command
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import Exhausted, InvalidRequest, PermissionDenied, ToolUnavailable, Unavailable
from toolserver.lean.executor import LeanExecutor, ToolchainMissing, find_toolchain, lean_call_from_json
from toolserver.lean.header import parse_header
from toolserver.lean.jails import repl_spec
from toolserver.lean.pool import ReplPool
from toolserver.lean.repl import Toolchain
from toolserver.lean.rules import LeanRules
from toolserver.lean.settings import LeanSettings
from toolserver.policy import CallerPolicy

ROOT = Path(__file__).resolve().parents[2]
MODULE_SLOTS: list = []


@pytest.fixture(scope="module", autouse=True)
def module_slots():
    """The two slots every pool and executor of this module runs on, one at a time."""
    with lent_slots(2) as slots:
        MODULE_SLOTS[:] = slots
        yield
        MODULE_SLOTS.clear()


def lean_slots(count: int):
    return MODULE_SLOTS[:count]


def spec(memory_mb: int = 0) -> ZygoteSpec:
    return ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(str(ROOT),), memory_mb=memory_mb))


def header_user(*headers: str) -> CallerPolicy:
    """A caller whose policy allows only these Lean headers."""
    return CallerPolicy(name="prover", tools=frozenset({"lean"}),
                        rules=(LeanRules(headers=frozenset(parse_header(header).key for header in headers)),))


def standin(header_delay_s: float = 0.0) -> Toolchain:
    return Toolchain(standin_command(sys.executable, header_delay_s), {}, "stand-in REPL (not Lean)")


async def make_pool(slots: int = 2, *, idle_evict_s: float = 600, recycle_after: int = 0, keep=(),
                    header_delay_s: float = 0.0, max_queue: int = 256) -> ReplPool:
    pool = ReplPool(spec(), lean_slots(slots), standin(header_delay_s), start_timeout_s=30,
                    idle_evict_s=idle_evict_s, recycle_after=recycle_after, keep_headers=keep, max_queue=max_queue)
    await pool.start(keep)
    return pool


def env_info(outcome) -> dict:
    [info] = [m for m in outcome.answer["messages"] if m["severity"] == "info"]
    return json.loads(info["data"])


A = parse_header("import A")
B = parse_header("import B")
C = parse_header("import C")


@pytest.fixture
async def pool():
    pool = await make_pool()
    yield pool
    await pool.close()


async def test_one_header_is_elaborated_once_per_repl(pool):
    first = await pool.run(A, "#env", 10)
    second = await pool.run(A, "theorem t : 1 = 1 := rfl\n#env", 10)
    assert first.status == second.status == "OK"
    assert first.header_started and not second.header_started
    assert env_info(first)["instance"] == env_info(second)["instance"]
    assert env_info(second) | {"uses": 0} == {"instance": env_info(first)["instance"], "header": "import A",
                                              "elaborations": 1, "uses": 0}
    assert pool.stats().headers == {"import A": 1}


async def test_different_headers_get_different_repls_and_lru_is_evicted(pool):
    a = env_info(await pool.run(A, "#env", 10))
    b = env_info(await pool.run(B, "#env", 10))
    assert a["instance"] != b["instance"] and b["header"] == "import B"
    assert env_info(await pool.run(A, "#env", 10))["instance"] == a["instance"]  # B is now least recently used
    c = env_info(await pool.run(C, "#env", 10))
    assert pool.stats().headers == {"import A": 1, "import C": 1}
    assert pool.stats().evictions == 1
    assert env_info(await pool.run(A, "#env", 10))["instance"] == a["instance"]
    assert c["header"] == "import C"


async def test_timeout_kills_and_replaces_the_repl(pool, caplog):
    before = env_info(await pool.run(A, "#env", 10))
    outcome = await pool.run(A, "theorem slow : 1 = 1 := by sleep 60", 0.5)
    assert outcome.status == "TIMEOUT" and "replaced" in outcome.error
    after = await pool.run(A, "#env", 10)
    assert after.status == "OK"
    assert env_info(after)["instance"] != before["instance"]
    assert env_info(after)["elaborations"] == 1
    assert pool.stats().restarts == 1
    await pool.close()
    # each REPL killed through its firejail's pidfd at once, not left to a sweep of its uid 10 s later
    assert not [record for record in caplog.records if "did not exit after SIGKILL" in record.getMessage()]


async def test_a_crashed_repl_answers_crashed_and_is_replaced(pool):
    outcome = await pool.run(A, "theorem boom : 1 = 1 := by crash", 10)
    assert outcome.status == "CRASHED" and "exited" in outcome.error
    assert (await pool.run(A, "theorem t : 1 = 1 := rfl", 10)).status == "OK"
    assert pool.stats().restarts == 1 and pool.stats().size >= 1


async def test_output_before_the_answer_is_skipped(pool):
    outcome = await pool.run(A, "#noise\ntheorem t : 1 = 1 := by error", 10)
    assert outcome.status == "OK"
    assert outcome.answer["messages"][0]["severity"] == "error"


async def test_concurrent_calls_share_the_pool_without_losing_any(pool):
    outcomes = await asyncio.gather(*(pool.run(A, f"theorem t{i} : 1 = 1 := by sleep 0.2\n#env", 10)
                                      for i in range(8)))
    assert [o.status for o in outcomes] == ["OK"] * 8
    instances = {env_info(o)["instance"] for o in outcomes}
    assert 1 <= len(instances) <= 2
    assert pool.stats().busy == 0 and pool.stats().size == len(instances)


async def test_a_cancelled_call_does_not_lose_the_slot(pool):
    call = asyncio.ensure_future(pool.run(A, "theorem t : 1 = 1 := by sleep 60", 10))
    await asyncio.sleep(0.5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    results = await asyncio.gather(*(pool.run(A, "#env", 10) for _ in range(3)))
    assert all(r.status == "OK" for r in results)
    assert pool.stats().restarts == 1


async def test_a_header_error_is_reported_and_not_cached(pool):
    outcome = await pool.run(parse_header("import Missing"), "theorem t : 1 = 1 := rfl", 10)
    assert outcome.status == "HEADER_ERROR"
    assert "Missing" in outcome.answer["messages"][0]["data"]
    assert pool.stats().size == 0 and pool.stats().busy == 0


async def test_repls_are_recycled_after_n_uses():
    pool = await make_pool(1, recycle_after=2)
    try:
        instances = [env_info(await pool.run(A, "#env", 10))["instance"] for _ in range(3)]
        assert instances[0] == instances[1] != instances[2]
        assert pool.stats().recycled == 1
    finally:
        await pool.close()


async def test_idle_repls_are_evicted_but_a_prewarmed_header_keeps_one():
    pool = await make_pool(2, idle_evict_s=600, keep=(A,))
    try:
        assert pool.stats().headers == {"import A": 1}
        await pool.run(B, "#env", 10)
        pool.idle_evict_s = 0.01
        await asyncio.sleep(0.05)
        assert await pool.evict_idle() == 1
        assert pool.stats().headers == {"import A": 1}
    finally:
        await pool.close()


async def test_waiters_for_a_busy_header_do_not_evict_it():
    pool = await make_pool(1, header_delay_s=0.2)
    try:
        slow = asyncio.ensure_future(pool.run(A, "theorem t : 1 = 1 := by sleep 0.5\n#env", 10))
        await asyncio.sleep(0.1)
        fast = await pool.run(A, "#env", 10)
        assert env_info(fast)["instance"] == env_info(await slow)["instance"]
        assert pool.stats().evictions == 0
    finally:
        await pool.close()


async def test_waiting_calls_are_served_in_arrival_order_across_headers():
    pool = await make_pool(1)
    try:
        first = asyncio.ensure_future(pool.run(A, "theorem t : 1 = 1 := by sleep 0.4\n#env", 10))
        await asyncio.sleep(0.2)
        other = asyncio.ensure_future(pool.run(B, "#env", 10))
        await asyncio.sleep(0.05)
        again = asyncio.ensure_future(pool.run(A, "#env", 10))
        done = []
        for call in asyncio.as_completed([first, other, again]):
            done.append(env_info(await call)["header"])
        assert done == ["import A", "import B", "import A"]
        assert pool.stats().evictions == 2
    finally:
        await pool.close()


async def test_closing_answers_waiting_calls_unavailable():
    pool = await make_pool(1)
    busy = asyncio.ensure_future(pool.run(A, "theorem t : 1 = 1 := by sleep 30", 60))
    await asyncio.sleep(0.3)
    waiting = asyncio.ensure_future(pool.run(A, "#env", 10))
    await asyncio.sleep(0.05)
    await pool.close()
    with pytest.raises(Unavailable):
        await waiting
    assert (await busy).status == "CRASHED"


# The executor on the stand-in: outcomes, line offsets, guard, refusals.

@pytest.fixture
async def executor():
    settings = LeanSettings(max_repls=2, allowed_headers=("import A", "import B", "import Missing"))
    executor = LeanExecutor(settings, repl_spec(spec(), settings), lean_slots(2))
    await executor.start(standin())
    yield executor
    await executor.close()


async def test_complete_proof(executor):
    response = await executor.check(pb.LeanCall(code="theorem t : 1 + 1 = 2 := by norm_num", header="import A"),
                                    "r1", 5000)
    assert response.outcome == pb.OK and response.request_id == "r1"
    assert response.lean.complete and response.lean.sorries == 0


async def test_sorry_compiles_but_is_not_complete(executor):
    response = await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := by sorry", header="import A"),
                                    "r", 5000)
    assert response.outcome == pb.OK
    assert not response.lean.complete and response.lean.sorries == 1
    assert response.lean.messages[0].severity == "warning"


async def test_error_lines_refer_to_the_callers_code(executor):
    code = "import A\n\ntheorem ok : 1 = 1 := rfl\ntheorem bad : 1 = 2 := by error"
    response = await executor.check(pb.LeanCall(code=code, header="open Nat\nset_option x 1"), "r", 5000)
    assert response.outcome == pb.ERROR and not response.lean.complete
    [message] = response.lean.messages
    assert (message.severity, message.line, message.column) == ("error", 4, code.split("\n")[3].index("error"))
    assert response.error.startswith("line 4, column")


async def test_timeout_crash_and_memory_outcomes(executor):
    timeout = await executor.check(pb.LeanCall(code="theorem s : 1 = 1 := by sleep 60", header="import A"),
                                   "t", 300)
    assert timeout.outcome == pb.TIMEOUT and not timeout.lean.complete
    crash = await executor.check(pb.LeanCall(code="theorem c : 1 = 1 := by crash", header="import A"), "c", 5000)
    assert crash.outcome == pb.CRASHED
    ok = await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import A"), "ok", 5000)
    assert ok.outcome == pb.OK


async def test_header_error_is_an_error_on_line_zero(executor):
    response = await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import Missing"),
                                    "r", 5000)
    assert response.outcome == pb.ERROR and response.lean.messages[0].line == 0
    assert "header did not elaborate" in response.error


async def test_guard_refuses_axioms_and_changed_statements_without_running(executor):
    axiom = await executor.check(pb.LeanCall(code="axiom cheat : False\ntheorem t : 1 = 2 := cheat.elim",
                                             header="import A"), "r", 5000)
    assert axiom.outcome == pb.ERROR and "axiom" in axiom.error and axiom.lean.messages[0].line == 1
    changed = await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import A"), "r", 5000,
                                   statement="theorem t : 2 = 2")
    assert changed.outcome == pb.ERROR and not changed.lean.complete
    kept = await executor.check(pb.LeanCall(code="theorem t : 2 = 2 := rfl", header="import A"), "r", 5000,
                                   statement="theorem t : 2 = 2")
    assert kept.outcome == pb.OK and kept.lean.complete
    assert executor.pool is not None and executor.pool.stats().starts == 1  # the refused calls never ran


async def test_headers_are_allow_listed(executor):
    with pytest.raises(PermissionDenied):
        await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import C"), "r", 5000)
    with pytest.raises(PermissionDenied):
        await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import B"), "r", 5000,
                             header_user("import A"))
    allowed = await executor.check(pb.LeanCall(code="import A\ntheorem t : 1 = 1 := rfl"), "r", 5000,
                                   header_user("import A"))
    assert allowed.outcome == pb.OK


async def test_bad_requests_are_request_errors(executor):
    with pytest.raises(InvalidRequest):
        await executor.check(pb.LeanCall(code="  \n", header="import A"), "r", 5000)
    with pytest.raises(InvalidRequest):
        await executor.check(pb.LeanCall(code="theorem t : True := trivial", header="import Foo;"), "r", 5000)


async def test_status_reports_the_pool(executor):
    await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl", header="import A"), "r", 5000)
    assert executor.available
    assert executor.status().startswith("ready: 1/2 REPLs") and "import A x1" in executor.status()


async def test_memory_limit_is_reported():
    settings = LeanSettings(max_repls=1, memory_mb=300)
    executor = LeanExecutor(settings, repl_spec(spec(), settings), lean_slots(1))
    await executor.start(standin())
    try:
        response = await executor.check(pb.LeanCall(code="theorem m : 1 = 1 := by oom"), "m", 20_000)
        assert response.outcome == pb.MEMORY_LIMIT
        assert (await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl"), "t", 5000)).outcome == pb.OK
    finally:
        await executor.close()


async def test_a_repl_and_what_its_proofs_start_are_capped_together():
    """A REPL's jail is in its slot's memory cgroup before its header is sent: three
    processes a proof starts, each under the REPL's memory alone and together past it, end
    MEMORY_LIMIT, and the REPL is replaced."""
    try:
        cgroups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    settings = LeanSettings(max_repls=1, memory_mb=300)
    [slot] = lean_slots(1)
    executor = LeanExecutor(settings, repl_spec(spec(), settings), [slot], cgroups)
    await executor.start(standin())
    try:
        small = await executor.check(pb.LeanCall(code="theorem s : 1 = 1 := by hogs 20"), "s", 20_000)
        assert small.outcome == pb.OK
        cgroup = cgroups.kind(cgroups.parent / slot.name)
        assert slot.uid in {Path(f"/proc/{pid}").stat().st_uid for pid in cgroup.pids()}  # the REPL is there
        response = await executor.check(pb.LeanCall(code="theorem h : 1 = 1 := by hogs 150"), "h", 20_000)
        assert response.outcome == pb.MEMORY_LIMIT, response
        assert "together" in response.error
        assert (await executor.check(pb.LeanCall(code="theorem t : 1 = 1 := rfl"), "t", 5000)).outcome == pb.OK
    finally:
        await executor.close()
    assert not cgroup.path.exists()


async def test_without_a_toolchain_the_tool_is_unavailable_and_says_how_to_install():
    executor = LeanExecutor(LeanSettings(repl="/nonexistent/repl"), spec(), lean_slots(1))
    await executor.start()
    assert not executor.available
    assert "not installed" in executor.status() and "deploy/lean" in executor.status()
    assert "Unavailable" in executor.spec().description
    with pytest.raises(ToolUnavailable, match="deploy/lean"):
        await executor.check(pb.LeanCall(code="theorem t : True := trivial"), "r", 1000)
    await executor.close()


def test_tool_spec_and_json_arguments():
    spec_ = LeanExecutor(LeanSettings(), spec(), []).spec()
    schema = json.loads(spec_.parameters)
    assert spec_.name == "lean" and schema["required"] == ["code"]
    assert set(schema["properties"]) == {"code", "header", "statement"}
    parsed = lean_call_from_json('{"code": "theorem t : True := trivial", "header": "import A", "statement": "s"}')
    assert parsed.call.code.startswith("theorem") and parsed.call.header == "import A" and parsed.statement == "s"
    for bad in ("not json", "[1]", '{"header": "import A"}', '{"code": 1}', '{"code": "x", "extra": ""}'):
        with pytest.raises(InvalidRequest):
            lean_call_from_json(bad)


async def test_find_toolchain_reads_the_projects_environment_from_lake(tmp_path):
    repl = tmp_path / "repl"
    repl.write_text("#!/bin/sh\n")
    lake = tmp_path / "lake"
    lake.write_text('#!/bin/sh\n[ "$1 $3 $4" = "-d env printenv" ] || exit 9\n'
                    'echo LEAN_PATH=/opt/lean/mathlib/.lake/build/lib/lean\necho LEAN_SYSROOT=/opt/elan/tc\n'
                    'echo UNRELATED=x\n')
    for path in (repl, lake):
        path.chmod(0o755)
    toolchain = await find_toolchain(LeanSettings(repl=str(repl), lake=str(lake), project_dir=str(tmp_path),
                                                  env=("EXTRA=1",)))
    assert toolchain.command == (str(repl),)
    assert toolchain.env == {"LEAN_PATH": "/opt/lean/mathlib/.lake/build/lib/lean", "LEAN_SYSROOT": "/opt/elan/tc",
                             "PATH": "/opt/elan/tc/bin:/usr/local/bin:/usr/bin:/bin", "EXTRA": "1"}


async def test_find_toolchain_says_what_is_missing(tmp_path):
    with pytest.raises(ToolchainMissing, match="lean.repl"):
        await find_toolchain(LeanSettings(repl=str(tmp_path / "absent")))
    repl = tmp_path / "repl"
    repl.write_text("#!/bin/sh\n")
    repl.chmod(0o755)
    with pytest.raises(ToolchainMissing, match="project_dir"):
        await find_toolchain(LeanSettings(repl=str(repl), project_dir=str(tmp_path / "nowhere")))


async def test_a_full_queue_is_refused_at_once():
    pool = await make_pool(slots=1, max_queue=1)
    try:
        busy = asyncio.ensure_future(pool.run(A, "theorem busy : 1 = 1 := by sleep 1", 10))
        await asyncio.sleep(0.3)
        queued = asyncio.ensure_future(pool.run(A, "theorem queued : 1 = 1 := rfl", 10))
        await asyncio.sleep(0.1)
        with pytest.raises(Exhausted, match="lean queue is full"):
            await pool.run(A, "theorem refused : 1 = 1 := rfl", 10)
        assert (await busy).answer is not None and (await queued).answer is not None
    finally:
        await pool.close()
