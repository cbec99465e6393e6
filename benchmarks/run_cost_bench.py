"""What one run of a compiled program costs: a trivial program per language (it prints a
line) through the server, its compile cached, one case a call, one call at a time, against
a fresh process of the same program on this host (compiled once with the host's toolchain,
as `toolserver bench`'s baseline compiles it: `FRESH` in toolclient/bench_workloads.py).
Prints p50 and p90 in ms of each. --pause-ms waits that long between the server's calls:
the time a worker has, between two runs, to start the next one's process ahead (Java's JVM).

    python benchmarks/run_cost_bench.py [--target 127.0.0.1:50051] [--calls 30] [--pause-ms 0] [--language java ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from toolclient.bench_workloads import FRESH
from toolclient.client import ToolClient
from toolcontract.v1 import toolserver_pb2 as pb

HELLO = {
    "cpp": '#include <cstdio>\nint main() { puts("hi"); }\n',
    "java": 'public class Main { public static void main(String[] args) { System.out.println("hi"); } }\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hi") }\n',
    "rust": 'fn main() { println!("hi"); }\n',
    "javascript": 'console.log("hi");\n',
    "typescript": 'console.log("hi");\n',
}
FRESH_CPP = ("main.cpp", ["g++", "-O2", "-o", "{dir}/main", "{dir}/main.cpp"], ["{dir}/main"])


def request(language: str) -> pb.ExecuteRequest:
    if language == "cpp":
        return pb.ExecuteRequest(cpp=pb.CppCall(source=HELLO[language]))
    return pb.ExecuteRequest(program=pb.ProgramCall(language=language, source=HELLO[language]))


def through_server(client: ToolClient, language: str, calls: int, pause_s: float) -> list[float]:
    first = client.execute(request(language))  # compiles; the rest find it cached
    if first.stdout != "hi\n":
        raise SystemExit(f"{language}: the server answered {pb.Outcome.Name(first.outcome)}: {first.error}")
    times = []
    for _ in range(calls):
        time.sleep(pause_s)
        started = time.perf_counter()
        client.execute(request(language))
        times.append((time.perf_counter() - started) * 1000)
    return times


def fresh_processes(language: str, calls: int) -> list[float]:
    source_file, compile_command, run_command = FRESH_CPP if language == "cpp" else FRESH[language]
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / source_file).write_text(HELLO[language])
        if compile_command is not None:
            subprocess.run([part.format(dir=directory) for part in compile_command], check=True, capture_output=True)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            ran = subprocess.run([part.format(dir=directory) for part in run_command], capture_output=True, text=True)
            times.append((time.perf_counter() - started) * 1000)
            if ran.stdout != "hi\n":
                raise SystemExit(f"{language}: a fresh process printed {ran.stdout!r}, {ran.stderr[-300:]!r}")
    return times


def p(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100)[q - 1] if len(times) > 1 else times[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--pause-ms", type=int, default=0)
    parser.add_argument("--language", nargs="*", default=list(HELLO), choices=list(HELLO))
    args = parser.parse_args()
    os.environ.setdefault("GOCACHE", tempfile.mkdtemp())  # go build wants a cache where HOME may have none
    print(f"{'language':<11} {'server p50':>11} {'p90':>7} {'fresh p50':>10} {'p90':>7}  (ms, {args.calls} runs)")
    with ToolClient(args.target, timeout_s=120) as client:
        for language in args.language:
            server = through_server(client, language, args.calls, args.pause_ms / 1000)
            fresh = fresh_processes(language, args.calls)
            print(f"{language:<11} {p(server, 50):11.1f} {p(server, 90):7.1f} {p(fresh, 50):10.1f} {p(fresh, 90):7.1f}")


if __name__ == "__main__":
    main()
