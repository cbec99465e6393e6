"""The python tool: a PythonCall and its Limits in, an ExecuteResponse out.

It caps the caller's limits by the server's, hands a stateless call to a worker pool
(the class `routing` picks: slim for the standard library, scientific for the data
stack, else warm; a call the slim worker hands back runs again on a warm one) and a
session's call to its process, and turns the reply into the contract's message. It
knows nothing of gRPC status.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from contextlib import AsyncExitStack
from pathlib import Path

from sandbox.calls import PROGRAM_FILE, CallLimits, CallReply, CallRequest, working_path
from sandbox.cgroups import SlotCgroups
from sandbox.inside.outcome import wall_time_exceeded
from sandbox.root import JailRoot, expected_names
from sandbox.selftest import (
    Check,
    canary_directory,
    canary_file,
    failed,
    guard_probe,
    judge_guard,
    probe_request,
)
from sandbox.session_probes import (
    SESSION_PROBE,
    judge_mount_views,
    judge_session_probe,
    judge_session_root,
    mount_view_probe,
    root_probe,
)
from sandbox.worker import WorkerLost
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.errors import InvalidRequest, RequestError, ToolUnavailable, Unavailable
from toolserver.grants import effective_limits
from toolserver.outcomes import contract_outcome
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.python.gauges import watch_python
from toolserver.python.jails import python_jails
from toolserver.python.routing import RUNS_ON, SCIENTIFIC, SLIM, WARM, CallRouter
from toolserver.python.rules import PythonRules
from toolserver.python.schema import python_call_from_json, python_tool_spec
from toolserver.python.sessions import SELF_TEST_OWNER, SessionManager, open_files_wanted, raise_open_files
from toolserver.python.settings import PythonSettings, SessionSettings
from toolserver.registry import BuildContext, Tool
from toolserver.state import ServerState
from toolserver.text import valid_text
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.scheduler import Scheduler

log = logging.getLogger(__name__)

def session_memory_mb(requested: pb.Limits, settings: CoreSettings, caller: CallerPolicy = OPEN_POLICY) -> int:
    """A new session's memory: what OpenSession asked for, else sessions.memory_mb, never
    above it nor the caller's max_memory_mb (asking for more than that is refused)."""
    caller.check_limits(pb.Limits(memory_mb=requested.memory_mb))  # a session's calls ask their own time
    cap = settings.section(SessionSettings).memory_mb
    value = min(requested.memory_mb or cap, cap)
    return min(value, caller.max_memory_mb) if caller.max_memory_mb else value


def call_files(call: pb.PythonCall, limits: CallLimits, max_files: int) -> tuple[dict[str, bytes], tuple[str, ...]]:
    """The call's files to write (by normalized path) and to fetch (by the names asked,
    which name them in the answer); InvalidRequest for a path outside the working
    directory, two paths where one is the other's directory, or files beyond what the
    call may write (max_file_mb each, max_scratch_mb together)."""
    if len(call.files) > max_files or len(call.fetch_files) > max_files:
        raise InvalidRequest(f"at most {max_files} files may be written or fetched per call")
    try:
        files = {working_path(name): data for name, data in call.files.items()}
        fetch = tuple(dict.fromkeys(name for name in call.fetch_files if working_path(name)))
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc
    if len(files) < len(call.files):
        raise InvalidRequest("two files name the same path")
    if PROGRAM_FILE in files:
        raise InvalidRequest(f"file path {PROGRAM_FILE!r} is the program's own (the call's code)")
    directories = {parent for path in files for parent in parent_directories(path)}
    if clash := sorted(directories & files.keys()):
        raise InvalidRequest(f"file path {clash[0]!r} is also the directory of another file")
    if big := next((path for path, data in files.items() if len(data) > limits.max_file_mb << 20), None):
        raise InvalidRequest(f"file {big!r} is larger than the {limits.max_file_mb} MB a call may write")
    if limits.max_scratch_mb and sum(map(len, files.values())) > limits.max_scratch_mb << 20:
        raise InvalidRequest(f"the files are larger than the {limits.max_scratch_mb} MB of scratch a call has")
    return files, fetch


def parent_directories(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]


def response_from_reply(request_id: str, reply: CallReply) -> pb.ExecuteResponse:
    return pb.ExecuteResponse(
        request_id=request_id,
        outcome=contract_outcome(reply.outcome),
        stdout=valid_text(reply.stdout),
        stderr=valid_text(reply.stderr),
        error=valid_text(reply.error),
        truncated=reply.truncated,
        elapsed_us=max(0, reply.elapsed_us),
        queued_us=max(0, reply.queued_us),
        python=pb.PythonResult(value=valid_text(reply.value), exit_code=reply.exit_code, files=reply.files,
                               displays=[pb.Display(kind=display.kind, data=display.data, metadata_json=display.metadata)
                                         for display in reply.displays]),
    )


