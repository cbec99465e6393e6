"""Lean benchmark: proof checks per second and latency with a warm header; prints figures.

Against a running server (--target) that has Lean: first one call to warm the header (its
time is printed apart: that is the header's elaboration, `import Mathlib` takes seconds),
then --calls small proofs one at a time (latency percentiles), then the same number in
one ExecuteStream batch (checks per second with the whole REPL pool busy). Exits with
status 2 and the server's reason when Lean is unavailable there.

    python benchmarks/lean_bench.py [--target 127.0.0.1:50051] [--calls 200]
    python benchmarks/lean_bench.py --header "" --tactic decide   # core Lean, no Mathlib
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from toolclient.client import ToolClient, ToolServerError
from toolcontract.v1 import toolserver_pb2 as pb


def proof(index: int, tactic: str) -> str:
    return f"theorem bench_{index} : {index} + {index} = {2 * index} := by {tactic}"


def request(index: int, header: str, tactic: str, timeout_ms: int) -> pb.ExecuteRequest:
    return pb.ExecuteRequest(request_id=str(index), lean=pb.LeanCall(code=proof(index, tactic), header=header),
                             limits=pb.Limits(timeout_ms=timeout_ms))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--header", default="import Mathlib")
    parser.add_argument("--tactic", default="norm_num")
    parser.add_argument("--timeout-ms", type=int, default=60_000)
    args = parser.parse_args()

    with ToolClient(args.target, timeout_s=600) as client:
        try:
            info = client.server_info()
        except ToolServerError as exc:
            print(f"cannot reach a tool server at {args.target}: {exc}", file=sys.stderr)
            return 2
        lean = [tool for tool in info.tools if tool.name == "lean"]
        if not lean or not lean[0].available:
            detail = lean[0].detail if lean else "the server does not list a lean tool"
            print(f"lean is unavailable on {args.target}: {detail}", file=sys.stderr)
            return 2
        started = time.perf_counter()
        first = client.execute(request(0, args.header, args.tactic, args.timeout_ms))
        warm_s = time.perf_counter() - started
        if first.outcome != pb.OK or not first.lean.complete:
            print(f"the warm-up proof failed: outcome {pb.Outcome.Name(first.outcome)}: {first.error}",
                  file=sys.stderr)
            return 1
        print(f"header {args.header or '(none)'!r}: first call (elaborates the header) {warm_s:.2f} s")

        latencies = []
        for index in range(1, args.calls + 1):
            started = time.perf_counter()
            response = client.execute(request(index, args.header, args.tactic, args.timeout_ms))
            latencies.append((time.perf_counter() - started) * 1000)
            if response.outcome != pb.OK:
                print(f"call {index}: {pb.Outcome.Name(response.outcome)}: {response.error}", file=sys.stderr)
        print(f"sequential, {args.calls} calls: p50 {percentile(latencies, 0.5):.1f} ms, "
              f"p90 {percentile(latencies, 0.9):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms, "
              f"max {max(latencies):.1f} ms, mean {statistics.mean(latencies):.1f} ms, "
              f"{1000 / statistics.mean(latencies):.1f} checks/s")

        batch = [request(index, args.header, args.tactic, args.timeout_ms) for index in range(1, args.calls + 1)]
        started = time.perf_counter()
        responses = client.run_many(batch)
        elapsed = time.perf_counter() - started
        complete = sum(r.outcome == pb.OK and r.lean.complete for r in responses)
        print(f"one stream, {args.calls} calls: {elapsed:.2f} s, {args.calls / elapsed:.1f} checks/s, "
              f"{complete}/{args.calls} complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
