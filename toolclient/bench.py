"""`toolserver bench`: a load generator that prints latency percentiles and throughput,
side by side with the baseline of a fresh `python3 -c` process per call, in one run.

For each workload (`bench_workloads`), each mode and each concurrency level C it sends
N calls: unary mode has C callers, each sending one `Execute` after the other; stream
mode keeps C calls in flight on one `ExecuteStream`, as an RL trainer batches its
rollouts' calls. The baseline runs the same programs as fresh processes, C at a time.
Each row also gives calls/s per CPU core of this machine (server and load generator
share it), for sizing replicas. On a shared machine figures move from run to run:
`--repeat` runs each point several times and keeps the median run. `--peer NAME=URL`
adds other sandboxes' HTTP APIs to the same run (`bench_peers`): each row's mode is then
the peer's name. In a mixed workload (calls that loop or sleep to their limit among short
ones) the latency percentiles are the short calls', and a loop counts as answered right
when it is a time-out within 10% of its limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Protocol, Sequence

from toolclient.bench_peers import PEER_APIS, bench_peer
from toolclient.bench_workloads import FRESH, Program, Ran, Workload
from toolclient.client import AsyncToolClient, ToolServerError
from toolcontract.v1 import toolserver_pb2 as pb

MODES = ("unary", "stream", "fresh")


def machine_cores() -> int:
    return len(os.sched_getaffinity(0))


@dataclass
class BenchResult:
    workload: str
    mode: str            # unary, stream, fresh (the baseline), or a peer's name
    concurrency: int
    calls: int
    failures: int
    seconds: float
    latencies_ms: list[float] = field(repr=False)

    @property
    def name(self) -> str:
        return f"{self.workload} {self.mode} c={self.concurrency}"

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def ok_rate(self) -> float:
        """Calls answered correctly per second: a server that drops calls fast is not fast."""
        return (self.calls - self.failures) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    def row(self) -> str:
        return (f"{self.name:<28} {self.calls:>6} {self.failures:>5} {self.percentile(50):>8.2f} "
                f"{self.percentile(90):>8.2f} {self.percentile(99):>8.2f} {self.rate:>9.1f} "
                f"{self.rate / machine_cores():>9.1f}")

    def summary(self) -> dict[str, Any]:
        return {"workload": self.workload, "mode": self.mode, "concurrency": self.concurrency, "calls": self.calls,
                "failures": self.failures, "seconds": round(self.seconds, 3), "calls_per_s": round(self.rate, 1),
                "ok_calls_per_s": round(self.ok_rate, 1),
                "calls_per_s_per_core": round(self.rate / machine_cores(), 1),
                **{f"p{q}_ms": round(self.percentile(q), 2) for q in (50, 90, 99)}}


HEADER = (f"{'run':<28} {'calls':>6} {'fail':>5} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'calls/s':>9} "
          f"{'per core':>9}")


def programs_for(workload: Workload, calls: int) -> list[Program]:
    return list(itertools.islice(itertools.cycle(workload.programs), calls))


def response_ran(response: pb.ExecuteResponse) -> Ran:
    """Ran well: OK, and for a judged program (C++ or another language) every case passed."""
    kind = response.WhichOneof("result")
    judged = getattr(response, kind) if kind in ("cpp", "program") else None
    passed = judged is None or judged.passed == len(judged.cases)
    return Ran(response.outcome == pb.OK and passed, response.outcome == pb.TIMEOUT, response.elapsed_us / 1e6)


async def bench_unary(target: str, workload: Workload, calls: int, concurrency: int, **client_args: Any
                      ) -> BenchResult:
    """C callers, each making unary Execute calls one after the other."""
    latencies: list[float] = []
    failures = 0
    queue = iter(programs_for(workload, calls))
    async with AsyncToolClient(target, **client_args) as client:
        await client.run_python("1")  # connect first: channel set-up is not a call's cost

        async def caller() -> None:
            nonlocal failures
            for program in queue:
                started = time.perf_counter()
                try:
                    response = await client.execute(program.request())
                except ToolServerError:
                    failures += 1
                    continue
                failures += program.wrong(response_ran(response), (time.perf_counter() - started) * 1000, latencies)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
    return BenchResult(workload.name, "unary", concurrency, calls, failures, seconds, latencies)


def bench_peer_api(name: str, url: str, workload: Workload, calls: int, concurrency: int) -> BenchResult:
    """The same programs through a peer's HTTP API, C callers at a time."""
    failures, seconds, latencies = asyncio.run(bench_peer(name, url, programs_for(workload, calls), concurrency))
    return BenchResult(workload.name, name, concurrency, calls, failures, seconds, latencies)


