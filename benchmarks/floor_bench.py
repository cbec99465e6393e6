"""The physical floor of a python call on this machine, beside what the server costs.

Three measurements, each in calls/s and CPU milliseconds per call:

1. `jailed fork`: the cheapest thing a sandboxed call could be. A slim interpreter
   (`python3 -I -S`) in the server's own jail (the same firejail command line, as a slot
   user) reads a byte from its pipe, forks, the child writes the byte back and exits,
   and the parent reaps it: fork + exit + a pipe round trip, nothing else. One jail per
   CPU core, each driven by its own host thread.
   `slim workers alone`: the server's own slim workers (jail, guard, limits, cleanup), two
   per core, driven straight from one event loop with no gRPC: the most trivial calls
   per second the jails could carry if the server and its callers cost nothing. Split
   into the zygotes, the calls' processes and the driver, with the page faults of each
   (a copy-on-write fault costs microseconds here, and most of a jail's time is them).
2. `gRPC echo`: the server's front alone. A grpc.aio server (in its own process) whose
   Execute answers OK at once, driven by the same load generator as `toolserver bench`:
   what gRPC, the client and one event loop cost per call.
3. `server` (with --target): the real server, split by where its CPU goes: the server
   process, the load generator, and the rest of the machine's busy time: its jails
   (zygotes and the calls they fork; counted this way because a worker that is
   recycled takes its CPU time with it).

    python benchmarks/floor_bench.py [--calls 4000] [--target 127.0.0.1:50051] [--first-slot 40]

Run as root (the jail runs as a slot user, as the server's do) on an otherwise idle
machine; the slots used must not be another server's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import toolserver  # noqa: F401  (turns gRPC fork support off before grpc is used)
from sandbox.calls import CallRequest
from sandbox.jail import Slot, jail_environment
from sandbox.slots import discover_slots, kill_slot_processes, prepare_scratch, processes_of_uid, running_as_root
from sandbox.worker import Zygote, program_argv
from toolclient.bench import bench_stream, bench_unary, machine_cores
from toolclient.bench_workloads import get_workload
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.grants import effective_limits
from toolserver.python.jails import slim_spec, zygote_spec
from toolserver.settings import Settings

TICK = os.sysconf("SC_CLK_TCK")
FORK_LOOP = (
    "import os\n"
    "while True:\n"
    "    b = os.read(0, 1)\n"
    "    if not b:\n"
    "        break\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        os.write(1, b)\n"
    "        os._exit(0)\n"
    "    os.waitpid(pid, 0)\n"
)


def stat_fields(pid: int) -> list[str]:
    """/proc/pid/stat after the command name: fields[0] is the state (field 3)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return ["?"] + ["0"] * 50


def process_cpu_s(pid: int, children: bool = True) -> float:
    """CPU seconds of pid (with its reaped children's when children)."""
    return sum(int(v) for v in stat_fields(pid)[11:15 if children else 13]) / TICK


def own_and_children(pid: int) -> tuple[float, float, int, int]:
    """CPU seconds of pid and of its reaped children, and the minor page faults of each."""
    fields = stat_fields(pid)
    own = (int(fields[11]) + int(fields[12])) / TICK
    children = (int(fields[13]) + int(fields[14])) / TICK
    return own, children, int(fields[7]), int(fields[8])


def uids_cpu_s(uids: set[int]) -> float:
    return sum(process_cpu_s(pid) for uid in uids for pid in processes_of_uid(uid))


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (/proc/stat: user, nice, system, irq, softirq)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / TICK


def row(name: str, calls: int, seconds: float, cpu: dict[str, float]) -> None:
    split = "  ".join(f"{part} {ms / calls * 1000:.3f}" for part, ms in cpu.items())
    total = sum(cpu.values()) / calls * 1000
    print(f"{name:<30} {calls / seconds:9.1f} calls/s   CPU ms/call: {split}  (sum {total:.3f})", flush=True)


