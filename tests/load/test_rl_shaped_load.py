"""Load shaped like RL: bursts of calls that loop or sleep to their time limit, against a
real server. Every call is answered, each loop as the program's time-out, and the calls
that wait use no worker that another call could use."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.conftest import RunningServer, free_port
from tests.integration.test_metrics import scrape
from toolclient.client import AsyncToolClient, ToolClient
from toolcontract.v1 import toolserver_pb2 as pb

pytestmark = pytest.mark.slow
verl_utils = pytest.importorskip("verl.utils.reward_score.sandbox_fusion.utils", reason="verl is not installed")

BURST = 100
LOOP_TIMEOUT_S = 10  # verl's default; its client waits run_timeout + compile_timeout + 10 s


@pytest.fixture(scope="module")
def burst_server(tmp_path_factory):
    """Three base workers (one per class) and 97 spare slots to grow onto: 100 workers,
    enough to run 100 loops of 10 s at once, with verl's 30 s for the pools to grow even
    on a machine whose cores something else keeps busy."""
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("burst"), workers=1, slim_workers=1, extra_slots=97,
                            args=("--http-port", str(port)),
                            config="[python]\nmax_workers = 100\n[lean]\nenabled = false\n[cpp]\nenabled = false\n"
                                   "[bash]\nenabled = false\n")
    running.http = f"http://127.0.0.1:{port}"
    yield running
    running.stop()


def test_a_verl_burst_of_loops_is_answered_as_time_outs(burst_server):
    """What verl's own SandboxFusion test sends: 100 concurrent 10 s loops through
    check_correctness. Each is a time-out (-3), none an API error (-1), and no request
    was answered 5xx (which verl would retry and hide) but the designed answer to a call
    that cannot start before its client gives up: a 504, which only a machine whose cores
    something else keeps busy gives while 100 loops hold them and the pools grow."""
    url = burst_server.http + "/run_code"

    def loop(_: int):
        return verl_utils.check_correctness(url, {"inputs": [""], "outputs": ["done"]}, "while True:\n    pass\n",
                                            timeout=LOOP_TIMEOUT_S)

    with ThreadPoolExecutor(BURST) as threads:  # each within verl's own deadline, or it says -1
        outcomes = list(threads.map(loop, range(BURST)))
    assert [results for results, _ in outcomes] == [[-3]] * BURST
    assert all(metadata[0]["status"] == "timeout" for _, metadata in outcomes)
    samples = scrape(burst_server)
    refused = {name: value for name, value in samples.items()
               if name.startswith("toolserver_front_requests_total") and 'status="5' in name
               and 'status="504"' not in name}
    assert not refused, refused
    assert samples['toolserver_front_requests_total{front="sandbox_fusion",status="200"}'] == BURST
    assert samples["toolserver_python_workers_grown"] >= 40


def test_sleeping_calls_do_not_keep_the_others_waiting(burst_server):
    """16 calls that sleep 2 s on 3 base workers: the ones behind them go to idle workers
    of other classes and to extra ones at once, so all end in about one sleep."""

    async def sixteen() -> list[pb.ExecuteResponse]:
        async with AsyncToolClient(burst_server.target) as client:
            return await asyncio.gather(*(client.run_python("import time\ntime.sleep(2)\nprint('up')", timeout_ms=10_000)
                                          for _ in range(16)))

    began = time.monotonic()
    responses = asyncio.run(sixteen())
    elapsed = time.monotonic() - began
    assert [response.stdout for response in responses] == ["up\n"] * 16
    assert elapsed < 2 * 2.0, f"16 sleeps of 2 s took {elapsed:.1f} s"
    assert all(response.elapsed_us >= 2_000_000 for response in responses)


def test_a_time_limit_counts_from_the_program_start_and_the_wait_is_reported(burst_server):
    """A call queued behind loops still gets its whole time limit, and says how long it waited."""

    async def behind_loops() -> tuple[list[pb.ExecuteResponse], pb.ExecuteResponse]:
        async with AsyncToolClient(burst_server.target) as client:
            loops = [asyncio.ensure_future(client.run_python("while True: pass", timeout_ms=3000)) for _ in range(50)]
            await asyncio.sleep(0.5)
            late = await client.run_python("import time\ntime.sleep(2.5)\nprint('whole')", timeout_ms=3000)
            return await asyncio.gather(*loops), late

    loops, late = asyncio.run(behind_loops())
    assert all(loop.outcome == pb.TIMEOUT for loop in loops)
    assert all(3.0 <= loop.elapsed_us / 1e6 < 3.3 for loop in loops), sorted(loop.elapsed_us for loop in loops)[-3:]
    assert late.outcome == pb.OK and late.stdout == "whole\n"
    assert late.queued_us > 0


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    """Two workers (slim, warm), no slot to grow onto, and calls of up to 30 s."""
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("small"), workers=1, slim_workers=1, scientific_workers=0,
                            args=("--http-port", str(port)),
                            config="[lean]\nenabled = false\n[limits]\ntimeout_ms = 30000\n")
    running.http = f"http://127.0.0.1:{port}"
    yield running
    running.stop()


def test_a_call_that_cannot_run_before_its_client_gives_up_is_504_with_retry_after(small_server):
    """Both workers hold 30 s loops: a /run_code of run_timeout 1 s (its client waits 11 s)
    cannot start in time. It is refused once its last start time passes, not run for
    nobody, and says when to come back."""
    with ThreadPoolExecutor(2) as threads, ToolClient(small_server.target) as client:
        loops = [threads.submit(client.run_python, code, timeout_ms=30_000)
                 for code in ("while True: pass", "import numpy\nwhile True: pass")]
        time.sleep(1.0)
        assert not any(loop.done() for loop in loops)
        began = time.monotonic()
        refused = requests.post(small_server.http + "/run_code", timeout=30,
                                json={"code": "print(1)", "run_timeout": 1, "compile_timeout": 0})
        waited = time.monotonic() - began
        assert refused.status_code == 504 and refused.json()["status"] == "SandboxError"
        assert 7.0 < waited < 11.0, waited
        assert 10 <= int(refused.headers["Retry-After"]) <= 30
        assert not any(loop.done() for loop in loops)
