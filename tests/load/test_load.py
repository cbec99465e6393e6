"""Load and soak: many calls at high concurrency, python and search mixed, with hostile
code among them; then the python calls again through SandboxFusion's /run_code, among
hostile HTTP clients (slow, idle, oversized, hanging up).

Every call must be answered exactly once with the right result, and the server must
not grow in memory or open descriptors over the run. Marked slow; CI runs it.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import aiohttp
import pytest

from tests.conftest import RunningServer, free_port
from toolclient.client import AsyncToolClient, python_request
from toolcontract.v1 import toolserver_pb2 as pb

CALLS = 20_000
HTTP_CALLS = 5_000  # through /run_code, among hostile clients (the 20,000 gRPC calls hold the workers to no growth)
CONCURRENCY = 256
HOSTILE_SHARE = 0.05
SEARCH_SHARE = 0.10
QUERIES = ["greatest common divisor", "prime factorization of an integer", "binomial coefficient",
           "matrix determinant", "solve a polynomial equation", "least common multiple", "continued fraction"]
HOSTILE = [  # code, limits, the outcome it must get
    ("while True:\n    pass", {"timeout_ms": 300}, pb.TIMEOUT),
    ("b = bytearray(2 * 1024**3)", {"memory_mb": 64}, pb.MEMORY_LIMIT),
    ("import os\nos.kill(os.getppid(), 9)", {}, pb.CRASHED),  # its worker: lost and replaced
    ("import socket\nsocket.create_connection(('1.1.1.1', 53))", {}, pb.ERROR),  # the jail has no network
    ("print('x' * 10**6)", {"max_output_bytes": 1024}, pb.OUTPUT_LIMIT),  # stopped at the cut
    ("raise SystemExit(3)", {}, pb.ERROR),
]


def plan(seed: int = 7, search_share: float = SEARCH_SHARE) -> list[tuple[pb.ExecuteRequest, int, str]]:
    """(request, expected outcome, expected value) for every call; a search call's
    expected value is its query, whose top hit is compared with a reference answer."""
    rng = random.Random(seed)
    calls = []
    for number in range(CALLS):
        request_id = f"c{number}"
        draw = rng.random()
        if draw < search_share:
            query = rng.choice(QUERIES)
            calls.append((pb.ExecuteRequest(request_id=request_id, search=pb.SearchCall(query=query)), pb.OK, query))
        elif draw < search_share + HOSTILE_SHARE:
            code, limits, outcome = rng.choice(HOSTILE)
            calls.append((python_request(code, request_id=request_id, **limits), outcome, ""))
        else:
            a, b = rng.randrange(10**6), rng.randrange(10**6)
            calls.append((python_request(f"{a} * {b}", request_id=request_id), pb.OK, str(a * b)))
    return calls


def footprint(pid: int) -> tuple[int, int]:
    """(resident kB, open descriptors) of a process."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def load_server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("load"), workers=4, args=("--http-port", str(free_port())),
                            config="[python]\nmax_queue = 100000\n")
    yield running
    running.stop()


