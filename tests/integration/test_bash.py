"""The bash tool on a real server: scripts run by bash in the jail, over gRPC and
SandboxFusion's /run_code."""

from __future__ import annotations

import json

import pytest
import requests

from tests.conftest import RunningServer, free_port
from toolcontract.v1 import toolserver_pb2 as pb


@pytest.fixture(scope="module")
def bash_server(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("bash"), workers=1, extra_slots=1, args=("--http-port", str(port)),
                            config="[lean]\nenabled = false\n[cpp]\nenabled = false\n")
    with running.client() as client:
        yield client, f"http://127.0.0.1:{port}"
    running.stop()


def run(client, script: str, stdin: str = "", timeout_ms: int = 5000) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(bash=pb.BashCall(script=script, stdin=stdin),
                                            limits=pb.Limits(timeout_ms=timeout_ms)))


def test_a_script_runs_with_the_usual_tools_and_its_stdin(bash_server):
    client, _ = bash_server
    response = run(client, 'read name; echo "hi $name" | tr a-z A-Z; seq 3 | paste -sd+ | bc; ls', stdin="ada\n")
    assert response.outcome == pb.OK and response.stdout == "HI ADA\n6\nmain.sh\n" and response.bash.exit_code == 0


def test_an_exit_status_and_a_signal_are_the_scripts_errors(bash_server):
    client, _ = bash_server
    failed = run(client, "echo partial; exit 4")
    assert failed.outcome == pb.ERROR and failed.bash.exit_code == 4 and failed.stdout == "partial\n"
    killed = run(client, "kill -SEGV $$")
    assert killed.outcome == pb.ERROR and "SIGSEGV" in killed.error and killed.bash.exit_code == -11


def test_time_and_network_are_the_jails(bash_server):
    client, _ = bash_server
    slow = run(client, "sleep 30", timeout_ms=1000)
    assert slow.outcome == pb.TIMEOUT
    offline = run(client, "exec 3<>/dev/tcp/1.1.1.1/80 && echo connected || echo refused")
    assert "connected" not in offline.stdout


def test_the_tool_is_listed_and_reached_by_json_and_run_code(bash_server):
    client, http = bash_server
    spec = next(spec for spec in client.list_tools() if spec.name == "bash")
    assert json.loads(spec.parameters)["required"] == ["script"]
    by_json = client.execute(pb.ExecuteRequest(json=pb.JsonCall(tool="bash", arguments='{"script": "echo $((6*7))"}')))
    assert by_json.stdout == "42\n"
    body = requests.post(f"{http}/run_code", json={"code": "echo out; echo err >&2; exit 2", "language": "bash"},
                         timeout=60).json()
    assert body["status"] == "Failed" and body["run_result"]["return_code"] == 2
    assert (body["run_result"]["stdout"], body["run_result"]["stderr"]) == ("out\n", "err\n")
