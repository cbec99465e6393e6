"""`toolserver bench`: a load generator that prints latency percentiles and throughput,
side by side with the baseline of a fresh `python3 -c` process per call, in one run."""

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


async def bench_server(target: str, code: str, calls: int, concurrency: int) -> BenchResult:
    latencies: list[float] = []
    failures = 0
    counter = iter(range(calls))
    async with AsyncToolClient(target) as client:
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


def run_bench(target: str, code: str, calls: int, concurrency: list[int], baseline_calls: int,
              python: str = sys.executable) -> list[BenchResult]:
    results = []
    print(f"snippet: {code!r}   target: {target}")
    print(HEADER)
    for c in concurrency:
        result = asyncio.run(bench_server(target, code, calls, c))
        print(result.row(), flush=True)
        results.append(result)
    if baseline_calls:
        for c in sorted({1, max(concurrency)}):
            result = bench_fresh_process(code, baseline_calls, c, python)
            print(result.row(), flush=True)
            results.append(result)
        best_server = max(r.rate for r in results if r.name.startswith("server"))
        best_fresh = max(r.rate for r in results if r.name.startswith("fresh"))
        print(f"speed-up over a fresh process per call: {best_server / best_fresh:.1f}x "
              f"(best throughput {best_server:.0f} vs {best_fresh:.0f} calls/s)")
    return results
