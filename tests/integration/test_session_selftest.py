"""The start-up self-test proves from inside a real session that it sees the filesystem a
worker's call sees; a session that does not (one joined to its jail's mount namespace but
not to its root, as sessions once were) makes the server refuse sessions, with the
reason, while calls go on, and a failure that passes is retried until sessions come back."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import sandbox.sessions
from sandbox.calls import CallLimits, CallRequest
from sandbox.jail import JailPolicy
from sandbox.selftest import Check, canary_directory
from sandbox.worker import ZygoteSpec
from toolserver.errors import Unavailable
from toolserver.python import executor
from toolserver.python.executor import verify_session_jail
from toolserver.python.sessions import SessionManager
from toolserver.state import ServerState
from toolserver.zygotes.pool import WorkerPool

SPEC = ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(str(Path(__file__).resolve().parents[2]),)))


async def self_tested(slots) -> tuple[ServerState, SessionManager, WorkerPool]:
    pool = WorkerPool(SPEC, slots[:1], max_queue=4, grace_s=2.0, recycle_after=100)
    sessions = SessionManager(SPEC, slots[1:], max_sessions=1, ready=0, idle_timeout_s=60, memory_mb=0)
    await pool.start()
    await sessions.start()
    state = ServerState()
    await verify_session_jail(sessions, state, "", pool, SPEC.root(), canary_directory(slots[1]))
    return state, sessions, pool


async def a_call(pool: WorkerPool) -> str:
    reply = await pool.run(CallRequest("after", "6 * 7", CallLimits(timeout_ms=5000, memory_mb=256,
                                                                    max_output_bytes=4096, max_processes=16,
                                                                    max_file_mb=1, max_open_files=64)))
    return reply.value


async def test_a_session_that_sees_what_a_call_sees_passes(sandbox_slots):
    state, sessions, pool = await self_tested(sandbox_slots(2))
    try:
        checks = {check.name: check for check in state.checks}
        assert checks["session_jail"].ok and checks["session_mounts"].ok, state.checks
        assert not sessions.unavailable
    finally:
        await sessions.shutdown()
        await pool.close()


async def test_a_session_joined_to_the_wrong_root_is_refused_while_calls_go_on(sandbox_slots, monkeypatch):
    source = sandbox.sessions.SESSION_ZYGOTE_SOURCE
    assert '        os.chroot(".")\n' in source
    monkeypatch.setattr(sandbox.sessions, "SESSION_ZYGOTE_SOURCE", source.replace('        os.chroot(".")\n', ""))
    state, sessions, pool = await self_tested(sandbox_slots(2))
    try:
        (failed,) = [check for check in state.checks if not check.ok]
        assert failed.name == "session_mounts" and "root is writable" in failed.detail
        assert "session_mounts" in sessions.unavailable and "root is writable" in sessions.unavailable
        with pytest.raises(Unavailable, match="session_mounts"):
            await sessions.open()
        assert await a_call(pool) == "42"
    finally:
        await sessions.shutdown()
        await pool.close()


async def test_a_check_that_failed_for_a_while_is_retried_and_sessions_come_back(sandbox_slots, monkeypatch):
    """A failure that passes (a host mount made between two jails' starts, say) does not
    switch sessions off for the server's life: the check is tried SESSION_CHECK_TRIES times
    at start-up, then again every SESSION_RECHECK_S while sessions are refused, and the
    first pass serves them again, its result in place of the failure's."""
    real = executor.session_jail_checks
    tries = []

    async def failing_for_a_while(*args):
        tries.append(len(tries))
        if len(tries) <= executor.SESSION_CHECK_TRIES + 1:
            return [Check("session_mounts", False, "a host mount came and went")]
        return await real(*args)

    monkeypatch.setattr(executor, "session_jail_checks", failing_for_a_while)
    monkeypatch.setattr(executor, "SESSION_RECHECK_S", 0.2)
    slots = sandbox_slots(2)
    pool = WorkerPool(SPEC, slots[:1], max_queue=4, grace_s=2.0, recycle_after=100)
    sessions = SessionManager(SPEC, slots[1:], max_sessions=1, ready=0, idle_timeout_s=60, memory_mb=0)
    await pool.start()
    await sessions.start()
    state = ServerState()
    rechecks = await verify_session_jail(sessions, state, "", pool, SPEC.root(), canary_directory(slots[1]))
    try:
        assert rechecks is not None and len(tries) == executor.SESSION_CHECK_TRIES
        assert "a host mount came and went" in sessions.unavailable
        with pytest.raises(Unavailable, match="host mount"):
            await sessions.open()
        for _ in range(100):
            if not sessions.unavailable:
                break
            await asyncio.sleep(0.1)
        assert not sessions.unavailable and rechecks.done()
        assert [check.name for check in state.checks if not check.ok] == []
        assert {"session_jail", "session_root", "session_mounts"} <= {check.name for check in state.checks}
        session = await sessions.open()
        await sessions.close(session.session_id)
    finally:
        rechecks.cancel()
        await sessions.shutdown()
        await pool.close()
