"""The server image, built with deploy/build-local.sh and run with podman as compose.yaml
says: the compose service's security context, resources, tmpfs mounts and command,
translated to `podman run` one field at a time (a field the translation does not know
fails the test rather than being dropped). Ports are published on the host's loopback
only, at free ports. Needs root and podman (`deploy/build-local.sh --tools` installs it;
scripts/test.sh does); skipped without them.
"""

from __future__ import annotations

import toolserver  # noqa: F401  (first: turns gRPC fork support off before grpc loads)

# isort: split
import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import grpc  # noqa: E402
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from tests.conftest import ROOT, free_port  # noqa: E402
from toolclient.client import ToolClient  # noqa: E402

COMPOSE = ROOT / "deploy" / "compose.yaml"
BUILD = ROOT / "deploy" / "build-local.sh"
STATE = Path(os.environ.get("TOOLSERVER_BUILD_STATE", "/var/lib/toolserver-build"))
IMAGE = os.environ.get("TOOLSERVER_IMAGE", "localhost/toolserver:local")
GRPC_PORT = 50051
# compose.yaml's variables as an operator on this machine sets them: no more CPUs than it has.
COMPOSE_ENV = {"TOOLSERVER_CPUS": str(min(4, os.cpu_count() or 1))}
# Fields of a compose service that `podman run` is not given: the image is built by
# build-local.sh; ports are published at free loopback ports; the tests stop and restart
# containers themselves; profiles choose services.
NOT_RUN_FIELDS = {"build", "image", "ports", "restart", "stop_grace_period", "profiles", "command"}


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(STATE / "containers.conf"),
            "TOOLSERVER_BUILD_STATE": str(STATE), "TOOLSERVER_IMAGE": IMAGE}


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=podman_env())
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """compose's ${NAME:-default} and ${NAME}, resolved against env."""
    if not isinstance(value, str):
        return value
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1], m[2] or ""), value)


def compose_service(name: str = "toolserver") -> dict[str, Any]:
    """The service as compose reads it (YAML merge keys applied, variables resolved)."""
    service = yaml.safe_load(COMPOSE.read_text())["services"][name]
    env = {**COMPOSE_ENV, **{k: v for k, v in os.environ.items() if k.startswith("TOOLSERVER_")}}
    return {key: interpolate(value, env) for key, value in service.items()}


def run_args(service: dict[str, Any]) -> list[str]:
    """`podman run` arguments for the compose service's fields (Docker Engine's meaning:
    read_only adds no tmpfs of its own)."""
    args: list[str] = []
    for key, value in service.items():
        if key == "cap_drop":
            args += [f"--cap-drop={cap}" for cap in value]
        elif key == "cap_add":
            args += [f"--cap-add={cap}" for cap in value]
        elif key == "security_opt":
            args += [f"--security-opt={option}" for option in value]
        elif key == "environment":
            items = value.items() if isinstance(value, dict) else (item.split("=", 1) for item in value)
            args += [f"--env={name}={setting}" for name, setting in items]
        elif key == "read_only":
            args += ["--read-only", "--read-only-tmpfs=false"] if value else []
        elif key == "tmpfs":
            args += [f"--tmpfs={path}" for path in ([value] if isinstance(value, str) else value)]
        elif key == "mem_limit":
            args.append(f"--memory={value}")
        elif key == "cpus":
            args.append(f"--cpus={value}")
        elif key == "init":
            args += ["--init"] if value else []
        elif key == "healthcheck":
            test = value["test"]
            assert test[0] == "CMD", test  # podman 4.3 splits a JSON array that starts with CMD on spaces
            args += [f"--health-cmd={json.dumps(test[1:])}", f"--health-interval={value['interval']}",
                     f"--health-timeout={value['timeout']}", f"--health-start-period={value['start_period']}",
                     f"--health-retries={value['retries']}"]
        elif key not in NOT_RUN_FIELDS:
            raise AssertionError(f"compose.yaml's {key!r} is not translated to podman run: add it here")
    return args