async def run_all(target: str, calls: list[tuple[pb.ExecuteRequest, int, str]]) -> dict[str, list[pb.ExecuteResponse]]:
    """Half the callers use unary calls, half share streams; every answer is kept."""
    answers: dict[str, list[pb.ExecuteResponse]] = {}
    queue: asyncio.Queue = asyncio.Queue()
    for call in calls:
        queue.put_nowait(call[0])
    async with AsyncToolClient(target, timeout_s=300) as client:
        async def unary_caller() -> None:
            while not queue.empty():
                request = queue.get_nowait()
                response = await client.execute(request)
                answers.setdefault(response.request_id, []).append(response)

        async def stream_caller() -> None:
            while not queue.empty():
                batch = [queue.get_nowait() for _ in range(min(16, queue.qsize()))]
                for response in await client.run_many(batch):
                    answers.setdefault(response.request_id, []).append(response)

        workers = [unary_caller() for _ in range(CONCURRENCY // 2)]
        workers += [stream_caller() for _ in range(CONCURRENCY // 32)]
        await asyncio.gather(*workers)
    return answers


@pytest.mark.slow
def test_every_call_answered_once_with_the_right_result_and_no_growth(load_server):
    calls = plan()
    warm = asyncio.run(run_all(load_server.target, calls[:500]))
    assert len(warm) == 500
    before = footprint(load_server.process.pid)
    started = time.monotonic()
    answers = asyncio.run(run_all(load_server.target, calls))
    seconds = time.monotonic() - started
    after = footprint(load_server.process.pid)
    assert len(answers) == CALLS and all(len(replies) == 1 for replies in answers.values())
    with load_server.client() as client:  # ranking is deterministic: one reference answer a query
        top_hit = {query: client.execute(pb.ExecuteRequest(search=pb.SearchCall(query=query))).search.hits[0].id
                   for query in QUERIES}
    wrong = []
    for request, outcome, value in calls:
        response = answers[request.request_id][0]
        if request.WhichOneof("call") == "search":
            right = response.outcome == pb.OK and response.search.hits[0].id == top_hit[value]
        else:
            right = response.outcome == outcome and (not value or response.python.value == value)
        if not right:
            wrong.append((str(request)[:60], pb.Outcome.Name(response.outcome), response.error[:80]))
    assert not wrong, f"{len(wrong)} wrong answers, e.g. {wrong[:5]}"
    print(f"\n{CALLS} calls at {CONCURRENCY} callers in {seconds:.1f} s ({CALLS / seconds:.0f} calls/s); "
          f"server RSS {before[0]} -> {after[0]} kB, descriptors {before[1]} -> {after[1]}")
    assert after[0] - before[0] < 64 * 1024, "server memory grew by more than 64 MB"
    assert after[1] - before[1] < 16, "server descriptors grew"


# What /run_code answers each hostile program (HOSTILE's outcomes, as SandboxFusion says them; a program
# that kills its worker is its own failure, as the signal ending python3 would be).
HTTP_STATUS = {pb.TIMEOUT: ("Failed", "TimeLimitExceeded"), pb.MEMORY_LIMIT: ("Failed", "Finished"),
               pb.CRASHED: ("Failed", "Finished"), pb.ERROR: ("Failed", "Finished"), pb.OK: ("Success", "Finished"),
               # /run_code has no field for an output cap: the megabyte fits the default 16 MiB
               pb.OUTPUT_LIMIT: ("Success", "Finished")}


def run_code_body(request: pb.ExecuteRequest) -> dict:
    """/run_code's body for a python call of plan(): a value is printed, limits become its fields."""
    call, limits = request.python, request.limits
    code = call.code if not call.code.replace(" ", "").replace("*", "").isdigit() else f"print({call.code})"
    body: dict = {"code": code, "language": "python"}
    if limits.timeout_ms:
        body["run_timeout"] = limits.timeout_ms / 1000
    if limits.memory_mb:
        body["memory_limit_MB"] = limits.memory_mb
    return body


class HostileClients:
    """Clients that attack the HTTP port while honest calls run: slow heads, idle
    connections, oversized bodies, callers that hang up on a running call. Counts what
    the server answered them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: dict[str, list[int]] = {"slow": [], "idle": [], "oversized": [], "hang_up": []}
        self.stopping = asyncio.Event()

    async def run(self) -> None:
        loops = ([self.slow() for _ in range(20)] + [self.idle() for _ in range(4)]
                 + [self.oversized() for _ in range(2)] + [self.hang_up() for _ in range(4)])
        await asyncio.gather(*loops)

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def answer(self, reader: asyncio.StreamReader) -> int:
        """The status the server sent before closing (0: it closed without one)."""
        try:
            line = await asyncio.wait_for(reader.readline(), 60)
        except (ConnectionError, asyncio.TimeoutError):
            return 0
        return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0

    async def sending(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pieces: list[bytes],
                      pause_s: float) -> int:
        """Sends pieces with pause_s between them until the server answers; its status."""
        answered = asyncio.ensure_future(self.answer(reader))
        try:
            for piece in pieces:
                if answered.done():
                    break
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(pause_s)
        except ConnectionError:
            pass
        status = await answered
        writer.close()
        return status

    async def slow(self) -> None:
        while not self.stopping.is_set():
            reader, writer = await self.connect()
            head = [b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\n"] + [b"X"] * 30  # its head never completes
            self.answers["slow"].append(await self.sending(reader, writer, head, 1.0))

    async def idle(self) -> None:
        while not self.stopping.is_set():
            connections = [await self.connect() for _ in range(100)]
            statuses = await asyncio.gather(*(self.answer(reader) for reader, _ in connections))
            self.answers["idle"].extend(statuses)  # 0: closed, sending nothing
            for _, writer in connections:
                writer.close()

    async def oversized(self) -> None:
        head = (b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b"a" * (1 << 20))
        while not self.stopping.is_set():
            reader, writer = await self.connect()
            self.answers["oversized"].append(await self.sending(reader, writer, [head] + [chunk] * 50, 0.0))
            await asyncio.sleep(0.5)

    async def hang_up(self) -> None:
        body = b'{"code": "import time\\ntime.sleep(8)\\nprint(1)", "run_timeout": 9}'
        while not self.stopping.is_set():
            reader, writer = await self.connect()
            writer.write(b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await asyncio.sleep(0.5)
            writer.close()
            self.answers["hang_up"].append(0)


async def run_all_http(url: str, port: int, calls: list[tuple[pb.ExecuteRequest, int, str]]
                       ) -> tuple[dict[str, list[dict]], HostileClients]:
    """Every call through /run_code from CONCURRENCY // 2 callers, among hostile clients."""
    answers: dict[str, list[dict]] = {}
    queue: asyncio.Queue = asyncio.Queue()
    for request, _, _ in calls:
        queue.put_nowait(request)
    hostile = HostileClients(port)
    attacks = asyncio.ensure_future(hostile.run())
    connector = aiohttp.TCPConnector(limit=CONCURRENCY // 2)
    async with aiohttp.ClientSession(url, connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as session:
        async def caller() -> None:
            while not queue.empty():
                request = queue.get_nowait()
                async with session.post("/run_code", json=run_code_body(request)) as reply:
                    assert reply.status == 200, await reply.text()
                    answers.setdefault(request.request_id, []).append(await reply.json())

        await asyncio.gather(*(caller() for _ in range(CONCURRENCY // 2)))
    hostile.stopping.set()
    await asyncio.wait_for(attacks, 120)
    return answers, hostile


@pytest.mark.slow
def test_every_http_call_is_answered_among_hostile_clients(load_server):
    port = int(load_server.output().split("HTTP fronts on http://127.0.0.1:")[1].split(":")[0])
    url = f"http://127.0.0.1:{port}"
    calls = plan(seed=11, search_share=0.0)[:HTTP_CALLS]
    asyncio.run(run_all_http(url, port, calls[:200]))  # warm
    time.sleep(6)  # the idle connections of the warm-up close
    before = footprint(load_server.process.pid)
    started = time.monotonic()
    answers, hostile = asyncio.run(run_all_http(url, port, calls))
    seconds = time.monotonic() - started
    time.sleep(6)  # http.idle_timeout_s: what the attackers left open closes
    after = footprint(load_server.process.pid)
    assert len(answers) == len(calls) and all(len(replies) == 1 for replies in answers.values())
    wrong = []
    for request, outcome, value in calls:
        answer = answers[request.request_id][0]
        status, run_status = HTTP_STATUS[outcome]
        run = answer.get("run_result") or {}
        right = answer["status"] == status and run.get("status") == run_status
        if value:
            right = right and run.get("stdout") == f"{value}\n"
        if not right:
            wrong.append((request.python.code[:40], answer["status"], run.get("status"), answer.get("message", "")[:80]))
    assert not wrong, f"{len(wrong)} wrong answers, e.g. {wrong[:5]}"
    refused = {kind: sorted(set(statuses)) for kind, statuses in hostile.answers.items()}
    print(f"\n{len(calls)} /run_code calls at {CONCURRENCY // 2} callers among hostile clients in {seconds:.1f} s "
          f"({len(calls) / seconds:.0f} calls/s); hostile clients answered {refused}; server RSS {before[0]} -> "
          f"{after[0]} kB, descriptors {before[1]} -> {after[1]}")
    assert set(hostile.answers["slow"]) <= {408} and hostile.answers["slow"]
    # 413, or a reset where the refusal's close met the body still coming (the kernel resets a
    # connection closed with unread data, and the reset can overtake the answer)
    assert set(hostile.answers["oversized"]) <= {413, 0} and 413 in hostile.answers["oversized"]
    assert set(hostile.answers["idle"]) == {0}  # closed, having sent nothing
    assert after[0] - before[0] < 128 * 1024, "server memory grew by more than 128 MB"
    assert after[1] - before[1] < 16, "server descriptors grew"
