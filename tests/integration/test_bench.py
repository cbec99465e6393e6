"""`toolserver bench` against the real server: every mode answers every call."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, RunningServer, free_port
from toolclient.bench import run_bench
from toolclient.bench_workloads import Program, Workload, get_workload


def test_bench_unary_stream_and_baseline(server, capsys):
    results = run_bench(server.target, [get_workload("trivial")], 40, [1, 4], baseline_calls=4,
                        modes=("unary", "stream"), repeat=2)
    printed = capsys.readouterr().out
    assert [r.name for r in results] == ["trivial unary c=1", "trivial unary c=4", "trivial stream c=1",
                                         "trivial stream c=4", "trivial fresh c=1", "trivial fresh c=4"]
    for result in results:
        assert result.failures == 0 and result.rate > 0
    assert all(len(r.latencies_ms) == 40 for r in results if r.mode != "fresh")
    assert [r.calls for r in results if r.mode == "fresh"] == [4, 4]
    assert printed.count("<- median") == 4 and "speed-up over a fresh process per call: trivial unary c=1" in printed


def test_a_mixed_workload_judges_loops_and_sleeps_right_only_as_time_outs(server, capsys):
    """mixed10: two of every 20 calls loop or sleep to a 5 s limit; their latency is not
    the short calls'."""
    results = run_bench(server.target, [get_workload("mixed10")], 20, [4], baseline_calls=4, modes=("stream",))
    stream, fresh = results
    assert stream.failures == 0 and stream.calls == 20 and len(stream.latencies_ms) == 18
    assert fresh.failures == 0 and len(fresh.latencies_ms) == 3  # its 4 calls: a loop, then 3 short ones
    assert max(stream.latencies_ms) < 5000


def test_the_command_sweeps_workloads_and_writes_figures_and_a_plot(server, tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    done = subprocess.run([sys.executable, "-m", "toolserver", "bench", "--target", server.target,
                           "--workload", "trivial,sympy,humaneval", "--mode", "unary,stream", "-n", "12",
                           "-c", "1,3", "--baseline-calls", "3", "--json", str(out), "--plot", str(png)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    points = {(r["workload"], r["mode"], r["concurrency"]) for r in figures["results"]}
    assert points == {(w, m, c) for w in ("trivial", "sympy", "humaneval") for m in ("unary", "stream", "fresh")
                      for c in (1, 3)}
    assert all(r["failures"] == 0 and r["calls_per_s"] > 0 for r in figures["results"])
    assert all(abs(r["calls_per_s_per_core"] * figures["cores"] - r["calls_per_s"]) <= 0.1 * figures["cores"] + 0.1
               for r in figures["results"])
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.fixture(scope="module")
def fronts(tmp_path_factory):
    """A server with its HTTP fronts, which speak SandboxFusion's and code-judge's APIs:
    the peer client runs against them over real HTTP."""
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("bench-fronts"), workers=1, args=("--http-port", str(port)))
    yield running, f"http://127.0.0.1:{port}"
    running.stop()


def test_peers_get_the_same_calls_through_their_http_apis(fronts, capsys):
    running, url = fronts
    results = run_bench(running.target, [get_workload("trivial"), get_workload("humaneval")], 20, [2],
                        baseline_calls=0, peers={"sandbox-fusion": url, "code-judge": url})
    printed = capsys.readouterr().out
    assert [r.name for r in results] == [f"{w} {m} c=2" for w in ("trivial", "humaneval")
                                         for m in ("unary", "sandbox-fusion", "code-judge")]
    assert all(r.failures == 0 and len(r.latencies_ms) == 20 for r in results)
    assert "speed-up over the fastest peer (" in printed


@pytest.mark.parametrize("code", ["import sys\nsys.exit(3)", "raise ValueError('no')"])
def test_a_program_that_fails_counts_as_a_failure_at_a_peer(fronts, code):
    running, url = fronts
    results = run_bench(running.target, [Workload("custom", (Program(code),))], 50, [1], baseline_calls=0, modes=(),
                        peers={"sandbox-fusion": url, "code-judge": url}, peer_calls=3)
    assert [(r.calls, r.failures, r.ok_rate) for r in results] == [(3, 3, 0.0), (3, 3, 0.0)]


def test_a_mixed_workload_goes_to_the_peers_whose_api_takes_a_time_limit_per_call(fronts, capsys):
    running, url = fronts
    results = run_bench(running.target, [get_workload("mixed10")], 20, [2], baseline_calls=0, modes=(),
                        peers={"sandbox-fusion": url, "code-judge": url})
    assert [(r.mode, r.failures, len(r.latencies_ms)) for r in results] == [("sandbox-fusion", 0, 18)]
    assert "mixed10 code-judge: not sent" in capsys.readouterr().out


def test_an_unreachable_peer_fails_every_call(server):
    results = run_bench(server.target, [get_workload("trivial")], 3, [1], baseline_calls=0, modes=(),
                        peers={"code-judge": f"http://127.0.0.1:{free_port()}"})
    assert results[0].failures == 3


def test_bad_bench_arguments_are_a_clear_error(server):
    for args, message in ((["--workload", "nonsense"], "unknown workload 'nonsense'"),
                          (["--mode", "batch"], "--mode"), (["-c", "0"], "must be positive"),
                          (["--peer", "e2b=http://127.0.0.1:1"], "NAME one of sandbox-fusion, code-judge"),
                          (["--peer", "code-judge=127.0.0.1:1"], "NAME=http://HOST:PORT")):
        done = subprocess.run([sys.executable, "-m", "toolserver", "bench", "--target", server.target, *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr
