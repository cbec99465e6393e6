"""The self-test's first checks: the server can make a slot's scratch directory its own
and kill what the slot's uid runs. Where it cannot (a container without CHOWN, FOWNER or
KILL, a read-only root), the self-test reports a failed check instead of raising, so the
server stays up NOT_SERVING with the reason (tests/container/ shows it in a real one)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandbox.pidfds
from sandbox.jail import JailPolicy, Slot
from sandbox.selftest import check_slot_control, failed, run_self_test
from sandbox.slots import kill_slot_processes, processes_of_uid
from sandbox.worker import ZygoteSpec

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="slot users and killing their processes need root")


@needs_root
def test_a_slot_the_server_controls_passes(sandbox_slots):
    (slot,) = sandbox_slots(1)
    checks = check_slot_control(slot)
    assert [(c.name, c.ok) for c in checks] == [("slot_scratch", True), ("slot_processes_killed", True)]
    stat = slot.scratch.stat()
    assert (stat.st_uid, stat.st_mode & 0o777) == (slot.uid, 0o700)
    assert processes_of_uid(slot.uid) == []


@needs_root
def test_a_process_that_cannot_be_killed_is_a_failed_check_not_an_exception(sandbox_slots, monkeypatch):
    (slot,) = sandbox_slots(1)

    def refuse(pidfd: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(sandbox.pidfds.signal, "pidfd_send_signal", refuse)
    checks = check_slot_control(slot)
    monkeypatch.undo()
    (bad,) = failed(checks)
    assert bad.name == "slot_processes_killed" and "CAP_KILL" in bad.detail
    assert processes_of_uid(slot.uid) == []  # the probe's process ended by itself


def test_a_scratch_directory_that_cannot_be_made_is_a_failed_check(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    slot = Slot("probe", os.getuid(), os.getgid(), tmp_path / "file" / "probe")
    (bad,) = check_slot_control(slot)
    assert bad.name == "slot_scratch" and not bad.ok and "Not a directory" in bad.detail


async def test_the_self_test_returns_the_failed_check_without_starting_a_jail(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    slot = Slot("probe", os.getuid(), os.getgid(), tmp_path / "file" / "probe")
    spec = ZygoteSpec(interpreter=sys.executable, preload=(), jail=JailPolicy())
    checks = await run_self_test(dataclasses.replace(spec, guard=None), slot)
    assert [(c.name, c.ok) for c in checks] == [("slot_scratch", False)]
    assert not Path(slot.scratch).exists()


@needs_root
def test_a_zombie_of_the_slot_is_not_a_process_to_kill(sandbox_slots):
    """A process that exited but is not reaped yet runs nothing and cannot be killed: the
    kill of a slot signals the live process once and does not wait for the zombie's reaping."""
    (slot,) = sandbox_slots(1)
    parent = subprocess.Popen([sys.executable, "-c", "import os, sys, time\nif os.fork() == 0:\n    os._exit(0)\n"
                               "print(flush=True)\ntime.sleep(60)"], user=slot.uid, group=slot.gid, extra_groups=[],
                              stdout=subprocess.PIPE)
    try:
        parent.stdout.readline()  # its child has forked; it exits at once and stays a zombie
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and processes_of_uid(slot.uid) != [parent.pid]:
            time.sleep(0.01)
        assert processes_of_uid(slot.uid) == [parent.pid]
        assert kill_slot_processes(slot) == 1
        assert parent.wait(10) == -signal.SIGKILL
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
