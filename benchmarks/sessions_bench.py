"""Sessions at RL batch scale: open N in bursts, run a call in each, hold them, close them.

For each N it prints the OpenSession latency (p50/p99) of the burst, the first call's in
each new session, the CloseSession latency, and the memory the sessions hold: the PSS of
every process of the sessions' slot uids (each session's process, its jail's firejail and
holder, whatever its code started), in all and per session, beside the session zygote's
own (the shared warm image) and the server's.

    python benchmarks/sessions_bench.py --target 127.0.0.1:50051 --sizes 64,256,1000 [--burst 256]

RL steps (`--steps S`): S training steps, each opening a batch of --batch sessions in bursts
of --burst, one stateful call in each (two cells: the second reads what the first set),
all closed, then --gap-s seconds (the step's generation and update) before the next. It
prints each step's OpenSession and CloseSession p50/p99, the sessions made during the step
and the gap after it with the machine's CPU per make (all of the machine's CPU in that
time over the sessions made: run it on an otherwise idle machine), and the sessions' PSS
while the batch is held.

    python benchmarks/sessions_bench.py --server-pid PID --steps 4 --batch 256 --burst 64 --gap-s 60

Run as root on the server's machine (PSS is read from /proc), against a server whose
`sessions.max_sessions` covers the largest N and whose `sessions.ready` is what is
measured (docs/speed.md, "Sessions", gives the configurations). Before each size it waits
until the server has made the first burst's sessions ahead, or --wait-ready of them
(`toolserver_sessions_ready` on --metrics), so that no session is being made as it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import time
import urllib.request

import grpc

from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def processes() -> dict[int, tuple[int, int]]:
    """{pid: (parent, uid)} of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            table[int(entry.name)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    return table


def memory_of_sessions(server_pid: int) -> dict[str, float]:
    """PSS (MB) of the session zygote (the server's child running as root whose children
    run as slot users outside any firejail), of every process of its children's uids, and
    of the server itself."""
    table = processes()
    children = {pid for pid, (parent, _) in table.items() if parent == server_pid}
    zygote, session_uids = None, set()
    for pid in children:
        if table[pid][1] != 0:
            continue
        below = {table[child][1] for child, (parent, _) in table.items() if parent == pid}
        if below and 0 not in below:
            zygote, session_uids = pid, below
    sessions_kb = sum(pss_kb(pid) for pid, (_, uid) in table.items() if uid in session_uids)
    return {"sessions_mb": sessions_kb / 1024, "zygote_mb": pss_kb(zygote) / 1024 if zygote else 0.0,
            "server_mb": pss_kb(server_pid) / 1024, "session_processes": len(session_uids)}


def cpu_ms(pid: int) -> float:
    """User and system CPU time pid has used, in ms."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def own_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


def sessions_metric(metrics_url: str, name: str) -> int:
    text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    found = re.search(rf"^toolserver_sessions_{name} (\S+)", text, re.M)
    return int(float(found.group(1))) if found else 0


def ready_sessions(metrics_url: str) -> int:
    return sessions_metric(metrics_url, "ready")


def machine_cpu_s() -> float:
    """CPU time the whole machine has spent busy (every core, all but idle and iowait)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


async def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = await call
    return (time.perf_counter() - start) * 1000, result


async def measure(stub: pb_grpc.ToolServerStub, size: int, burst: int, calls_at_once: int,
                  server_pid: int) -> dict[str, object]:
    opened: list[pb.Session] = []
    open_ms: list[float] = []
    server_cpu, client_cpu = cpu_ms(server_pid), own_cpu_ms()
    for first in range(0, size, burst):
        count = min(burst, size - first)
        results = await asyncio.gather(*(timed(stub.OpenSession(pb.OpenSessionRequest(), timeout=600))
                                         for _ in range(count)))
        open_ms += [ms for ms, _ in results]
        opened += [session for _, session in results]
    cpu = {"server": (cpu_ms(server_pid) - server_cpu) / size, "client": (own_cpu_ms() - client_cpu) / size}
    limit = asyncio.Semaphore(calls_at_once)

    async def first_call(session: pb.Session) -> float:
        async with limit:
            request = pb.ExecuteRequest(python=pb.PythonCall(code="import numpy, sympy\nx = 41\nx + 1",
                                                             session_id=session.session_id))
            ms, response = await timed(stub.Execute(request, timeout=120))
            assert response.outcome == pb.OK and response.python.value == "42", response
            return ms

    call_ms = await asyncio.gather(*(first_call(session) for session in opened))
    return {"opened": opened, "open_ms": open_ms, "call_ms": list(call_ms), "open_cpu": cpu}


async def close_all(stub: pb_grpc.ToolServerStub, opened: list[pb.Session]) -> list[float]:
    results = await asyncio.gather(*(timed(stub.CloseSession(pb.CloseSessionRequest(session_id=s.session_id),
                                                             timeout=600)) for s in opened))
    return [ms for ms, _ in results]


def line(label: str, values: list[float]) -> str:
    return (f"{label:>14}: p50 {percentile(values, 0.5):8.1f} ms  p99 {percentile(values, 0.99):8.1f} ms  "
            f"max {max(values):8.1f} ms")


async def rl_step(stub: pb_grpc.ToolServerStub, batch: int, burst: int, server_pid: int) -> dict[str, object]:
    """One step's batch: opened in bursts, a stateful call in each, held, closed."""
    open_ms: list[float] = []
    opened: list[pb.Session] = []
    for first in range(0, batch, burst):
        results = await asyncio.gather(*(timed(stub.OpenSession(pb.OpenSessionRequest(), timeout=600))
                                         for _ in range(min(burst, batch - first))))
        open_ms += [ms for ms, _ in results]
        opened += [session for _, session in results]

    async def stateful(session: pb.Session) -> None:
        for code, value in (("rollout = 41", ""), ("rollout + 1", "42")):
            response = await stub.Execute(pb.ExecuteRequest(python=pb.PythonCall(
                code=code, session_id=session.session_id)), timeout=120)
            assert response.outcome == pb.OK and response.python.value == value, response

    await asyncio.gather(*(stateful(session) for session in opened))
    held = memory_of_sessions(server_pid)
    close_ms = await close_all(stub, opened)
    return {"open_ms": open_ms, "close_ms": close_ms, "held": held}


async def rl_steps(stub: pb_grpc.ToolServerStub, args: argparse.Namespace) -> None:
    print(f"{args.steps} steps of {args.batch} sessions (bursts of {args.burst}), {args.gap_s:.0f} s apart")
    for step in range(args.steps):
        ready = ready_sessions(args.metrics)
        made, cpu = sessions_metric(args.metrics, "made"), machine_cpu_s()
        result = await rl_step(stub, args.batch, args.burst, args.server_pid)
        await asyncio.sleep(args.gap_s)
        made, cpu = sessions_metric(args.metrics, "made") - made, machine_cpu_s() - cpu
        held = result["held"]
        print(f"step {step + 1}: {ready} ready when it began")
        print(line("OpenSession", result["open_ms"]))  # type: ignore[arg-type]
        print(line("CloseSession", result["close_ms"]))  # type: ignore[arg-type]
        per_make = f"{cpu / made * 1000:.0f} ms of CPU each" if made else "none made"
        print(f"{'made':>14}: {made} sessions in the step and the gap after it, {per_make} (the machine's "
              f"{cpu:.1f} CPU-s over that time, the calls included); {ready_sessions(args.metrics)} ready at its end")
        print(f"{'memory':>14}: {held['sessions_mb']:.0f} MB PSS for the batch's {held['session_processes']} "  # type: ignore[index]
              f"session uids ({held['sessions_mb'] / max(held['session_processes'], 1):.1f} MB each)")  # type: ignore[index]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--metrics", default="http://127.0.0.1:9090/metrics")
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--sizes", default="64,256,1000")
    parser.add_argument("--burst", type=int, default=256, help="OpenSession calls sent at once")
    parser.add_argument("--calls-at-once", type=int, default=32)
    parser.add_argument("--hold-s", type=float, default=5.0, help="how long the sessions are held before closing")
    parser.add_argument("--wait-ready", type=int, default=0,
                        help="sessions made ahead to wait for before each size (0: the first burst's)")
    parser.add_argument("--steps", type=int, default=0, help="RL steps to run (0: the sizes instead)")
    parser.add_argument("--batch", type=int, default=256, help="an RL step's sessions")
    parser.add_argument("--gap-s", type=float, default=60.0, help="seconds from a step's closes to the next step")
    args = parser.parse_args()
    async with grpc.aio.insecure_channel(args.target) as channel:
        stub = pb_grpc.ToolServerStub(channel)
        if args.steps:
            await rl_steps(stub, args)
            return
        for size in (int(value) for value in args.sizes.split(",")):
            deadline = time.monotonic() + 1800
            wanted = args.wait_ready or min(size, args.burst)
            while ready_sessions(args.metrics) < wanted and time.monotonic() < deadline:
                await asyncio.sleep(1)
            await asyncio.sleep(2)  # the last one made: the machine quiet again
            ready = ready_sessions(args.metrics)
            before = memory_of_sessions(args.server_pid)
            result = await measure(stub, size, args.burst, args.calls_at_once, args.server_pid)
            await asyncio.sleep(args.hold_s)
            held = memory_of_sessions(args.server_pid)
            close_ms = await close_all(stub, result["opened"])  # type: ignore[arg-type]
            print(f"N = {size} sessions (bursts of {args.burst}, {ready} made ahead when the first burst came)")
            print(line("OpenSession", result["open_ms"]))  # type: ignore[arg-type]
            print(line("first call", result["call_ms"]))  # type: ignore[arg-type]
            print(line("CloseSession", close_ms))
            print(f"{'memory':>14}: {held['sessions_mb']:.0f} MB PSS for {held['session_processes']} session uids "
                  f"({held['sessions_mb'] / max(held['session_processes'], 1):.1f} MB each, its jail included); "
                  f"before the burst {before['sessions_mb']:.0f} MB for {before['session_processes']}; "
                  f"session zygote {held['zygote_mb']:.0f} MB, server {held['server_mb']:.0f} MB")
            cpu = result["open_cpu"]
            print(f"{'CPU per open':>14}: server {cpu['server']:.2f} ms, this client {cpu['client']:.2f} ms "  # type: ignore[index]
                  f"(the burst took {max(result['open_ms']):.0f} ms in all)")  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
