"""`toolserver bench` against the real server: every mode answers every call."""

from __future__ import annotations

import json
import subprocess
import sys

from toolserver.bench import run_bench
from toolserver.bench_workloads import get_workload

from tests.conftest import ROOT


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


def test_bad_bench_arguments_are_a_clear_error(server):
    for args, message in ((["--workload", "nonsense"], "unknown workload 'nonsense'"),
                          (["--mode", "batch"], "--mode"), (["-c", "0"], "must be positive")):
        done = subprocess.run([sys.executable, "-m", "toolserver", "bench", "--target", server.target, *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr
