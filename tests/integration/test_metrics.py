"""Prometheus metrics of a real server, scraped over HTTP."""

from __future__ import annotations

import urllib.request

import pytest

from toolclient.client import InvalidArgument
from toolcontract.v1 import toolserver_pb2 as pb


def scrape(server) -> dict[str, float]:
    text = urllib.request.urlopen(server.metrics_url(), timeout=10).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_calls_refusals_and_pools_are_counted(server, client):
    before = scrape(server)
    ok_key = 'toolserver_calls_total{outcome="OK",tool="python"}'
    error_key = 'toolserver_calls_total{outcome="ERROR",tool="python"}'
    rejected_key = 'toolserver_rejected_calls_total{reason="INVALID_ARGUMENT"}'
    for _ in range(3):
        assert client.run_python("1 + 1").outcome == pb.OK
    assert client.run_python("1 / 0").outcome == pb.ERROR
    with pytest.raises(InvalidArgument):
        client.execute(pb.ExecuteRequest())
    after = scrape(server)
    assert after[ok_key] - before.get(ok_key, 0) >= 3
    assert after[error_key] - before.get(error_key, 0) >= 1
    assert after[rejected_key] - before.get(rejected_key, 0) >= 1
    assert after['toolserver_call_seconds_count{tool="python"}'] >= 4
    # 2 warm, 2 slim, 1 scientific
    assert after["toolserver_python_workers_idle"] + after["toolserver_python_workers_busy"] == 5
    assert "toolserver_sessions_open" in after and "toolserver_sandbox_restarts" in after


def test_calls_are_counted_by_the_worker_that_ran_them(server, client):
    """Code that needs only the standard library runs on a slim worker; a call that reaches
    for another module at run time is handed back to a warm one, and counted."""
    before = scrape(server)
    assert client.run_python("import math\nmath.factorial(5)").python.value == "120"
    assert client.run_python("import sympy\nsympy.factorint(12)").python.value == "{2: 2, 3: 1}"
    assert client.run_python("__import__('sym' + 'py').factorint(10)").python.value == "{2: 1, 5: 1}"
    after = scrape(server)
    assert after["toolserver_python_slim_calls"] - before["toolserver_python_slim_calls"] == 2
    assert after["toolserver_python_rerouted_calls"] - before["toolserver_python_rerouted_calls"] == 1


def test_json_logs_carry_request_ids(tmp_path):
    import json

    from tests.conftest import RunningServer

    server = RunningServer(tmp_path, workers=1,
                           config='[server]\nlog_format = "json"\nlog_level = "DEBUG"\n')
    try:
        with server.client() as client:
            client.execute(pb.ExecuteRequest(request_id="trace-me-42", python=pb.PythonCall(code="1")))
            with pytest.raises(InvalidArgument):
                client.execute(pb.ExecuteRequest(request_id="refuse-me-7"))
        lines = [json.loads(line) for line in server.output().splitlines() if line.startswith("{")]
    finally:
        server.stop()
    by_id = {entry.get("request_id"): entry for entry in lines}
    assert by_id["trace-me-42"]["outcome"] == "OK" and by_id["trace-me-42"]["tool"] == "python"
    assert by_id["refuse-me-7"]["status"] == "INVALID_ARGUMENT"
    assert all({"time", "level", "logger", "message"} <= set(entry) for entry in lines)
