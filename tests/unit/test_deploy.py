"""The deployment files under deploy/: every YAML file parses, and the invariants that
keep a deployed server correct hold (gRPC probes, headless Service, grace period above
the drain timeout, resources, HPA target, network policy, settings that load, what the
image installs, compose and the Deployment giving the same security context), and the
manifests validate against the Kubernetes API's own schemas (kubernetes-validate,
offline, strict). No container engine or cluster is needed: the files are read, and the
settings and policies they carry are loaded by the server's own loaders. The image is
built and run for real in tests/container/ (marker `container`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from toolserver.policy import validate_against_settings
from toolserver.server import LOOPBACK_HOSTS, load_caller_policies
from toolserver.settings import Settings, load_policies, load_settings

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
GRPC_PORT = 50051
METRICS_PORT = 9464
CONTAINER_CONFIG_DIR = "/etc/toolserver/config/"
SCIENTIFIC_ZYGOTE_MIB = 512  # a scientific zygote's heap (the data stack imported), beside its calls' memory


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def manifests() -> list[dict]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in documents(path)]


def one(kind: str, name: str | None = None) -> dict:
    found = [doc for doc in manifests() if doc["kind"] == kind
             and (name is None or doc["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def deployment() -> dict:
    return one("Deployment", "toolserver")


def container() -> dict:
    (spec,) = deployment()["spec"]["template"]["spec"]["containers"]
    return spec


def configmap_settings(tmp_path: Path, key: str = "toolserver.toml", policy_file: str | None = None):
    text = one("ConfigMap", "toolserver-config")["data"][key]
    if policy_file is not None:
        text = re.sub(r'policy_file = "[^"]*"', f'policy_file = "{policy_file}"', text)
    path = tmp_path / key
    path.write_text(text)
    return load_settings(path)


def deployed_config_key() -> str:
    args = container()["args"]
    config = args[args.index("--config") + 1]
    assert config.startswith(CONTAINER_CONFIG_DIR), config
    return config.removeprefix(CONTAINER_CONFIG_DIR)


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.yaml")), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_file_parses(path):
    docs = documents(path)
    assert docs
    for doc in docs:
        assert isinstance(doc, dict)
        if path.is_relative_to(K8S):
            assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"]
            if doc["kind"] != "Namespace":
                assert doc["metadata"]["namespace"] == "toolserver"


def test_probes_use_grpc_health_on_the_grpc_port():
    spec = container()
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert spec[probe]["grpc"]["port"] == GRPC_PORT, probe
        assert set(spec[probe]) & {"httpGet", "tcpSocket", "exec"} == set(), probe
    ports = {port["containerPort"] for port in spec["ports"]}
    assert ports == {GRPC_PORT, METRICS_PORT}


def test_liveness_outlasts_a_drain(tmp_path):
    drain = configmap_settings(tmp_path, deployed_config_key()).server.drain_timeout_s
    live = container()["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] > drain


def test_service_is_headless_and_exposes_grpc():
    service = one("Service", "toolserver")["spec"]
    assert service["clusterIP"] == "None"
    assert [port["port"] for port in service["ports"]] == [GRPC_PORT]
    assert service["ports"][0]["targetPort"] in (GRPC_PORT, "grpc")
    assert service["selector"] == deployment()["spec"]["template"]["metadata"]["labels"]
    assert not service.get("publishNotReadyAddresses", False)
    metrics = one("Service", "toolserver-metrics")["spec"]
    assert [port["port"] for port in metrics["ports"]] == [METRICS_PORT]


def test_termination_grace_exceeds_the_drain_timeout(tmp_path):
    grace = deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    for key in ("toolserver.toml", "toolserver-lean.toml"):
        assert grace > configmap_settings(tmp_path, key).server.drain_timeout_s


def test_resources_have_requests_and_limits(tmp_path):
    resources = container()["resources"]
    for kind in ("cpu", "memory"):
        assert resources["requests"][kind] and resources["limits"][kind], kind
    settings = configmap_settings(tmp_path, deployed_config_key())
    limit_mib = parse_mib(resources["limits"]["memory"])
    per_worker = settings.limits.memory_mb + settings.limits.max_scratch_mb
    python = settings.python
    workers = python.warm_count() + python.slim_count() + python.scientific_count()
    # fixed counts: auto would follow the node's CPUs
    assert python.workers and python.slim_workers and python.scientific_workers
    # scratch is RAM; a scientific zygote's own heap; plus the server
    assert limit_mib >= workers * per_worker + python.scientific_count() * SCIENTIFIC_ZYGOTE_MIB + 512
    assert parse_cpu(resources["requests"]["cpu"]) >= settings.python.warm_count()


def parse_mib(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 ** 2}
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i)", quantity).groups()
    return float(number) * units[unit]


def parse_cpu(quantity: str | int) -> float:
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def test_security_context_gives_firejail_what_it_needs_and_no_more():
    pod = deployment()["spec"]["template"]["spec"]
    context = container()["securityContext"]
    assert context["privileged"] is False
    assert context["allowPrivilegeEscalation"] is True  # firejail is setuid root
    assert context["runAsUser"] == 0
    assert context["capabilities"]["drop"] == ["ALL"]
    added = set(context["capabilities"]["add"])
    assert {"SYS_ADMIN", "NET_ADMIN", "SETUID", "SETGID", "SETPCAP", "KILL"} <= added
    assert added & {"NET_RAW", "SYS_PTRACE", "SYS_MODULE", "SYS_RAWIO", "BPF", "PERFMON"} == set()
    assert context["seccompProfile"]["type"] == "Unconfined"
    assert context["appArmorProfile"]["type"] == "Unconfined"
    assert {"name": "container", "value": "docker"} in container()["env"]
    assert pod["automountServiceAccountToken"] is False
    for shared in ("hostPID", "hostIPC", "hostNetwork", "shareProcessNamespace"):
        assert not pod.get(shared, False), shared


def test_hpa_targets_the_deployment():
    hpa = one("HorizontalPodAutoscaler", "toolserver")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == ("apps/v1", "Deployment", "toolserver")
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert "replicas" not in deployment()["spec"]  # the HPA owns the count


def test_network_policy_admits_grpc_and_metrics_only():
    policy = one("NetworkPolicy", "toolserver")["spec"]
    assert policy["podSelector"]["matchLabels"] == deployment()["spec"]["selector"]["matchLabels"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    ports = set()
    for rule in policy["ingress"]:
        assert rule.get("ports"), "a rule without ports admits every port"
        assert rule.get("from"), "a rule without sources admits every source"
        for port in rule["ports"]:
            assert port.get("protocol", "TCP") == "TCP" and "endPort" not in port
            ports.add(port["port"])
    assert ports == {GRPC_PORT, METRICS_PORT}
    assert not policy.get("egress")


@pytest.mark.parametrize("key", ["toolserver.toml", "toolserver-lean.toml"])
def test_configmap_settings_load_and_bind_every_address_with_tokens(tmp_path, key):
    settings = configmap_settings(tmp_path, key)
    assert settings.server.host == "0.0.0.0" and settings.server.port == GRPC_PORT
    assert settings.metrics.host == "0.0.0.0" and settings.metrics.port == METRICS_PORT
    assert settings.metrics.enabled
    assert not settings.auth.allow_open_bind
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    assert Path(settings.auth.policy_file).parent == Path(mounts["policy"])
    assert Path(mounts["config"]) == Path(CONTAINER_CONFIG_DIR)
    assert any(Path(mounts["policy"]).is_relative_to(hidden) for hidden in settings.sandbox.hidden_paths)
    assert settings.sandbox.first_slot == 0 and not settings.sandbox.insecure_no_sandbox
    assert settings.sandbox.self_test


def test_the_deployment_runs_the_plain_config():
    assert deployed_config_key() == "toolserver.toml"
    assert container()["args"][:2] == ["/opt/toolserver/venv/bin/toolserver", "serve"]
    assert "--allow-open-bind" not in container()["args"]
    assert "--insecure-no-sandbox" not in container()["args"]


def test_example_policies_load_and_let_the_server_listen_on_every_address(tmp_path):
    policies = tmp_path / "policies.toml"
    policies.write_text(one("Secret", "toolserver-policies")["stringData"]["policies.toml"])
    loaded = load_policies(policies)
    assert not loaded.open
    settings = configmap_settings(tmp_path, "toolserver.toml", policy_file=str(policies))
    validate_against_settings(loaded, settings)
    assert settings.server.host not in LOOPBACK_HOSTS
    assert not load_caller_policies(settings).open  # the bind rule is satisfied by tokens
    secret = deployment()["spec"]["template"]["spec"]["volumes"]
    (volume,) = [v for v in secret if "secret" in v]
    assert volume["secret"]["secretName"] == "toolserver-policies"
    assert volume["secret"]["defaultMode"] == 0o400


def dockerfile_instructions(path: Path) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines()
                                             if not line.lstrip().startswith("#")))
    return [line.strip() for line in joined.splitlines() if line.strip()]


def test_dockerfile_installs_firejail_sets_up_the_sandbox_and_builds_the_index():
    instructions = dockerfile_instructions(DEPLOY / "Dockerfile")
    runs = " ".join(line for line in instructions if line.startswith("RUN "))
    assert re.search(r"apt-get install [^&]*\bfirejail\b", runs)
    assert re.search(r"apt-get install [^&]*\bpython3-venv\b", runs)
    assert "python3 -m venv /opt/toolserver/venv" in runs
    assert re.search(r"/opt/toolserver/venv/bin/pip install [^&]*-e ", runs)  # the project tree stays hidden
    assert "toolserver setup-sandbox" in runs
    assert "toolserver index default" in runs
    assert runs.index("toolserver setup-sandbox") > runs.index("pip install")
    env = " ".join(line for line in instructions if line.startswith("ENV "))
    assert re.search(r"\bcontainer=docker\b", env)
    assert any(line.startswith("EXPOSE ") and "50051" in line.split() for line in instructions)
    cmd = next(line for line in instructions if line.startswith("CMD "))
    assert "serve" in cmd and "--allow-open-bind" not in cmd


def test_dockerfile_default_settings_load(tmp_path):
    text = (DEPLOY / "Dockerfile").read_text()
    block = re.search(r"printf '%s\\n' \\\n(.*?)> /etc/toolserver/toolserver.toml", text, re.S).group(1)
    lines = re.findall(r"^\s*'([^']*)' \\$", block, re.M)
    config = tmp_path / "image.toml"
    config.write_text("\n".join(lines) + "\n")
    settings = load_settings(config)
    assert settings.server.host == "0.0.0.0" and settings.metrics.host == "0.0.0.0"
    assert "/etc/toolserver" in settings.sandbox.hidden_paths


def test_compose_runs_the_image_with_what_firejail_needs():
    compose = documents(DEPLOY / "compose.yaml")[0]
    for name, service in compose["services"].items():
        assert service["cap_drop"] == ["ALL"], name  # nothing of the runtime's default set
        assert {"SYS_ADMIN", "NET_ADMIN"} <= set(service["cap_add"]), name
        if not service["read_only"]:  # the server enters other uids' jails to cap their homes
            assert "SYS_PTRACE" in service["cap_add"], name
        assert "seccomp=unconfined" in service["security_opt"], name
        assert "apparmor=unconfined" in service["security_opt"], name
        assert service["environment"]["container"] == "docker", name
        assert parse_seconds(service["stop_grace_period"]) > load_settings().server.drain_timeout_s
        for port in service["ports"]:
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert compose["services"]["toolserver"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert compose["services"]["toolserver-lean"]["build"]["dockerfile"] == "deploy/lean/Dockerfile"


def parse_seconds(value: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(s|m)", value).groups()
    return float(number) * (60 if unit == "m" else 1)


def compose_service(name: str = "toolserver") -> dict:
    return documents(DEPLOY / "compose.yaml")[0]["services"][name]


def test_compose_and_the_deployment_give_the_same_security_context():
    context = container()["securityContext"]
    service = compose_service()
    assert sorted(service["cap_add"]) == sorted(context["capabilities"]["add"])
    assert service["environment"]["container"] == "docker"
    assert service["read_only"] is True and context["readOnlyRootFilesystem"] is True
    # What the server and firejail write: tmpfs in compose, memory-backed emptyDirs in the pod.
    volumes = {v["name"]: v for v in deployment()["spec"]["template"]["spec"]["volumes"]}
    written = {m["mountPath"] for m in container()["volumeMounts"] if "emptyDir" in volumes[m["name"]]}
    assert written == set(service["tmpfs"]) == {"/run", Settings().sandbox.scratch_root}
    for mount in container()["volumeMounts"]:
        if "emptyDir" in volumes[mount["name"]]:
            assert volumes[mount["name"]]["emptyDir"]["medium"] == "Memory"


def test_compose_resources_are_variables_with_defaults():
    """Docker Engine refuses a container asking for more CPUs than the machine has."""
    for name, service in documents(DEPLOY / "compose.yaml")[0]["services"].items():
        for key in ("cpus", "mem_limit"):
            assert re.fullmatch(r"\$\{TOOLSERVER_\w+:-[0-9]+g?\}", str(service[key])), (name, key, service[key])
    default_cpus = re.fullmatch(r"\$\{\w+:-(\d+)\}", compose_service()["cpus"]).group(1)
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    warm = int(re.search(r"'workers = (\d+)'", dockerfile).group(1))
    slim = int(re.search(r"'slim_workers = (\d+)'", dockerfile).group(1))
    scientific = int(re.search(r"'scientific_workers = (\d+)'", dockerfile).group(1))
    assert int(default_cpus) >= warm
    default_gib = int(re.fullmatch(r"\$\{\w+:-(\d+)g\}", compose_service()["mem_limit"]).group(1))
    limits = Settings().limits
    assert default_gib * 1024 >= ((warm + slim + scientific) * (limits.memory_mb + limits.max_scratch_mb)
                                  + scientific * SCIENTIFIC_ZYGOTE_MIB + 512)


@pytest.mark.parametrize("path", [DEPLOY / "Dockerfile", DEPLOY / "lean" / "Dockerfile"],
                         ids=lambda p: str(p.relative_to(DEPLOY)))
def test_dockerfiles_take_their_base_image_as_an_argument(path):
    instructions = dockerfile_instructions(path)
    froms = [line for line in instructions if line.startswith("FROM ")]
    assert froms == ["FROM ${BASE_IMAGE}"]
    assert "ARG BASE_IMAGE=debian:12-slim" in instructions[:instructions.index(froms[0])]


def test_dockerfile_makes_a_slot_user_for_every_slot_outside_system_uids():
    instructions = dockerfile_instructions(DEPLOY / "Dockerfile")
    runs = " ".join(line for line in instructions if line.startswith("RUN "))
    assert re.search(r"toolserver setup-sandbox --config /etc/toolserver/toolserver.toml\s+"
                     r"--first-uid \"\$SLOT_UID_BASE\"", runs)
    assert "useradd" not in runs and not any(line.startswith("ARG SLOTS") for line in instructions)
    settings_written = runs.index("> /etc/toolserver/toolserver.toml")
    assert settings_written < runs.index("toolserver setup-sandbox")  # the users follow the image's settings
    (base,) = [int(line.split("=")[1]) for line in instructions if line.startswith("ARG SLOT_UID_BASE=")]
    assert 60000 < base and base + Settings().sandbox.slots <= 65533  # above system uids, below nobody


def test_pip_settings_reach_the_build_as_secrets_never_as_arguments():
    instructions = dockerfile_instructions(DEPLOY / "Dockerfile")
    args = [line.split()[1].split("=")[0] for line in instructions if line.startswith("ARG ")]
    assert set(args) == {"BASE_IMAGE", "SLOT_UID_BASE", "TOOLSERVER_EXTRAS", "RUNTIME_TORCH", "LANGUAGES"}
    installs = [line for line in instructions if "pip install" in line]
    assert len(installs) == 2  # the server's environment, the calls' runtime
    for install in installs:
        assert "--mount=type=secret,id=pip.conf" in install and "--mount=type=secret,id=pip-ca.pem" in install
        assert "PIP_CONFIG_FILE=/run/secrets/pip.conf" in install and "PIP_CERT=/run/secrets/pip-ca.pem" in install


def test_the_image_installs_the_toolchains_its_languages_argument_names_as_setup_does():
    instructions = dockerfile_instructions(DEPLOY / "Dockerfile")
    assert 'ARG LANGUAGES=""' in instructions  # none by default: the image the tests build stays small
    install = next(line for line in instructions if "toolserver.program.toolchains" in line)
    assert 'if [ -n "$LANGUAGES" ]' in install and "--all" in install
    assert "--mount=type=secret,id=pip-ca.pem" in install and "NODE_EXTRA_CA_CERTS=/run/secrets/pip-ca.pem" in install
    assert '"$VENV/bin/python" -m toolserver.program.toolchains' in (ROOT / "scripts" / "setup.sh").read_text()
    assert '--build-arg "LANGUAGES=${TOOLSERVER_IMAGE_LANGUAGES:-}"' in (DEPLOY / "build-local.sh").read_text()


def test_the_image_builds_the_calls_runtime_from_the_repositorys_requirements():
    instructions = dockerfile_instructions(DEPLOY / "Dockerfile")
    runs = " ".join(line for line in instructions if line.startswith("RUN"))
    assert "python3 -m venv /opt/toolserver/runtime" in runs
    assert "-r /opt/toolserver/runtime-requirements/requirements.txt" in runs
    copies = [line for line in instructions if line.startswith("COPY")]
    # The requirements alone, before the sources: a change of the sources keeps the runtime's layer cached.
    assert copies[0] == ("COPY sandbox/runtime/requirements.txt sandbox/runtime/torch.txt "
                         "/opt/toolserver/runtime-requirements/")
    assert copies[1] == "COPY . /opt/toolserver/src"
    assert Settings().python.interpreter == "/opt/toolserver/runtime/bin/python"
    script = (DEPLOY / "build-local.sh").read_text()
    assert "--secret \"id=pip.conf,src=" in script and "--build-arg PIP" not in script


def test_dockerignore_admits_only_the_package_sources():
    patterns = [line for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line and not line.startswith("#")]
    assert patterns[0] == "*"
    admitted = {line[1:].rstrip("/") for line in patterns if line.startswith("!")}
    packages = {name.rstrip("*") for name in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert admitted == {"pyproject.toml", "README.md", "proto"} | packages
    assert all((ROOT / path).exists() for path in admitted)


# The oldest Kubernetes the manifests support, as deploy/README.md states it.
OLDEST_KUBERNETES = re.search(r"Needs Kubernetes (1\.\d+) or later", (DEPLOY / "README.md").read_text()).group(1)


@pytest.mark.parametrize("version", [OLDEST_KUBERNETES, "latest"])
def test_manifests_validate_strictly_against_the_kubernetes_api(version):
    validate = pytest.importorskip("kubernetes_validate")
    from kubernetes_validate.utils import latest_version
    version = latest_version() if version == "latest" else version
    for doc in manifests():
        validate.validate(doc, version, strict=True)  # raises ValidationError, unknown fields included


def test_the_release_before_the_oldest_lacks_a_field_the_deployment_uses():
    validate = pytest.importorskip("kubernetes_validate")
    major, minor = OLDEST_KUBERNETES.split(".")
    with pytest.raises(validate.ValidationError, match="appArmorProfile"):
        validate.validate(deployment(), f"{major}.{int(minor) - 1}", strict=True)
