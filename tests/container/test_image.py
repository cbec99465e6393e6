"""The server image, built and run for real (marker `container`): the image holds a slot
user for every slot and only the package's sources; compose's service serves with every
self-test check passing, answers each outcome, a session and a search, and drains on
SIGTERM; and the server refuses to serve (NOT_SERVING with the reason, never a crash)
wherever a piece of the security context is missing. The attack suite runs against the
container in test_image_attacks.py.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from grpc_health.v1 import health_pb2

from tests.container.conftest import ROOT, ServerContainer, compose_service, podman
from toolclient.client import Unavailable
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.jails import PROJECT_PACKAGES
from toolserver.settings import Settings

pytestmark = [pytest.mark.container, pytest.mark.timeout(900)]

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SLOT_UID_BASE = int(re.search(r"^ARG SLOT_UID_BASE=(\d+)$", (ROOT / "deploy" / "Dockerfile").read_text(), re.M)[1])


# --- the image ---------------------------------------------------------------------

def test_the_image_has_a_slot_user_for_every_slot_the_server_uses(image):
    passwd = podman("run", "--rm", "--network=none", image, "getent", "passwd").stdout
    prefix = Settings().sandbox.user_prefix
    users = {fields[0]: int(fields[2]) for fields in (line.split(":") for line in passwd.splitlines())
             if fields[0].startswith(prefix)}
    assert users == {f"{prefix}{i}": SLOT_UID_BASE + i for i in range(Settings().sandbox.slots)}


def test_the_image_holds_the_package_sources_and_no_build_secret(image):
    listing = podman("run", "--rm", "--network=none", image, "ls", "-A", "/opt/toolserver/src").stdout.split()
    assert set(listing) == {"README.md", "pyproject.toml", "proto", *PROJECT_PACKAGES,
                            "toolserver.egg-info"}  # .dockerignore; the egg-info is pip's
    left = podman("run", "--rm", "--network=none", image, "sh", "-c",
                  "find /run/secrets /etc/pip.conf /etc/xdg/pip /root/.config/pip -type f 2>/dev/null; true").stdout
    assert left == ""  # the build secrets' mount point stays, empty
    history = podman("history", "--no-trunc", "--format={{.CreatedBy}}", image).stdout
    build_args = set(re.findall(r"\b([A-Z_]+)=", " ".join(re.findall(r"^\|\d+ (.*?) /bin/sh", history, re.M))))
    assert build_args <= {"BASE_IMAGE", "SLOT_UID_BASE", "TOOLSERVER_EXTRAS", "RUNTIME_TORCH", "LANGUAGES"}, build_args
    assert "BEGIN CERTIFICATE" not in history and "index-url" not in history


# --- compose's service, as it is ----------------------------------------------------

def test_compose_service_serves_with_every_self_test_check_passing(server, client):
    info = client.server_info()
    assert info.serving and info.sandbox_verified and not info.insecure and not info.reason
    assert [check.name for check in info.checks if not check.ok] == []
    names = {check.name for check in info.checks}
    assert {"slot_scratch", "slot_processes_killed", "starts", "non_root", "seccomp", "no_new_privs",
            "no_capabilities", "no_network", "pid_namespace", "own_namespaces", "scratch_capped",
            "read_only_elsewhere", "private_tmp", "only_own_places_writable", "host_secrets_hidden", "nothing_survives_a_call",
            "import_guard_warm[guarded]", "import_guard_scientific[strict]"} <= names
    print(f"SERVING {server.ready_s:.1f} s after podman run, {len(info.checks)} checks passed")


def test_compose_healthcheck_command_passes(server):
    """podman schedules health checks only under systemd: the check is run here by hand."""
    done = podman("healthcheck", "run", server.name, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_outcome(client, jail_client):
    ok = client.run_python("import os, sympy\nprint(sympy.factorint(360))\nos.getuid()")
    assert ok.outcome == pb.OK and ok.stdout == "{2: 3, 3: 2, 5: 1}\n"
    assert SLOT_UID_BASE <= int(ok.python.value) < SLOT_UID_BASE + Settings().sandbox.slots
    error = client.run_python("1 / 0")
    assert error.outcome == pb.ERROR and error.error == "ZeroDivisionError: division by zero"
    assert client.run_python("while True:\n    pass", timeout_ms=500).outcome == pb.TIMEOUT
    assert client.run_python("b = bytearray(2 * 1024**3)", memory_mb=128).outcome == pb.MEMORY_LIMIT
    stack = client.run_python("import ctypes, pandas, sklearn.linear_model, lightgbm, cv2, matplotlib.pyplot\n"
                              "print(pandas.DataFrame({'a': [1, 2]}).a.sum())")
    assert stack.outcome == pb.OK and stack.stdout == "3\n", stack
    crashed = jail_client.run_python("import ctypes\nctypes.string_at(0)")
    assert crashed.outcome == pb.CRASHED and "SIGSEGV" in crashed.error


def test_a_session_keeps_its_state(client):
    session = client.open_session()
    try:
        assert client.run_python("x = 41", session_id=session.session_id).outcome == pb.OK
        assert client.run_python("x + 1", session_id=session.session_id).python.value == "42"
    finally:
        client.close_session(session.session_id)


def test_search_the_default_index(client):
    response = client.execute(pb.ExecuteRequest(search=pb.SearchCall(query="prime factorization of an integer")))
    assert response.outcome == pb.OK and "sympy.factorint" in [hit.id for hit in response.search.hits]


def test_toolserver_call_inside_the_container_runs_as_a_slot_user(server):
    done = server.exec("/opt/toolserver/venv/bin/toolserver", "call", "python", "import os; print(1 + 1, os.getuid())")
    assert done.returncode == 0, done.stdout + done.stderr
    two, uid = done.stdout.split()
    assert two == "2" and SLOT_UID_BASE <= int(uid) < SLOT_UID_BASE + Settings().sandbox.slots


def test_sigterm_drains_the_call_in_flight_then_stops(image):
    service = compose_service()
    grace = int(service["stop_grace_period"].rstrip("s"))
    container = ServerContainer("drain", service)
    try:
        assert container.health() == SERVING
        results: dict[str, pb.ExecuteResponse] = {}
        with container.client() as c:
            call = threading.Thread(target=lambda: results.__setitem__("call", c.run_python(
                "import time\ntime.sleep(4)\nprint('finished')", timeout_ms=20000)))
            call.start()
            time.sleep(1.0)
            started = time.monotonic()
            stop = threading.Thread(target=container.stop, args=(grace,))
            stop.start()
            deadline = time.monotonic() + 5
            while container.health() != NOT_SERVING and time.monotonic() < deadline:
                time.sleep(0.1)
            assert container.health() == NOT_SERVING
            with pytest.raises(Unavailable):
                c.run_python("1 + 1")
            call.join(30)
            stop.join(grace + 30)
        stopped_after = time.monotonic() - started
        assert results["call"].outcome == pb.OK and results["call"].stdout == "finished\n"
        assert stopped_after < grace, "podman stop had to SIGKILL: the server did not stop by itself"
        assert container.exit_code() == 0, container.logs()[-2000:]
        logs = container.logs()
        assert "draining: 1 calls in flight" in logs and "stopped" in logs
        print(f"drained and stopped {stopped_after:.1f} s after SIGTERM")
    finally:
        container.remove()


# --- what happens without each piece of the security context --------------------------

def without_capability(name: str):
    def change(service: dict) -> dict:
        assert name in service["cap_add"]
        return {**service, "cap_add": [cap for cap in service["cap_add"] if cap != name]}
    return change


def with_environment(**values: str):
    def change(service: dict) -> dict:
        return {**service, "environment": {**service["environment"], **values}}
    return change


def with_security_opt(option: str):
    def change(service: dict) -> dict:
        return {**service, "security_opt": [*service["security_opt"], option]}
    return change


def writable_root(*extra_caps: str):
    def change(service: dict) -> dict:
        kept = {key: value for key, value in service.items() if key not in ("read_only", "tmpfs")}
        return {**kept, "cap_add": [*service["cap_add"], *extra_caps]}
    return change


def with_tmpfs(*paths: str):
    def change(service: dict) -> dict:
        assert service["read_only"]
        return {**service, "tmpfs": list(paths)}
    return change


# What breaks, as measured: the first self-test check that fails. Every capability of
# compose's list (the Deployment's too) is here: without any one the server refuses.
REFUSALS = {
    "no SYS_ADMIN": (without_capability("SYS_ADMIN"), "starts", "clone"),
    "no NET_ADMIN": (without_capability("NET_ADMIN"), "starts", "net_if_up"),
    "no SETUID": (without_capability("SETUID"), "slot_processes_killed", "CAP_SETUID"),
    "no SETGID": (without_capability("SETGID"), "slot_processes_killed", "CAP_SETUID"),
    "no SETPCAP": (without_capability("SETPCAP"), "starts", "PR_CAPBSET_DROP"),
    "no KILL": (without_capability("KILL"), "slot_processes_killed", "CAP_KILL"),
    "no CHOWN": (without_capability("CHOWN"), "slot_scratch", "Operation not permitted"),
    "no DAC_OVERRIDE": (without_capability("DAC_OVERRIDE"), "starts", "Permission denied"),
    "no FOWNER": (without_capability("FOWNER"), "slot_scratch", "Operation not permitted"),
    "no MKNOD": (without_capability("MKNOD"), "starts", "/dev/zero"),
    "no SYS_CHROOT": (without_capability("SYS_CHROOT"), "starts", "nsenter"),
    # podman sets container=podman, which firejail 0.9.72 does not take for a container:
    # it then runs code UNSANDBOXED, and the self-test sees it.
    "container=podman": (with_environment(container="podman"), "own_namespaces", "shared with the host"),
    # no-new-privileges disables firejail's setuid bit: unsandboxed again.
    "no-new-privileges": (with_security_opt("no-new-privileges"), "own_namespaces", "shared with the host"),
    "read-only root, no tmpfs": (with_tmpfs(), "slot_scratch", "Read-only file system"),
    "read-only root, no /run tmpfs": (with_tmpfs("/var/lib/toolserver/scratch"), "starts", "/run/firejail"),
    # A writable root: firejail then makes no user namespace for the jail, and the server
    # cannot enter the jail's mount namespace (another uid's) to cap its home.
    "a writable root": (writable_root(), "scratch_capped", "cap 257 MB"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_the_server_refuses_to_serve_without(image, case):
    change, check, detail = REFUSALS[case]
    container = ServerContainer("refuse-" + re.sub(r"\W+", "-", case).strip("-").lower(), change(compose_service()))
    try:
        assert container.health() == NOT_SERVING
        with container.client() as c:
            info = c.server_info()
            with pytest.raises(Unavailable):
                c.run_python("1 + 1")
        failed = {c.name: c.detail for c in info.checks if not c.ok}
        assert not info.serving and info.reason.startswith("sandbox self-test failed: "), info.reason
        assert check in failed and detail in failed[check], failed
        assert container.running(), "the server must refuse and keep answering, not exit"
        print(f"{case}: NOT_SERVING after {container.ready_s:.1f} s: {info.reason[:300]}")
    finally:
        container.remove()


def with_runtime_default_seccomp(service: dict) -> dict:
    return {**service, "security_opt": [opt for opt in service["security_opt"] if not opt.startswith("seccomp=")]}


# Variants that also serve, as measured here (deploy/README.md names them).
ALTERNATIVES = {
    # A writable root works when the server may also enter other uids' namespaces.
    "a writable root with SYS_PTRACE": writable_root("SYS_PTRACE"),
    # podman 4.3's default seccomp profile admits mount, unshare and setns with SYS_ADMIN.
    "podman's default seccomp profile": with_runtime_default_seccomp,
}


@pytest.mark.parametrize("case", list(ALTERNATIVES))
def test_the_server_also_serves_with(image, case):
    container = ServerContainer("also-" + re.sub(r"\W+", "-", case).strip("-").lower(), ALTERNATIVES[case](compose_service()))
    try:
        assert container.health() == SERVING, container.logs()[-3000:]
        with container.client() as c:
            assert c.run_python("1 + 1").python.value == "2"
    finally:
        container.remove()
