"""Faults injected under load: workers killed or stopped, a session kernel killed,
scratch filled, clients that go away mid-call. Nothing may be lost and the server
recovers by itself."""

from __future__ import annotations

import asyncio
import pwd
import signal
import threading
import time

import grpc
import pytest

from sandbox.slots import processes_of_uid, signal_processes_of_uid
from tests.conftest import RunningServer
from tests.integration.test_metrics import scrape
from toolclient.client import AsyncToolClient, NotFound, ToolServerError, python_request
from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc

WORKERS = 3


@pytest.fixture(scope="module")
def fault_server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("faults"), workers=WORKERS, sessions=1,
                            config="[python]\nworker_grace_s = 2.0\n")
    yield running
    running.stop()


def slot_uid(slot_index: int) -> int:
    return pwd.getpwnam(f"tsbox{slot_index}").pw_uid


def zygote_pids(slot_index: int) -> list[int]:
    """The jailed interpreters (zygote and call) of a worker slot."""
    uid = slot_uid(slot_index)
    pids = []
    for pid in processes_of_uid(uid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"python" in handle.read().split(b"\0")[0]:
                    pids.append(pid)
        except OSError:
            continue
    return pids


def wait_for_full_pool(client, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.server_info().tools[0].detail.count(f"{WORKERS} workers, {WORKERS} idle") == 2:  # warm, slim
            return
        time.sleep(0.2)
    raise AssertionError(client.server_info().tools[0].detail)


@pytest.mark.slow
def test_workers_killed_and_stopped_under_load_lose_no_call(fault_server):
    answers: list[int] = []
    stop = threading.Event()

    def caller() -> None:
        with fault_server.client() as client:
            while not stop.is_set():
                answers.append(client.run_python("import time\ntime.sleep(0.02)\n6 * 7", timeout_ms=1000).outcome)

    threads = [threading.Thread(target=caller) for _ in range(6)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    worker_slots = fault_server.worker_slot_indexes()
    for slot_index in worker_slots:  # kill every worker's processes once, warm and slim
        signal_processes_of_uid(slot_uid(slot_index), signal.SIGKILL, zygote_pids(slot_index))
        time.sleep(0.5)
    # and hang a slim worker, where these calls run: the pool must see it overrun
    signal_processes_of_uid(slot_uid(worker_slots[-1]), signal.SIGSTOP, zygote_pids(worker_slots[-1]))
    time.sleep(6)
    stop.set()
    for thread in threads:
        thread.join(60)
    assert answers and set(answers) <= {pb.OK, pb.CRASHED}, set(answers)
    assert answers.count(pb.OK) > 10 * answers.count(pb.CRASHED)
    with fault_server.client() as client:
        wait_for_full_pool(client)
        assert [client.run_python("1 + 1").python.value for _ in range(6)] == ["2"] * 6
        assert scrape(fault_server)["toolserver_sandbox_restarts"] >= WORKERS


def test_a_killed_kernel_ends_its_session_and_a_new_one_works(fault_server):
    with fault_server.client() as client:
        session = client.open_session()
        client.run_python("x = 1", session_id=session.session_id)
        # every process of the session's slot: some end on their own as their jail goes
        assert signal_processes_of_uid(slot_uid(fault_server.first_slot + 1 + WORKERS), signal.SIGKILL)
        time.sleep(0.5)
        try:
            reply = client.run_python("x", session_id=session.session_id)
            assert reply.outcome == pb.CRASHED
        except NotFound:
            pass
        with pytest.raises(NotFound):
            client.run_python("x", session_id=session.session_id)
        fresh = client.open_session()
        assert client.run_python("2 + 2", session_id=fresh.session_id).python.value == "4"
        client.close_session(fresh.session_id)


def test_clients_that_go_away_mid_call_leave_nothing_behind(fault_server):
    async def impatient() -> None:
        async with AsyncToolClient(fault_server.target) as client:
            calls = [client.execute(python_request("import time\ntime.sleep(1)"), timeout_s=0.2) for _ in range(20)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert all(isinstance(r, ToolServerError) for r in results)

    asyncio.run(impatient())
    with grpc.insecure_channel(fault_server.target) as channel:
        stream = pb_grpc.ToolServerStub(channel).ExecuteStream(
            iter([python_request("import time\ntime.sleep(1)", request_id=str(i)) for i in range(10)]), timeout=30)
        time.sleep(0.3)  # the calls reach the workers, then the caller hangs up
        stream.cancel()
    with fault_server.client() as client:
        wait_for_full_pool(client)
        deadline = time.monotonic() + 30
        while scrape(fault_server)["toolserver_calls_in_flight"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert scrape(fault_server)["toolserver_calls_in_flight"] == 0
        assert client.run_python("3 * 3").python.value == "9"


SCRATCH_FLOOD = ("block = b'x' * (1 << 20)\nfor i in range(4000):\n"
                 "    with open(f'f{i}', 'wb') as f:\n        for _ in range(8):\n            f.write(block)")


@pytest.mark.slow
def test_scratch_filled_under_load_stops_only_the_flooding_calls(fault_server):
    answers: list[int] = []
    floods: list[pb.ExecuteResponse] = []
    stop = threading.Event()

    def caller() -> None:
        with fault_server.client() as client:
            while not stop.is_set():
                answers.append(client.run_python("sum(range(1000))").outcome)

    def flooder() -> None:
        with fault_server.client() as client:
            floods.append(client.run_python(SCRATCH_FLOOD, timeout_ms=10000))

    threads = [threading.Thread(target=caller) for _ in range(4)] + [threading.Thread(target=flooder) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads[4:]:
        thread.join(60)
    stop.set()
    for thread in threads[:4]:
        thread.join(60)
    assert len(floods) == 3 and all(f.outcome == pb.ERROR and "scratch space limit" in f.error for f in floods), \
        [(pb.Outcome.Name(f.outcome), f.error) for f in floods]
    assert answers and set(answers) == {pb.OK}
    with fault_server.client() as client:
        wait_for_full_pool(client)


def test_streams_meet_the_bounded_queue_too(tmp_path):
    """Backpressure: past python.max_queue a stream's calls are answered at once
    (CRASHED, RESOURCE_EXHAUSTED: the caller may retry), never queued without bound."""
    server = RunningServer(tmp_path, workers=1, config="[python]\nmax_queue = 2\n")
    try:
        with server.client() as client:
            requests = [python_request("import time\ntime.sleep(0.5)\n'done'", request_id=str(i)) for i in range(8)]
            responses = client.run_many(requests)
        done = [r for r in responses if r.outcome == pb.OK]
        refused = [r for r in responses if r.outcome == pb.CRASHED]
        assert len(done) + len(refused) == 8 and len(done) >= 3 and refused
        assert all(r.error.startswith("RESOURCE_EXHAUSTED: python queue is full") for r in refused)
    finally:
        server.stop()
