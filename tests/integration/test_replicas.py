"""A client balancing across three real replicas: round-robin, sessions pinned to their
replica, calls refused by a draining replica retried elsewhere, a replica killed.

The three replicas serve the whole module, in the file's order: all three up, then the
first drained and stopped, then the second killed while the third serves on."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from sandbox.slots import discover_slots, kill_slot_processes
from tests.conftest import RunningServer
from tests.integration.test_metrics import scrape
from toolclient.client import ToolClient, ToolServerError

OK_CALLS = 'toolserver_calls_total{outcome="OK",tool="python"}'


def start_replicas(tmp_path) -> list[RunningServer]:
    return [RunningServer(tmp_path / f"r{i}", workers=1, sessions=1) for i in range(3)]


def balanced_client(replicas: list[RunningServer]) -> ToolClient:
    return ToolClient("ipv4:" + ",".join(r.target for r in replicas), timeout_s=60)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("replicas")
    for i in range(3):
        (tmp_path / f"r{i}").mkdir()
    running = start_replicas(tmp_path)
    ranges = [(replica.first_slot, replica.slot_count) for replica in running]
    yield running
    for replica in running:
        replica.stop()
    # a replica killed with SIGKILL leaves its jails to nobody: end them
    for first, count in ranges:
        for slot in discover_slots("tsbox", count, Path("/var/lib/toolserver/scratch"), first=first):
            kill_slot_processes(slot)


def test_calls_spread_over_replicas_and_sessions_stay_on_theirs(replicas):
    with balanced_client(replicas) as client:
        assert [client.run_python(f"{i} + 1").python.value for i in range(30)] == [str(i + 1) for i in range(30)]
        session = client.open_session()
        assert session.replica in {r.target for r in replicas}
        client.run_python("total = 0", session_id=session.session_id)
        for i in range(6):
            client.run_python(f"total += {i}", session_id=session.session_id)
        assert client.run_python("total", session_id=session.session_id).python.value == "15"
        client.close_session(session.session_id)
    served = [scrape(replica).get(OK_CALLS, 0) for replica in replicas]
    assert all(count >= 5 for count in served), served


def test_a_draining_replica_refusals_are_retried_elsewhere(replicas):
    with balanced_client(replicas) as client:
        client.run_python("1")
        replicas[0].process.send_signal(15)  # SIGTERM: drains, refuses new calls as not started
        time.sleep(0.5)
        results = [client.run_python(f"{i} * 3").python.value for i in range(30)]
    assert results == [str(i * 3) for i in range(30)]
    assert replicas[0].process.wait(60) == 0


def test_a_killed_replica_costs_only_its_calls_in_flight(replicas):
    answers: list[str] = []
    stop = threading.Event()

    def caller() -> None:
        with balanced_client(replicas) as client:
            while not stop.is_set():
                try:
                    answers.append(client.run_python("import time\ntime.sleep(0.05)\n'ok'").python.value)
                except ToolServerError as exc:
                    answers.append(exc.code.name)

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(2)
    replicas[1].process.kill()
    time.sleep(1)
    killed_at = len(answers)
    time.sleep(3)
    stop.set()
    for thread in threads:
        thread.join(60)
    after = answers[killed_at + 4:]  # calls that were already in flight when it died may fail
    assert after and all(answer == "'ok'" for answer in after), set(after)
    assert set(answers) <= {"'ok'", "UNAVAILABLE"}
