"""Builds and runs the gRPC server: pools, self-test, services, signals, drain.

`serve(settings)` owns the lifetime of everything it starts. Start-up order: slots and
the jail probe first (fail closed: a failed probe leaves health NOT_SERVING and Execute
answering UNAVAILABLE), then the worker pool, then the port. SIGTERM/SIGINT drain:
health turns NOT_SERVING, new calls get UNAVAILABLE, in-flight calls finish.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import socket
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sandbox.cgroups import CgroupUnavailable, MemoryCgroups
from sandbox.jail import JailPolicy, firejail_path
from sandbox.selftest import GUARD_PROBE, Check, failed, judge_guard, probe_request, run_self_test
from sandbox.slots import discover_slots
from sandbox.worker import GuardPolicy, WorkerLost, ZygoteSpec
from toolserver.config import ConfigError, Settings
from toolserver.metrics import ServerMetrics
from toolserver.policy import Policies, load_policies, validate_against_settings
from toolserver.pool import WorkerPool
from toolserver.python_tool import PythonExecutor
from toolserver.lean.executor import LeanExecutor
from toolserver.search.executor import SearchExecutor, ensure_default_index
from toolserver.service import AuthInterceptor, ServerState, ToolServerService, add_to_server
from toolserver.sessions import SessionManager
from toolserver.v1 import toolserver_pb2 as pb

log = logging.getLogger("toolserver")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ToolServer"].full_name
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def project_paths() -> list[str]:
    """What jails must not see of the project: the whole source tree when it runs from
    a checkout, else (installed in site-packages, beside the modules calls import) only
    its own packages. Workers get their code over their control pipe."""
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return [str(PROJECT_ROOT)]
    return [str(PROJECT_ROOT / package) for package in ("toolserver", "sandbox", "trainer")
            if (PROJECT_ROOT / package).exists()]


def zygote_spec(settings: Settings) -> ZygoteSpec:
    hidden = list(settings.sandbox.hidden_paths)
    if not Path(settings.python.interpreter).resolve().is_relative_to(PROJECT_ROOT):
        hidden += project_paths()
    jail = JailPolicy(
        firejail=settings.sandbox.firejail,
        max_processes=settings.sandbox.jail_max_processes,
        max_file_mb=settings.limits.max_file_mb,
        max_open_files=settings.limits.max_open_files * 2,
        memory_mb=settings.sandbox.jail_memory_mb,
        # One megabyte more than a call may fill, so that the zygote sees a call reach
        # its cap (and kills it) where the tmpfs would only refuse the next write.
        home_mb=settings.limits.max_scratch_mb + 1,
        home_files=settings.limits.max_scratch_files,
        hidden_paths=tuple(hidden),
    )
    return ZygoteSpec(interpreter=settings.python.interpreter, preload=settings.python.preload, jail=jail,
                      huge_pages=settings.python.huge_pages,
                      guard=GuardPolicy({name: settings.python.allow_list(name)
                                         for name in settings.python.import_profiles},
                                        settings.python.denied_imports)
                      if settings.python.import_guard else None,
                      insecure_no_sandbox=settings.sandbox.insecure_no_sandbox,
                      start_timeout_s=settings.python.start_timeout_s)


def open_memory_cgroups(settings: Settings) -> tuple[MemoryCgroups | None, Check]:
    """The slots' memory cgroups as sandbox.memory_cgroup asks, and the check that says
    whether a call's and a session's processes are capped together."""
    mode = settings.sandbox.memory_cgroup
    if mode == "off":
        return None, Check("memory_cgroup", True, "off by config: per-process memory limits only")
    try:
        cgroups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        if mode == "required":
            return None, Check("memory_cgroup", False, f"required but unavailable: {exc}")
        log.warning("no memory cgroups (%s): each process of a call or session is capped alone", exc)
        return None, Check("memory_cgroup", True, f"unavailable ({exc}): per-process memory limits only")
    return cgroups, Check("memory_cgroup", True, f"one per slot under {cgroups.parent}")


async def verify_sandbox(settings: Settings, spec: ZygoteSpec, state: ServerState, probe_slot,
                         cgroups: MemoryCgroups | None) -> None:
    """Runs the jail probe and records whether the server may serve."""
    if not spec.insecure_no_sandbox and firejail_path(spec.jail) is None:
        state.reason = f"firejail not found ({spec.jail.firejail}); run scripts/setup.sh"
        return
    if settings.sandbox.self_test or spec.insecure_no_sandbox:
        # The probe proves the jail alone: it forks, writes and spins, which the guard refuses.
        cgroup = cgroups.for_slot(probe_slot.name) if cgroups is not None else None
        try:
            state.checks += await run_self_test(dataclasses.replace(spec, guard=None), probe_slot, cgroup)
        finally:
            if cgroup is not None:
                cgroup.remove()
        bad = failed(state.checks)
        state.sandbox_verified = not bad and not spec.insecure_no_sandbox
        if bad:
            state.reason = "sandbox self-test failed: " + "; ".join(f"{c.name} ({c.detail})" for c in bad)
    else:
        state.reason = "sandbox self-test disabled by config"
    if spec.insecure_no_sandbox:
        state.insecure = True
        state.serving = True
        state.reason = "INSECURE: running untrusted code WITHOUT a sandbox (--insecure-no-sandbox)"
        log.critical("%s; self-test: %s", state.reason, state.reason if not state.checks else
                     ", ".join(f"{c.name}={'ok' if c.ok else 'FAIL'}" for c in state.checks))
    elif state.sandbox_verified:
        state.serving = True
        state.reason = ""
    else:
        log.error("refusing to run code: %s", state.reason)


LOOPBACK_HOSTS = ("127.0.0.1", "::1", "[::1]", "localhost")


def load_caller_policies(settings: Settings) -> Policies:
    """The validated policies; refuses an open server beyond loopback. Raises ConfigError."""
    policies = load_policies(settings.auth.policy_file or None)
    validate_against_settings(policies, {"timeout_ms": settings.limits.timeout_ms,
                                         "memory_mb": settings.limits.memory_mb,
                                         "max_output_bytes": settings.limits.max_output_bytes},
                              settings.lean.max_timeout_ms, settings.python.import_profiles)
    authenticated = not policies.open or bool(settings.server.tls_client_ca)
    if settings.server.host not in LOOPBACK_HOSTS and not authenticated and not settings.auth.allow_open_bind:
        raise ConfigError(f"refusing to listen on {settings.server.host} with no caller tokens "
                          "(auth.policy_file) and no mutual TLS (server.tls_client_ca): anyone reaching "
                          "the port could run code. Pass --allow-open-bind to do it anyway.")
    return policies


def server_credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """TLS credentials from the configured PEM files, or None for plaintext."""
    if not settings.server.tls_cert:
        return None
    try:
        key = Path(settings.server.tls_key).read_bytes()
        cert = Path(settings.server.tls_cert).read_bytes()
        client_ca = Path(settings.server.tls_client_ca).read_bytes() if settings.server.tls_client_ca else None
    except OSError as exc:
        raise ConfigError(f"cannot read TLS file {exc.filename}: {exc.strerror}") from exc
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=client_ca,
                                       require_client_auth=client_ca is not None)


async def verify_guard(pool: WorkerPool, state: ServerState, profile: str) -> None:
    """Proves on a real worker that the configured guard refuses a denied import; a guard
    that is configured but does not work stops the server from serving."""
    reply = await pool.run(probe_request("guard", GUARD_PROBE, profile))
    check = judge_guard(reply)
    state.checks.append(check)
    if not check.ok:
        state.serving = False
        state.reason = f"sandbox self-test failed: {check.name} ({check.detail})"
        log.error("refusing to run code: %s", state.reason)


def advertised_address(settings: Settings, port: int) -> str:
    """Where other machines reach this replica: the configured address, else host:port,
    else (listening on every interface) this machine's address."""
    if settings.server.advertise_address:
        return settings.server.advertise_address
    host = settings.server.host
    if host in ("0.0.0.0", "::", "[::]", ""):
        try:
            host = socket.gethostbyname(socket.gethostname())
        except OSError:
            host = socket.gethostname()
    return f"{host}:{port}"