class PythonExecutor(Tool):
    name = "python"

    def __init__(self, settings: CoreSettings, pools: dict[str, WorkerPool], sessions: SessionManager | None) -> None:
        """pools: by worker class (routing.SLIM, WARM, SCIENTIFIC); no WARM pool: calls are
        refused (the sandbox is not proven)."""
        self.settings = settings
        self.pools = pools
        self.sessions = sessions
        self.python = settings.section(PythonSettings)
        self.router = CallRouter(self.python.preload, self.python.scientific_preload)
        self.rerouted = 0           # calls a slim worker handed back to a warm one

    @property
    def workers(self) -> int:
        """Its base warm and slim workers (code-judge's num_workers)."""
        return self.python.warm_count() + self.python.slim_count()

    @property
    def pool(self) -> WorkerPool | None:
        """The warm workers: every call may run there."""
        return self.pools.get(WARM)

    @property
    def available(self) -> bool:
        return self.pool is not None

    def status(self) -> str:
        if self.pool is None:
            return "no worker pool"
        text = "; ".join(f"{name}: {pool_status(pool)}" for name, pool in self.pools.items())
        return text + f"; {self.rerouted} rerouted" if SLIM in self.pools else text

    @staticmethod
    def call_from_json(arguments: str) -> pb.PythonCall:
        return python_call_from_json(arguments)

    def import_profile(self, caller: CallerPolicy) -> str:
        return caller.rules_of(PythonRules).import_profile or self.python.import_profile

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        profile = self.import_profile(caller)
        python = self.python
        rules = python.import_profiles[profile]
        return python_tool_spec(profile, python.allow_list(profile), rules.denied_imports, rules.refuse_actions)

    def grant(self, limits: pb.Limits, caller: CallerPolicy) -> CallLimits:
        return effective_limits(limits, self.settings, caller)

    async def open_session(self, limits: pb.Limits, caller: CallerPolicy = OPEN_POLICY) -> pb.Session:
        session = await self.session_manager().open(caller.name, caller.rules_of(PythonRules).max_sessions,
                                                    session_memory_mb(limits, self.settings, caller),
                                                    self.import_profile(caller))
        return pb.Session(session_id=session.session_id, idle_timeout_s=session.idle_timeout_s)

    async def close_session(self, session_id: str, caller: CallerPolicy = OPEN_POLICY) -> None:
        await self.session_manager().close(session_id, caller.name)

    def session_manager(self) -> SessionManager:
        if self.sessions is None:
            raise ToolUnavailable("stateful sessions are not enabled on this server")
        return self.sessions

    async def run(self, call: pb.PythonCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        if not call.code.strip():
            raise InvalidRequest("python.code is empty")
        granted = self.grant(limits, caller)
        files, fetch = call_files(call, granted, self.settings.limits.max_scratch_files)
        if call.session_id:
            if files or fetch:
                raise InvalidRequest("files and fetch_files need a fresh interpreter: a session call cannot take them")
            reply = await self.session_manager().execute(call.session_id, caller.name, call.code, call.stdin,
                                                         granted.timeout_ms, granted.max_output_bytes)
            return response_from_reply(request_id, reply)
        if self.pool is None:
            raise Unavailable("no python worker pool: the sandbox is not proven safe")
        request = CallRequest(request_id, call.code, granted, stdin=call.stdin, profile=self.import_profile(caller),
                              files=files, fetch_files=fetch)
        return response_from_reply(request_id, await self.run_stateless(request))

    async def run_stateless(self, request: CallRequest) -> CallReply:
        """The reply of a worker of the class the router picks (or of one that runs it
        too, when the scheduler lends one); a call a worker hands back (REROUTE, naming the
        module it lacks) runs again where that module is preloaded, with the time its tries
        so far have not used: the call's limit holds for all of them together, and its
        answer's elapsed time is theirs together."""
        assert self.pool is not None
        scheduler = self.pool.scheduler
        reply = await scheduler.run(self.router.route(request.code), request)
        queued_us, elapsed_us = reply.queued_us, reply.elapsed_us
        for _ in range(2):  # slim to warm to scientific at most (a scientific worker hands nothing back)
            if reply.outcome != "REROUTE":
                break
            self.rerouted += 1
            left_ms = request.limits.timeout_ms - elapsed_us // 1000
            if left_ms <= 0:
                reply = CallReply(request.id, "TIMEOUT", error=wall_time_exceeded(request.limits.timeout_ms))
                break
            route = self.router.route_handed_back(reply.needs)
            scientific = route == SCIENTIFIC and route in self.pools
            rest = dataclasses.replace(request, limits=dataclasses.replace(request.limits, timeout_ms=left_ms))
            reply = await scheduler.run(route if scientific else WARM, rest, borrow=not scientific)
            queued_us += reply.queued_us
            elapsed_us += reply.elapsed_us
            if reply.outcome == "TIMEOUT" and reply.error == wall_time_exceeded(left_ms):
                reply.error = wall_time_exceeded(request.limits.timeout_ms)
        reply.queued_us, reply.elapsed_us = queued_us, elapsed_us
        return self.checked(reply)

    @staticmethod
    def checked(reply: CallReply) -> CallReply:
        if reply.outcome == "REROUTE":  # a scientific worker hands nothing back: its child lied
            reply.outcome, reply.error = "CRASHED", "the call's process answered a result it cannot give"
        return reply


def pool_status(pool: WorkerPool) -> str:
    stats = pool.stats()
    return (f"{stats.size} workers, {stats.idle} idle, {stats.waiting} waiting, "
            f"{stats.restarts} restarts, {stats.calls} calls")


async def build_python(context: BuildContext, stack: AsyncExitStack) -> PythonExecutor:
    """The python tool: started worker pools (warm; slim and scientific unless they are
    off) and session manager once the sandbox is proven, else one that refuses calls (the
    state says why). Slots in order: warm workers, sessions, slim workers, scientific ones,
    the spare ones the pools grow onto."""
    settings, state = context.settings, context.state
    python = settings.section(PythonSettings)
    sessions_settings = settings.section(SessionSettings)
    jails = python_jails(settings)
    classes = {WARM: (jails.worker, context.slots.take(python.warm_count()))}
    session_slots = context.slots.take(sessions_settings.max_sessions)
    classes[SLIM] = (jails.slim_worker, context.slots.take(python.slim_count()))
    classes[SCIENTIFIC] = (jails.scientific_worker, context.slots.take(python.scientific_count()))
    spare = context.slots.take(python.extra_worker_slots(settings))
    if not state.serving:
        return PythonExecutor(settings, {}, None)
    scheduler = Scheduler(spare, max_queue=python.max_queue, tool="python", runs_on=RUNS_ON,
                          idle_shrink_s=python.extra_idle_s)
    slot_cgroups = SlotCgroups(context.cgroups, settings.sandbox.jail_max_processes)
    stack.callback(slot_cgroups.remove_all)
    pools = {}
    for name, (spec, slots) in classes.items():
        if slots:
            pool = WorkerPool(spec, slots, max_queue=python.max_queue, grace_s=python.worker_grace_s,
                              recycle_after=python.recycle_after, name=name, scheduler=scheduler,
                              slot_cgroups=slot_cgroups)
            stack.push_async_callback(pool.close)
            pools[name] = pool
    try:
        await asyncio.gather(*(pool.start() for pool in pools.values()))
        scheduler.start()
        for name, pool in pools.items():
            for profile, rules in python.import_profiles.items():
                if rules.denied_imports:
                    await verify_guard(pool, state, profile, rules.denied_imports[0], f"import_guard_{name}[{profile}]")
    except WorkerLost as exc:
        state.refuse(f"no python worker could start: {exc}")
    if not state.serving:
        return PythonExecutor(settings, {}, None)
    sessions = None
    if session_slots:
        raise_open_files(open_files_wanted(len(session_slots)))
        sessions = SessionManager(jails.session, session_slots, max_sessions=sessions_settings.max_sessions,
                                  ready=sessions_settings.ready, keep_peak_s=sessions_settings.keep_peak_s,
                                  idle_timeout_s=sessions_settings.idle_timeout_s,
                                  memory_mb=sessions_settings.memory_mb, recycle_jails=sessions_settings.recycle_jails,
                                  cgroups=context.cgroups, output_cap=settings.limits.max_output_bytes,
                                  display_bytes=sessions_settings.max_display_bytes)
        stack.push_async_callback(sessions.shutdown)
        await sessions.start()
        rechecks = await verify_session_jail(sessions, state, python.import_profile, pools.get(WARM),
                                             jails.session.root(), canary_directory(session_slots[0]))
        if rechecks is not None:
            stack.callback(rechecks.cancel)
    executor = PythonExecutor(settings, pools, sessions)
    watch_python(context.metrics, executor)
    return executor


SESSION_CHECK_TRIES = 3     # a session's jail check that fails is tried this many times before sessions stop
SESSION_RECHECK_S = 30.0    # while they are stopped, it is tried again this often


async def verify_session_jail(sessions: SessionManager, state: ServerState, profile: str,
                              pool: WorkerPool | None, root: JailRoot, canary_dir: Path) -> asyncio.Task[None] | None:
    """Proves on a real session that its process holds in its jail as a worker's call does:
    not root, no capability, no_new_privs, the jail's seccomp filters and ours, no network,
    its home writable, only its root of the host's tree (a canary in canary_dir unread),
    and the filesystem a call on pool sees (the same reachable mounts, read-only root,
    hidden paths hidden). A check that fails is tried again SESSION_CHECK_TRIES times;
    one that still fails stops sessions with the reason (calls are served on) and is tried
    again every SESSION_RECHECK_S in the task returned, which serves sessions again once
    every check passes: no passing state of the host switches sessions off for good."""
    if sessions.unavailable or state.insecure:
        return None
    for attempt in range(SESSION_CHECK_TRIES):
        if attempt:
            await asyncio.sleep(1.0)
        checks = await session_jail_checks(sessions, profile, pool, root, canary_dir)
        if not failed(checks):
            break
    record_checks(state, checks)
    if bad := failed(checks):
        sessions.refuse(f"sandbox self-test failed: {bad[0].name} ({bad[0].detail})")
        return asyncio.get_running_loop().create_task(
            recheck_session_jail(sessions, state, profile, pool, root, canary_dir))
    return None


async def recheck_session_jail(sessions: SessionManager, state: ServerState, profile: str,
                               pool: WorkerPool | None, root: JailRoot, canary_dir: Path) -> None:
    """Checks a session's jail again every SESSION_RECHECK_S until it holds, then serves
    sessions again; each result replaces the last in the server's checks."""
    while sessions.unavailable:
        await asyncio.sleep(SESSION_RECHECK_S)
        checks = await session_jail_checks(sessions, profile, pool, root, canary_dir)
        record_checks(state, checks)
        if bad := failed(checks):
            log.warning("sessions stay refused: %s (%s)", bad[0].name, bad[0].detail)
        else:
            sessions.resume()


def record_checks(state: ServerState, checks: list[Check]) -> None:
    """checks in the server's, in place of earlier results of the same names."""
    names = {check.name for check in checks}
    state.checks = [check for check in state.checks if check.name not in names] + checks


async def session_jail_checks(sessions: SessionManager, profile: str, pool: WorkerPool | None,
                              root: JailRoot, canary_dir: Path) -> list[Check]:
    """The checks of one session opened for the self-test: `session_jail`, `session_root`
    and, with pool, `session_mounts`."""
    views = mount_view_probe(sessions.spec)
    tops = list(expected_names(root, ""))
    try:
        with canary_file(canary_dir) as canary:
            session = await sessions.open(owner=SELF_TEST_OWNER, profile=profile)
            try:
                reply = await sessions.execute(session.session_id, SELF_TEST_OWNER, SESSION_PROBE, "", 20000, 65536)
                seen = await sessions.execute(session.session_id, SELF_TEST_OWNER, root_probe(tops, canary), "",
                                              20000, 1 << 20)
                view = await sessions.execute(session.session_id, SELF_TEST_OWNER, views, "", 20000, 1 << 20)
            finally:
                await sessions.close(session.session_id, SELF_TEST_OWNER)
    except (RequestError, OSError) as exc:
        return [Check("session_jail", False, f"no session could be opened: {exc}")]
    checks = [judge_session_probe(reply), judge_session_root(seen, root)]
    if pool is not None:
        checks.append(judge_mount_views(await pool.run(probe_request("mount_view", views, max_output_bytes=1 << 20)),
                                        view))
    return checks


async def verify_guard(pool: WorkerPool, state: ServerState, profile: str, module: str, name: str) -> None:
    """Proves on a real worker that a profile's guard refuses one of its denied modules; a
    guard that is configured but does not work stops the server from serving."""
    reply = await pool.run(probe_request("guard", guard_probe(module), profile))
    check = dataclasses.replace(judge_guard(reply, module), name=name)
    state.checks.append(check)
    if not check.ok:
        state.refuse(f"sandbox self-test failed: {check.name} ({check.detail})")
