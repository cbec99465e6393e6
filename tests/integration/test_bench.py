"""`toolserver bench` against the real server: every mode answers every call."""

from __future__ import annotations

from toolserver.bench import run_bench


def test_bench_unary_stream_and_baseline(server, capsys):
    unary = run_bench(server.target, "2 + 2", 40, [1, 4], baseline_calls=4, repeat=2)
    stream = run_bench(server.target, "2 + 2", 40, [4], baseline_calls=0, stream=True)
    printed = capsys.readouterr().out
    assert [r.name for r in unary] == ["server c=1 median", "server c=4 median",
                                       "fresh python3 -c c=1", "fresh python3 -c c=4"]
    assert [r.name for r in stream] == ["stream c=4"]
    for result in unary + stream:
        assert result.failures == 0 and result.rate > 0
    assert all(len(r.latencies_ms) == 40 for r in unary[:2] + stream)
    assert "speed-up over a fresh process per call" in printed
