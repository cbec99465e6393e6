"""Big outputs at once: N calls in flight, each printing SIZE bytes, and what the server's
memory does meanwhile.

Prints the calls' wall time (p50, p99, all of them), whether every answer came back
whole, and the server's resident memory before, at its peak while the calls ran (sampled
every 20 ms from /proc) and after: a server that held every answer at once would grow by
N x SIZE (and more: each answer is decoded, checked and serialized); one that does not
grows with the calls that run at once (its workers), not with the calls in flight.

    python benchmarks/output_bench.py --target 127.0.0.1:50051 --pid SERVER_PID \\
        [--calls 64] [--size-mb 16]

Run on the server's machine (its RSS is read from /proc); the calls leave their limits
to the server's defaults (16 MiB of output a stream).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

from toolclient.client import AsyncToolClient


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


async def run(target: str, calls: int, size: int) -> tuple[list[float], int]:
    code = f"import sys\nsys.stdout.write('x' * {size})"
    async with AsyncToolClient(target) as client:
        async def one() -> tuple[float, bool]:
            started = time.monotonic()
            response = await client.run_python(code, timeout_ms=60000)
            return time.monotonic() - started, len(response.stdout) == size and not response.truncated

        results = await asyncio.gather(*(one() for _ in range(calls)))
    return [elapsed for elapsed, _ in results], sum(whole for _, whole in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--pid", type=int, required=True, help="the server's pid, for its RSS")
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--size-mb", type=int, default=16)
    args = parser.parse_args()
    size = (args.size_mb << 20) - 1  # within the cap of size-mb MiB, whatever the newline
    before = rss_mb(args.pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(args.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    elapsed, whole = asyncio.run(run(args.target, args.calls, size))
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    print(f"{args.calls} calls of {args.size_mb} MiB of stdout at once: {whole}/{args.calls} whole, "
          f"{wall:.1f} s in all; per call p50 {percentile(elapsed, 0.5):.2f} s, p99 {percentile(elapsed, 0.99):.2f} s")
    print(f"server RSS: {before:.0f} MB before, {peak[0]:.0f} MB at its peak (+{peak[0] - before:.0f} MB), "
          f"{rss_mb(args.pid):.0f} MB after; all the answers together: {args.calls * args.size_mb} MB")


if __name__ == "__main__":
    main()