def jailed_fork(slots: list[Slot], calls: int) -> None:
    """Fork round trips in one jail per slot, all at once."""
    spec = zygote_spec(Settings())
    processes = []
    for slot in slots:
        kill_slot_processes(slot)
        prepare_scratch(slot)
        argv = program_argv(spec, slot, [spec.interpreter, "-I", "-S", "-c", FORK_LOOP])
        processes.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, user=slot.uid,
                                          group=slot.gid, extra_groups=[], cwd="/", start_new_session=True,
                                          env=jail_environment(slot)))

    def drive(process: subprocess.Popen, count: int) -> None:
        for _ in range(count):
            os.write(process.stdin.fileno(), b"x")
            if os.read(process.stdout.fileno(), 1) != b"x":
                raise RuntimeError("the jailed loop did not answer")

    try:
        for process in processes:
            drive(process, 200)  # the jail is up and warm
        uids = {slot.uid for slot in slots}
        before, host_before, started = uids_cpu_s(uids), os.times(), time.perf_counter()
        threads = [threading.Thread(target=drive, args=(p, calls // len(processes))) for p in processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        host = os.times()
        done = calls // len(processes) * len(processes)
        row(f"jailed fork x{len(processes)} jails", done, seconds,
            {"jail": uids_cpu_s(uids) - before,
             "driver": host.user + host.system - host_before.user - host_before.system})
    finally:
        for process, slot in zip(processes, slots):
            process.kill()
            process.wait()
            kill_slot_processes(slot)


def zygotes_alone(slots: list[Slot], calls: int) -> None:
    """The server's slim workers, each driven by one task of one event loop."""
    settings = Settings()
    spec = slim_spec(zygote_spec(settings), settings.python.slim_preload)
    limits = effective_limits(pb.Limits(), settings)  # what a call that asks for nothing gets
    code = get_workload("trivial").programs[0].code
    each = calls // len(slots)

    async def drive(zygote: Zygote, count: int) -> None:
        for number in range(count):
            reply = await zygote.run(CallRequest(id=str(number), code=code, limits=limits,
                                                 profile=settings.python.import_profile), 30)
            if reply.outcome != "OK":
                raise RuntimeError(f"a call on a slim worker failed: {reply}")

    async def run() -> None:
        zygotes = []
        try:
            for slot in slots:
                kill_slot_processes(slot)
                prepare_scratch(slot)
                zygote = Zygote(spec, slot)
                await zygote.start()
                zygotes.append(zygote)
            await asyncio.gather(*(drive(zygote, 100) for zygote in zygotes))  # warm
            pids = [zygote.inside for zygote in zygotes]
            before, host_before, started = [own_and_children(pid) for pid in pids], os.times(), time.perf_counter()
            await asyncio.gather(*(drive(zygote, each) for zygote in zygotes))
            seconds = time.perf_counter() - started
            host = os.times()
            after = [own_and_children(pid) for pid in pids]
            done = each * len(zygotes)
            delta = [sum(a[i] - b[i] for a, b in zip(after, before)) for i in range(4)]
            row(f"slim workers alone x{len(zygotes)}", done, seconds,
                {"zygotes": delta[0], "calls' processes": delta[1],
                 "driver": host.user + host.system - host_before.user - host_before.system})
            print(f"{'':<30} page faults per call: zygote {delta[2] / done:.0f}, call's process {delta[3] / done:.0f}",
                  flush=True)
        finally:
            for zygote, slot in zip(zygotes, slots):
                await zygote.kill()
                kill_slot_processes(slot)

    asyncio.run(run())


ECHO_SERVER = """
import asyncio, sys
import toolserver
import grpc
from toolcontract.v1 import toolserver_pb2 as pb, toolserver_pb2_grpc as pb_grpc

class Echo(pb_grpc.ToolServerServicer):
    async def Execute(self, request, context):
        return pb.ExecuteResponse(request_id=request.request_id, outcome=pb.OK, stdout="2\\n")

    async def ExecuteStream(self, requests, context):
        async for request in requests:
            yield pb.ExecuteResponse(request_id=request.request_id, outcome=pb.OK, stdout="2\\n")

async def main():
    server = grpc.aio.server()
    pb_grpc.add_ToolServerServicer_to_server(Echo(), server)
    print(server.add_insecure_port("127.0.0.1:0"), flush=True)
    await server.start()
    await server.wait_for_termination()

asyncio.run(main())
"""


def measured(target: str, mode: str, calls: int, concurrency: int, parts: dict[str, int]) -> None:
    """One bench point against target, with the CPU of each pid in parts and of this process."""
    kind = {"unary": bench_unary, "stream": bench_stream}[mode]
    before = {name: process_cpu_s(pid, children=False) for name, pid in parts.items()}
    host_before = os.times()
    result = asyncio.run(kind(target, get_workload("trivial"), calls, concurrency))
    host = os.times()
    cpu = {name: process_cpu_s(pid, children=False) - before[name] for name, pid in parts.items()}
    cpu["load generator"] = host.user + host.system - host_before.user - host_before.system
    if result.failures:
        raise RuntimeError(f"{result.failures} calls failed")
    row(f"{mode} c={concurrency}", calls, result.seconds, cpu)


def grpc_echo(calls: int, levels: list[int]) -> None:
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)
    try:
        target = f"127.0.0.1:{echo.stdout.readline().strip()}"
        print(f"gRPC echo server at {target}")
        for mode in ("unary", "stream"):
            for c in levels:
                measured(target, mode, calls, c, {"echo server": echo.pid})
    finally:
        echo.terminate()
        echo.wait()


def server_pid(target: str) -> int:
    """The pid listening on target's port (ss -ltnp)."""
    port = target.rsplit(":", 1)[1]
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    for field in out.split("pid=")[1:]:
        return int(field.split(",")[0])
    raise RuntimeError(f"nothing listens on port {port}")


def real_server(target: str, calls: int, levels: list[int]) -> None:
    """The real server's split: its process, the load generator, the rest (its jails)."""
    pid = server_pid(target)
    print(f"server (pid {pid}) at {target}")
    for mode in ("unary", "stream"):
        for c in levels:
            busy_before = machine_busy_s()
            before, host_before = process_cpu_s(pid, children=False), os.times()
            result = asyncio.run({"unary": bench_unary, "stream": bench_stream}[mode](
                target, get_workload("trivial"), calls, c))
            host = os.times()
            server = process_cpu_s(pid, children=False) - before
            generator = host.user + host.system - host_before.user - host_before.system
            row(f"{mode} c={c}", calls, result.seconds,
                {"server": server, "jails": machine_busy_s() - busy_before - server - generator,
                 "load generator": generator})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("-c", "--concurrency", default="1,8,64,256")
    parser.add_argument("--first-slot", type=int, default=40, help="the first of the slot users for the jailed fork loops and the slim workers")
    parser.add_argument("--target", help="also split the CPU of the real server at this address")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    print(f"{machine_cores()} CPU cores")
    if running_as_root():
        sandbox = Settings().sandbox
        slots = discover_slots(sandbox.user_prefix, 2 * machine_cores(), Path(sandbox.scratch_root), args.first_slot)
        jailed_fork(slots[:1], args.calls)
        jailed_fork(slots[:machine_cores()], args.calls)
        zygotes_alone(slots, args.calls)
    else:
        print("jailed fork: skipped (needs root to jail as a slot user)")
    grpc_echo(args.calls, levels)
    if args.target:
        real_server(args.target, args.calls, levels)


if __name__ == "__main__":
    main()