class ServerContainer:
    """One server container, started detached with a loopback-published gRPC port."""

    def __init__(self, label: str, service: dict[str, Any], *, command: list[str] | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.name = f"tstest-{os.getpid()}-{label}"
        self.port = GRPC_PORT  # the server's own port, inside the container
        self.host_port = free_port()
        self.target = f"127.0.0.1:{self.host_port}"
        self.service = service
        self.ready_s: float | None = None  # seconds from `podman run` to the first health answer
        podman("rm", "--force", "--ignore", self.name)
        self.started = time.monotonic()
        podman("run", "--detach", f"--name={self.name}", f"--publish=127.0.0.1:{self.host_port}:{GRPC_PORT}",
               *run_args(service), *extra_args, IMAGE, *(command or service["command"]))

    def health(self, timeout_s: float = 120) -> int:
        """The gRPC health status once the server answers (it answers after its
        self-test and tools are up); raises if the container exits first."""
        deadline = time.monotonic() + timeout_s
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                try:
                    status = stub.Check(health_pb2.HealthCheckRequest(), timeout=2).status
                    self.ready_s = self.ready_s or time.monotonic() - self.started
                    return status
                except grpc.RpcError:
                    if not self.running():
                        raise AssertionError(f"{self.name} exited ({self.exit_code()}): {self.logs()[-3000:]}")
                    time.sleep(0.2)
        raise AssertionError(f"{self.name} did not answer health checks in {timeout_s} s: {self.logs()[-3000:]}")

    def running(self) -> bool:
        return podman("inspect", "--format={{.State.Running}}", self.name, check=False).stdout.strip() == "true"

    def exit_code(self) -> int:
        return int(podman("inspect", "--format={{.State.ExitCode}}", self.name).stdout.strip())

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return done.stdout + done.stderr

    def exec(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return podman("exec", self.name, *argv, timeout=timeout, check=False)

    def client(self) -> ToolClient:
        return ToolClient(self.target, timeout_s=60)

    def stop(self, grace_s: float) -> None:
        podman("stop", f"--time={int(grace_s)}", self.name, timeout=grace_s + 30)

    def remove(self) -> None:
        podman("rm", "--force", "--ignore", self.name, timeout=60)


def site_config(**sections: dict[str, Any]) -> str:
    """A server config: the image's own settings (every address, the image's hidden
    paths) plus the given sections."""
    base: dict[str, dict[str, Any]] = {"server": {"host": "0.0.0.0", "port": GRPC_PORT},
                                       "metrics": {"host": "0.0.0.0", "port": 9464},
                                       "sandbox": {"hidden_paths": ["/etc/toolserver"]}}
    for name, values in sections.items():
        base.setdefault(name, {}).update(values)
    return "".join(f"[{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in values.items()) + "\n"
                   for name, values in base.items())


def with_site_config(service: dict[str, Any], directory: Path, text: str) -> tuple[list[str], tuple[str, ...]]:
    """The service's command pointed at a config file mounted read-only from directory,
    as deploy/README.md shows for a policy file."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "toolserver.toml").write_text(text)
    command = list(service["command"])
    command[command.index("--config") + 1] = "/etc/toolserver/site/toolserver.toml"
    return command, (f"--volume={directory}:/etc/toolserver/site:ro",)


def remove_stale_containers() -> None:
    """Containers of test runs that were killed: they would hold slot uids' process counts."""
    names = podman("ps", "--all", "--filter=name=^tstest-", "--format={{.Names}}").stdout.split()
    for name in names:
        pid = int(name.split("-")[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            podman("rm", "--force", "--ignore", name, timeout=60)


@pytest.fixture(scope="session")
def image(tmp_path_factory) -> str:
    """The image, built (or found up to date in podman's layer cache) by build-local.sh."""
    if os.geteuid() != 0:
        pytest.skip("container tests need root (rootful podman)")
    if shutil.which("podman") is None or not (STATE / "containers.conf").exists():
        pytest.skip("podman is not set up: run deploy/build-local.sh --tools (scripts/test.sh does)")
    remove_stale_containers()
    log = tmp_path_factory.mktemp("build") / "build.log"
    with log.open("w") as out:
        done = subprocess.run(["bash", str(BUILD)], stdout=out, stderr=subprocess.STDOUT, env=podman_env(),
                              timeout=1200)
    text = log.read_text()
    assert done.returncode == 0, f"deploy/build-local.sh failed ({done.returncode}): {text[-4000:]}"
    print(next((line for line in reversed(text.splitlines()) if line.startswith("build-local: built")), ""))
    return IMAGE


@contextlib.contextmanager
def serving(container: ServerContainer) -> Iterator[ServerContainer]:
    """container once it reports SERVING; removed on the way out."""
    try:
        assert container.health() == health_pb2.HealthCheckResponse.SERVING, container.logs()[-3000:]
        yield container
    finally:
        container.remove()


@pytest.fixture(scope="session")
def server(image):
    """compose.yaml's toolserver service as it is: its security context, its command."""
    with serving(ServerContainer("compose", compose_service())) as container:
        yield container


@pytest.fixture(scope="session")
def jail_server(image, tmp_path_factory):
    """The same service with no Python-level guard at all (the default profile has none;
    no slim workers, so no reroute hook either): what calls meet is the jail alone, on
    slots 32.. so that its uids' process counts are not the other's."""
    service = compose_service()
    command, mount = with_site_config(service, tmp_path_factory.mktemp("jail-site"), site_config(
        python={"workers": 2, "slim": False, "scientific_workers": 1}, sessions={"max_sessions": 1},
        sandbox={"first_slot": 32, "slots": 8}))
    with serving(ServerContainer("jail", service, command=command, extra_args=mount)) as container:
        yield container


@pytest.fixture(scope="session")
def client(server):
    with server.client() as c:
        yield c


@pytest.fixture(scope="session")
def jail_client(jail_server):
    with jail_server.client() as c:
        yield c
