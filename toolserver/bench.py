"""`toolserver bench`: a load generator that prints latency percentiles and throughput,
side by side with the baseline of a fresh `python3 -c` process per call, in one run.

Unary mode: C callers, each sending one `Execute` after the other. Stream mode: one
`ExecuteStream` that keeps C calls in flight, as an RL trainer batches its rollouts'
calls. On a shared machine figures move from run to run: `--repeat` runs each level
several times and prints the median run last.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass

from toolserver.client import AsyncToolClient, ToolServerError, python_request
from toolserver.v1 import toolserver_pb2 as pb


@dataclass
class BenchResult:
    name: str
    calls: int
    failures: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    def row(self) -> str:
        return (f"{self.name:<28} {self.calls:>7} {self.failures:>5} {self.percentile(50):>8.2f} "
                f"{self.percentile(90):>8.2f} {self.percentile(99):>8.2f} {self.rate:>9.1f}")


HEADER = f"{'run':<28} {'calls':>7} {'fail':>5} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'calls/s':>9}"


async def bench_server(target: str, code: str, calls: int, concurrency: int, **client_args) -> BenchResult:
    """C callers, each making unary Execute calls one after the other."""
    latencies: list[float] = []
    failures = 0
    counter = iter(range(calls))
    async with AsyncToolClient(target, **client_args) as client:
        await client.run_python("1")  # connect first: channel set-up is not a call's cost

        async def caller() -> None:
            nonlocal failures
            for _ in counter:
                started = time.perf_counter()
                try:
                    response = await client.execute(python_request(code))
                    if response.outcome != pb.OK:
                        failures += 1
                except ToolServerError:
                    failures += 1
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return BenchResult(f"server c={concurrency}", calls, failures, seconds, latencies)


async def bench_stream(target: str, code: str, calls: int, concurrency: int, **client_args) -> BenchResult:
    """One ExecuteStream with up to C calls in flight; latency from send to answer."""
    latencies: list[float] = []
    failures = 0
    window = asyncio.Semaphore(concurrency)
    sent_at: dict[str, float] = {}
    async with AsyncToolClient(target, **client_args) as client:
        await client.run_python("1")

        async def requests():
            for i in range(calls):
                await window.acquire()
                request_id = str(i)
                sent_at[request_id] = time.perf_counter()
                yield python_request(code, request_id=request_id)

        started = time.perf_counter()
        answered = 0
        try:
            async for response in client.stream(requests(), timeout_s=max(60.0, calls / 10)):
                latencies.append((time.perf_counter() - sent_at.pop(response.request_id)) * 1000)
                answered += 1
                if response.outcome != pb.OK:
                    failures += 1
                window.release()
        except ToolServerError:  # a broken stream: every unanswered call is a failure
            pass
        failures += calls - answered
        seconds = time.perf_counter() - started
    return BenchResult(f"stream c={concurrency}", calls, failures, seconds, latencies)


def bench_fresh_process(code: str, calls: int, concurrency: int, python: str) -> BenchResult:
    """The baseline: one fresh `python3 -c code` process per call, no sandbox at all."""
    latencies: list[float] = []
    failures = 0

    async def run() -> float:
        counter = iter(range(calls))

        async def caller() -> None:
            nonlocal failures
            for _ in counter:
                started = time.perf_counter()
                process = await asyncio.create_subprocess_exec(python, "-c", code, stdout=subprocess.DEVNULL,
                                                               stderr=subprocess.DEVNULL)
                if await process.wait() != 0:
                    failures += 1
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        return time.perf_counter() - started

    seconds = asyncio.run(run())
    return BenchResult(f"fresh python3 -c c={concurrency}", calls, failures, seconds, latencies)


def median_run(runs: list[BenchResult]) -> BenchResult:
    """The run whose throughput is the median of the runs."""
    ordered = sorted(runs, key=lambda r: r.rate)
    middle = ordered[(len(ordered) - 1) // 2]
    return BenchResult(f"{middle.name} median", middle.calls, middle.failures, middle.seconds, middle.latencies_ms)


def run_bench(target: str, code: str, calls: int, concurrency: list[int], baseline_calls: int, *,
              stream: bool = False, repeat: int = 1, python: str = sys.executable,
              **client_args) -> list[BenchResult]:
    """Prints a row per run (and the median run per level when repeat > 1); returns
    the rows that count: the median run of each level, then the baselines. client_args
    (token, tls_ca, ...) go to the client."""
    kind = bench_stream if stream else bench_server
    results = []
    print(f"snippet: {code!r}   target: {target}   mode: {'ExecuteStream' if stream else 'unary Execute'}")
    print(HEADER)
    for c in concurrency:
        runs = []
        for _ in range(repeat):
            runs.append(asyncio.run(kind(target, code, calls, c, **client_args)))
            print(runs[-1].row(), flush=True)
        if repeat > 1:
            runs = [median_run(runs)]
            print(runs[0].row(), flush=True)
        results.append(runs[0])
    if baseline_calls:
        for c in sorted({1, max(concurrency)}):
            result = bench_fresh_process(code, baseline_calls, c, python)
            print(result.row(), flush=True)
            results.append(result)
        best_server = max(r.rate for r in results if not r.name.startswith("fresh"))
        best_fresh = max(r.rate for r in results if r.name.startswith("fresh"))
        print(f"speed-up over a fresh process per call: {best_server / best_fresh:.1f}x "
              f"(best throughput {best_server:.0f} vs {best_fresh:.0f} calls/s)")
    return results