async def start_search(settings: Settings) -> SearchExecutor | None:
    """The search executor over the served indexes, building the default index first when
    it is missing; None (the tool unavailable, with the reason logged) when none loads."""
    try:
        if settings.search.build_default:
            await asyncio.to_thread(ensure_default_index, settings.search)
        search = await asyncio.to_thread(SearchExecutor.from_settings, settings.search)
    except (OSError, ConfigError) as exc:
        log.error("search tool unavailable: %s", exc)
        return None
    log.info("search: %s", search.status())
    return search


async def serve(settings: Settings, *, ready: asyncio.Event | None = None, bound_port: list[int] | None = None) -> None:
    policies = load_caller_policies(settings)
    credentials = server_credentials(settings)
    if not policies.open and credentials is None and settings.server.host not in LOOPBACK_HOSTS:
        log.warning("caller tokens travel in plaintext on %s: configure server.tls_cert", settings.server.host)
    state = ServerState()
    spec = zygote_spec(settings)
    slots = discover_slots(settings.sandbox.user_prefix, settings.sandbox.slots, Path(settings.sandbox.scratch_root),
                           settings.sandbox.first_slot)
    needed = settings.python.workers + 1
    health_servicer = health.aio.HealthServicer()
    pool: WorkerPool | None = None
    sessions: SessionManager | None = None
    if len(slots) < needed:
        state.reason = (f"{len(slots)} sandbox slot users found, {needed} needed: run "
                        "`toolserver setup-sandbox` as root (scripts/setup.sh does)")
        log.error("refusing to run code: %s", state.reason)
    else:
        cgroups, cgroup_check = open_memory_cgroups(settings)
        state.checks.append(cgroup_check)
        await verify_sandbox(settings, spec, state, slots[0], cgroups)
        if state.serving:
            pool = WorkerPool(spec, slots[1:needed], max_queue=settings.python.max_queue,
                              grace_s=settings.python.worker_grace_s, recycle_after=settings.python.recycle_after,
                              cgroups=cgroups)
            try:
                await pool.start()
                if spec.guard is not None:
                    await verify_guard(pool, state, settings.python.import_profile)
            except WorkerLost as exc:
                state.serving = False
                state.reason = f"no python worker could start: {exc}"
                log.error("refusing to run code: %s", state.reason)
            session_slots = slots[needed:needed + settings.sessions.max_sessions]
            if session_slots:
                sessions = SessionManager(spec, session_slots, max_sessions=settings.sessions.max_sessions,
                                          idle_timeout_s=settings.sessions.idle_timeout_s,
                                          start_timeout_s=settings.sessions.start_timeout_s,
                                          max_message_text=settings.limits.max_output_bytes, cgroups=cgroups)
                sessions.start()
    search = await start_search(settings)
    lean = LeanExecutor(settings.lean, spec, slots[needed + settings.sessions.max_sessions:])
    await lean.start()
    metrics = ServerMetrics()
    metrics.watch_pool(pool, sessions)
    service = ToolServerService(state, PythonExecutor(settings, pool, sessions), policies,
                                settings.server.max_stream_inflight, search=search, lean=lean,
                                metrics=metrics)
    if settings.metrics.enabled:
        metrics_port = metrics.serve(settings.metrics.host, settings.metrics.port)
        log.info("metrics on http://%s:%d/metrics", settings.metrics.host, metrics_port)

    options = [("grpc.max_receive_message_length", settings.server.max_message_bytes),
               ("grpc.max_send_message_length", settings.server.max_message_bytes),
               ("grpc.so_reuseport", 0)]
    server = grpc.aio.server(options=options, interceptors=[AuthInterceptor(policies)])
    add_to_server(service, server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server)
    address = f"{settings.server.host}:{settings.server.port}"
    if credentials is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, credentials)
    if port == 0:
        raise OSError(f"cannot bind {address}")
    service.replica = advertised_address(settings, port)
    status = health_pb2.HealthCheckResponse.SERVING if state.serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, status)
    await server.start()
    log.info("listening on %s:%d (%s; %s; %s)", settings.server.host, port,
             "serving" if state.serving else f"NOT serving: {state.reason}",
             "TLS" if credentials is not None else "plaintext",
             "open to every caller" if policies.open else f"{len(policies.by_hash)} caller policies")
    if bound_port is not None:
        bound_port.append(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        log.info("draining: %d calls in flight", state.inflight)
        state.draining = True
        for name in ("", SERVICE_NAME):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        try:
            await asyncio.wait_for(service.idle.wait(), settings.server.drain_timeout_s)
        except asyncio.TimeoutError:
            log.warning("drain timed out with %d calls in flight", state.inflight)
        await server.stop(grace=1.0)
        if sessions is not None:
            await sessions.shutdown()
        if pool is not None:
            await pool.close()
        if search is not None:
            search.close()
        await lean.close()
        log.info("stopped")