async def bench_stream(target: str, workload: Workload, calls: int, concurrency: int, **client_args: Any
                       ) -> BenchResult:
    """One ExecuteStream with up to C calls in flight; latency from send to answer."""
    latencies: list[float] = []
    failures = 0
    window = asyncio.Semaphore(concurrency)
    sent_at: dict[str, float] = {}
    programs = programs_for(workload, calls)
    budget_s = max(60.0, calls / 10 + sum(p.timeout_ms for p in programs if p.runs_to_limit) / 1000 / concurrency * 2)
    async with AsyncToolClient(target, **client_args) as client:
        await client.run_python("1")

        async def requests() -> AsyncIterator[pb.ExecuteRequest]:
            for i, program in enumerate(programs):
                await window.acquire()
                request_id = str(i)
                sent_at[request_id] = time.perf_counter()
                yield program.request(request_id)

        started = time.perf_counter()
        answered = 0
        try:
            async for response in client.stream(requests(), timeout_s=budget_s):
                latency_ms = (time.perf_counter() - sent_at.pop(response.request_id)) * 1000
                answered += 1
                failures += programs[int(response.request_id)].wrong(response_ran(response), latency_ms, latencies)
                window.release()
        except ToolServerError:  # a broken stream: every unanswered call is a failure
            pass
        failures += calls - answered
        seconds = time.perf_counter() - started
    return BenchResult(workload.name, "stream", concurrency, calls, failures, seconds, latencies)


async def fresh_python(program: Program, python: str) -> tuple[bool, bool]:
    """`python3 -c code`: whether it exited 0, and whether it ran to its limit."""
    process = await asyncio.create_subprocess_exec(python, "-c", program.code, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL)
    limit_s = program.timeout_ms / 1000 if program.runs_to_limit else None  # the rest: no limit
    try:
        return await asyncio.wait_for(process.wait(), limit_s) == 0, False
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):  # it may end just as its time does
            process.kill()
        await process.wait()
        return False, True


