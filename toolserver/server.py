"""Builds and runs the server: the house (self-test, tools, dispatcher), then the gRPC front.

`serve(settings)` owns the lifetime of everything it starts through one exit stack:
tools register their teardown as they are built, and it runs in reverse once the front
has drained. Start-up order: slots and the jail probe first (fail closed: a failed probe
leaves health NOT_SERVING and Execute answering UNAVAILABLE), then the tools, then the
port. SIGTERM/SIGINT drain: health turns NOT_SERVING, new calls get UNAVAILABLE,
in-flight calls finish.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sandbox.cgroups import CgroupUnavailable, MemoryCgroups
from sandbox.jail import Slot, firejail_path
from sandbox.selftest import Check, failed, run_self_test
from sandbox.slots import discover_slots
from sandbox.worker import ZygoteSpec
from toolcontract.names import SERVICE_NAME
from toolserver.config import LOOPBACK_HOSTS, WILDCARD_HOSTS, CoreSettings
from toolserver.dispatch import Dispatcher
from toolserver.errors import ConfigError
from toolserver.fronts.grpc_service import ToolServerService
from toolserver.fronts.grpc_transport import AuthInterceptor, add_to_server, server_credentials
from toolserver.fronts.http import start_http
from toolserver.jails import self_test_spec
from toolserver.metrics import ServerMetrics
from toolserver.policy import Policies, validate_against_settings
from toolserver.registry import BuildContext, SlotSupply
from toolserver.settings import load_policies
from toolserver.state import ServerState
from toolserver.tools import build_tools

log = logging.getLogger("toolserver")


def open_memory_cgroups(settings: CoreSettings) -> tuple[MemoryCgroups | None, Check]:
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
    log.info("memory cgroups: %s", cgroups.description)
    return cgroups, Check("memory_cgroup", True, cgroups.description)


async def verify_sandbox(settings: CoreSettings, spec: ZygoteSpec, state: ServerState, probe_slot: Slot,
                         cgroups: MemoryCgroups | None) -> None:
    """Runs the jail probe and records whether the server may serve."""
    if not spec.insecure_no_sandbox and firejail_path(spec.jail) is None:
        state.reason = f"firejail not found ({spec.jail.firejail}); run scripts/setup.sh"
        return
    if settings.sandbox.self_test or spec.insecure_no_sandbox:
        # The probe proves the jail alone (spec has no guard): it forks, writes and spins.
        cgroup = cgroups.for_slot(probe_slot.name, spec.jail.max_processes) if cgroups is not None else None
        try:
            state.checks += await run_self_test(spec, probe_slot, cgroup)
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


def load_caller_policies(settings: CoreSettings) -> Policies:
    """The validated policies; refuses an open server beyond loopback. Raises ConfigError."""
    policies = load_policies(settings.auth.policy_file or None)
    validate_against_settings(policies, settings)
    authenticated = not policies.open or bool(settings.server.tls_client_ca)
    if settings.server.host not in LOOPBACK_HOSTS and not authenticated and not settings.auth.allow_open_bind:
        raise ConfigError(f"refusing to listen on {settings.server.host} with no caller tokens "
                          "(auth.policy_file) and no mutual TLS (server.tls_client_ca): anyone reaching "
                          "the port could run code. Pass --allow-open-bind to do it anyway.")
    if (settings.http.port and settings.http.host not in LOOPBACK_HOSTS and policies.open
            and not settings.auth.allow_open_bind):
        raise ConfigError(f"refusing to serve HTTP on {settings.http.host} with no caller tokens "
                          "(auth.policy_file; the HTTP fronts have no TLS of their own): anyone reaching "
                          "the port could run code. Pass --allow-open-bind to do it anyway.")
    return policies


def advertised_address(settings: CoreSettings, port: int) -> str:
    """Where other machines reach this replica: the configured address, else host:port,
    else (listening on every interface) this machine's address."""
    if settings.server.advertise_address:
        return settings.server.advertise_address
    host = settings.server.host
    if host in WILDCARD_HOSTS:
        try:
            host = socket.gethostbyname(socket.gethostname())
        except OSError:
            host = socket.gethostname()
    return f"{host}:{port}"


async def build_house(settings: CoreSettings, stack: AsyncExitStack) -> Dispatcher:
    """The self-test's verdict and every tool, started; their teardown goes on stack."""
    state = ServerState()
    spec = self_test_spec(settings)
    found = discover_slots(settings.sandbox.user_prefix, settings.sandbox.slots, Path(settings.sandbox.scratch_root),
                           settings.sandbox.first_slot)
    slots = SlotSupply(found)
    probe = slots.take(1)  # the self-test's; the tools take theirs after it
    needed = settings.needed_slots()
    cgroups = None
    if len(found) < needed:
        state.refuse(f"{len(found)} sandbox slot users found, {needed} needed: run "
                     "`toolserver setup-sandbox` as root (scripts/setup.sh does)")
    else:
        cgroups, cgroup_check = open_memory_cgroups(settings)
        state.checks.append(cgroup_check)
        await verify_sandbox(settings, spec, state, probe[0], cgroups)
    metrics = ServerMetrics()
    registry = await build_tools(BuildContext(settings, state, spec, slots, cgroups, metrics), stack)
    if settings.metrics.enabled:
        metrics_port = metrics.serve(settings.metrics.host, settings.metrics.port)
        log.info("metrics on http://%s:%d/metrics", settings.metrics.host, metrics_port)
    return Dispatcher(state, registry, metrics)


async def serve(settings: CoreSettings, *, ready: asyncio.Event | None = None, bound_port: list[int] | None = None) -> None:
    policies = load_caller_policies(settings)
    credentials = server_credentials(settings)
    if not policies.open and credentials is None and settings.server.host not in LOOPBACK_HOSTS:
        log.warning("caller tokens travel in plaintext on %s: configure server.tls_cert", settings.server.host)
    async with AsyncExitStack() as stack:
        dispatcher = await build_house(settings, stack)
        if settings.http.port:
            await start_http(settings, dispatcher, policies, stack)
        await serve_grpc(settings, dispatcher, policies, credentials, ready=ready, bound_port=bound_port)
    log.info("stopped")


async def serve_grpc(settings: CoreSettings, dispatcher: Dispatcher, policies: Policies,
                     credentials: grpc.ServerCredentials | None, *, ready: asyncio.Event | None,
                     bound_port: list[int] | None) -> None:
    """Serves the gRPC front until SIGTERM or SIGINT, then drains it."""
    state = dispatcher.state
    # Requests are capped (server.max_message_bytes); answers are what [limits] let a call
    # print and fetch, each part capped there, so the send side has no cap of its own.
    options = [("grpc.max_receive_message_length", settings.server.max_message_bytes),
               ("grpc.max_send_message_length", -1),
               ("grpc.so_reuseport", 0)]
    server = grpc.aio.server(options=options, interceptors=[AuthInterceptor(policies)])
    add_to_server(ToolServerService(dispatcher, policies, settings.server.max_stream_inflight), server)
    health_servicer = health.aio.HealthServicer()
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
    dispatcher.replica = advertised_address(settings, port)
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
            await asyncio.wait_for(dispatcher.idle.wait(), settings.server.drain_timeout_s)
        except asyncio.TimeoutError:
            log.warning("drain timed out with %d calls in flight", state.inflight)
        await server.stop(grace=1.0)