async def fresh_cpp(program: Program, compiler: str = "g++") -> tuple[bool, bool]:
    """`g++ -O2` in a fresh directory, then the binary as a fresh process per case: whether
    it compiled and every case's output was the expected one."""
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "main.cpp"
        source.write_text(program.code)
        compiling = await asyncio.create_subprocess_exec(compiler, "-std=c++17", "-O2", "-pipe", "-o",
                                                         f"{directory}/main", str(source),
                                                         stderr=subprocess.DEVNULL)
        if await compiling.wait() != 0:
            return False, False
        for stdin, expected in program.cases:
            process = await asyncio.create_subprocess_exec(f"{directory}/main", stdin=subprocess.PIPE,
                                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            stdout, _ = await process.communicate(stdin.encode())
            if process.returncode != 0 or stdout.decode().split() != expected.split():
                return False, False
    return True, False


async def fresh_program(program: Program) -> tuple[bool, bool]:
    """The language's compile (FRESH) in a fresh directory, where it compiles, then a fresh
    process per case: whether it compiled and every case's output was the expected one."""
    source_file, compile_command, run_command = FRESH[program.language]
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / source_file).write_text(program.code)
        if compile_command is not None:
            compiling = await asyncio.create_subprocess_exec(*(part.format(dir=directory) for part in compile_command),
                                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if await compiling.wait() != 0:
                return False, False
        for stdin, expected in program.cases:
            process = await asyncio.create_subprocess_exec(*(part.format(dir=directory) for part in run_command),
                                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                           stderr=subprocess.DEVNULL)
            stdout, _ = await process.communicate(stdin.encode())
            if process.returncode != 0 or stdout.decode().split() != expected.split():
                return False, False
    return True, False


def fresh(program: Program, python: str) -> Awaitable[tuple[bool, bool]]:
    """The fresh-process run of program: python3 -c, or its language's compile and runs."""
    if not program.cpp:
        return fresh_python(program, python)
    return fresh_cpp(program) if program.language == "cpp" else fresh_program(program)


def bench_fresh_process(workload: Workload, calls: int, concurrency: int, python: str) -> BenchResult:
    """The baseline: one fresh `python3 -c code` process per call (a judged program: a fresh
    compile and a fresh process per case), no sandbox at all, and no time limit but for
    the programs that run to theirs."""
    latencies: list[float] = []
    failures = 0

    async def run() -> float:
        queue = iter(programs_for(workload, calls))

        async def caller() -> None:
            nonlocal failures
            for program in queue:
                started = time.perf_counter()
                exited_0, timed_out = await fresh(program, python)
                elapsed_s = time.perf_counter() - started
                failures += program.wrong(Ran(exited_0, timed_out, elapsed_s), elapsed_s * 1000, latencies)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        return time.perf_counter() - started

    seconds = asyncio.run(run())
    return BenchResult(workload.name, "fresh", concurrency, calls, failures, seconds, latencies)


def median_run(runs: list[BenchResult]) -> BenchResult:
    """The run whose throughput is the median of the runs."""
    return sorted(runs, key=lambda r: r.rate)[(len(runs) - 1) // 2]


class ServerBench(Protocol):
    def __call__(self, target: str, workload: Workload, calls: int, concurrency: int, **client_args: Any
                 ) -> Coroutine[Any, Any, BenchResult]: ...


SERVER_BENCHES: dict[str, ServerBench] = {"unary": bench_unary, "stream": bench_stream}
Runner = Callable[[Workload, int, int], BenchResult]   # (workload, calls, concurrency) -> its run


def server_runner(mode: str, target: str, client_args: Mapping[str, Any]) -> Runner:
    def run(workload: Workload, calls: int, concurrency: int) -> BenchResult:
        return asyncio.run(SERVER_BENCHES[mode](target, workload, calls, concurrency, **client_args))
    return run


def peer_runner(name: str, url: str, peer_calls: int) -> Runner:
    """A peer gets peer_calls calls at each level (calls when 0), and at least one per caller."""
    def run(workload: Workload, calls: int, concurrency: int) -> BenchResult:
        return bench_peer_api(name, url, workload, max(peer_calls or calls, concurrency), concurrency)
    return run


def run_bench(target: str, workloads: Sequence[Workload], calls: int, concurrency: Sequence[int],
              baseline_calls: int, *, modes: Sequence[str] = ("unary",), repeat: int = 1,
              python: str = sys.executable, peers: Mapping[str, str] | None = None, peer_calls: int = 0,
              **client_args: Any) -> list[BenchResult]:
    """Prints a row per run (with --repeat, the median run of each point after its runs);
    returns the rows that count: the median run of each point, the baseline's and the
    peers' among them (baseline_calls calls at each level; 0: no baseline; peers: name ->
    base URL, sent the same programs as the server, peer_calls at each level, or calls
    when 0). client_args (token, tls_ca, ...) go to the client."""
    results = []
    print(f"target: {target}   {machine_cores()} CPU cores here (per core: calls/s / cores)")
    print(HEADER)
    runners: dict[str, Runner] = {mode: server_runner(mode, target, client_args) for mode in modes}
    for name, url in (peers or {}).items():
        runners[name] = peer_runner(name, url, peer_calls)
    for workload in workloads:
        for mode, runner in runners.items():
            if workload.mixed and mode in PEER_APIS and not PEER_APIS[mode].limit_per_call:
                print(f"{workload.name} {mode}: not sent (its API sets no time limit per call)")
                continue
            if workload.cpp and mode in PEER_APIS:
                print(f"{workload.name} {mode}: not sent (test cases are judged by this server's cpp and program "
                      "calls)")
                continue
            for c in concurrency:
                runs = []
                for _ in range(repeat):
                    runs.append(runner(workload, calls, c))
                    print(runs[-1].row(), flush=True)
                best = median_run(runs)
                if repeat > 1:
                    print(f"{best.row()}  <- median", flush=True)
                results.append(best)
        if baseline_calls:
            for c in concurrency:
                result = bench_fresh_process(workload, max(baseline_calls, c), c, python)
                print(result.row(), flush=True)
                results.append(result)
    print_speedups(results)
    return results


def print_speedups(results: Sequence[BenchResult]) -> None:
    """Per workload and level, each server mode against the fresh-process baseline and
    against the peer that answered the most calls correctly per second."""
    fresh = {(r.workload, r.concurrency): r.rate for r in results if r.mode == "fresh"}
    best_peer: dict[tuple[str, int], BenchResult] = {}
    for r in results:
        if r.mode not in MODES and r.ok_rate > getattr(best_peer.get((r.workload, r.concurrency)), "ok_rate", 0.0):
            best_peer[(r.workload, r.concurrency)] = r
    for r in results:
        if r.mode not in MODES[:2]:
            continue
        if fresh.get((r.workload, r.concurrency)):
            print(f"speed-up over a fresh process per call: {r.name}: "
                  f"{r.rate / fresh[(r.workload, r.concurrency)]:.1f}x")
        peer = best_peer.get((r.workload, r.concurrency))
        if peer is not None:
            print(f"speed-up over the fastest peer ({peer.mode}, calls answered correctly): {r.name}: "
                  f"{r.ok_rate / peer.ok_rate:.1f}x")


def write_json(results: Sequence[BenchResult], path: Path) -> None:
    path.write_text(json.dumps({"cores": machine_cores(), "results": [r.summary() for r in results]}, indent=2)
                    + "\n")


def plot(figures: Sequence[dict[str, Any]], path: Path, title: str = "") -> None:
    """Throughput (calls answered correctly per second) and latency (p50 solid, p99 dashed)
    against concurrency, a column per workload; the fresh-process baseline in grey, peers
    in their own colours. figures: `BenchResult.summary()`s, as `--json` writes them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(f["workload"] for f in figures))
    colors = {"unary": "tab:blue", "stream": "tab:orange", "fresh": "tab:gray"}
    peers = [mode for mode in dict.fromkeys(f["mode"] for f in figures) if mode not in MODES]
    colors.update(zip(peers, ("tab:green", "tab:red", "tab:purple", "tab:brown")))
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.6 * len(workloads), 7.5), squeeze=False)
    for column, workload in enumerate(workloads):
        rate_ax, latency_ax = axes[0][column], axes[1][column]
        for mode in (*MODES, *peers):
            rows = sorted((f for f in figures if f["workload"] == workload and f["mode"] == mode),
                          key=lambda f: f["concurrency"])
            if not rows:
                continue
            levels = [f["concurrency"] for f in rows]
            label = ("fresh python3 -c" if mode == "fresh" else f"server, {mode}" if mode in MODES
                     else f"peer: {mode}")
            rate_ax.plot(levels, [f["ok_calls_per_s"] for f in rows], "o-", color=colors[mode], label=label)
            latency_ax.plot(levels, [f["p50_ms"] for f in rows], "o-", color=colors[mode], label=f"{label} p50")
            latency_ax.plot(levels, [f["p99_ms"] for f in rows], "x--", color=colors[mode], label=f"{label} p99")
        rate_ax.set_title(workload)
        for ax in (rate_ax, latency_ax):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrent calls")
            ax.grid(True, alpha=0.3)
        rate_ax.set_ylabel("calls/s answered correctly")
        rate_ax.set_ylim(bottom=0)
        latency_ax.set_yscale("log")
        latency_ax.set_ylabel("latency, ms")
        rate_ax.legend(fontsize=8)
        latency_ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
