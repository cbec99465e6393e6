"""Slot memory cgroups on this host's real hierarchy: cgroup v1 here, cgroup v2 in the guest
scripts/cgroup2-vm.sh boots (skipped where there is none)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.cgroups import GROUP, SERVER_LEAF, V2_ROOT, CgroupUnavailable, MemoryCgroups, SlotCgroups

FORK_UNTIL_REFUSED = """
import os, time
made = 0
while made < 100:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(1)
        time.sleep(30)
        os._exit(0)
    made += 1
print(made)
"""
HOG = ("import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\ntime.sleep(30)")


@pytest.fixture
def cgroup():
    try:
        groups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    group = groups.for_slot(f"unit-test-{os.getpid()}")
    yield group
    group.remove()


def test_a_process_past_the_cap_is_ended_and_counted(cgroup):
    cgroup.set_limit_mb(64)
    before = cgroup.oom_kills()
    hog = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + HOG], stdin=subprocess.PIPE)
    try:
        cgroup.adopt([hog.pid])
        hog.stdin.write(b"g")
        hog.stdin.flush()
        assert hog.wait(30) == -signal.SIGKILL
    finally:
        if hog.poll() is None:
            hog.kill()
            hog.wait()
    assert cgroup.oom_kills() == before + 1


def limit_bytes(cgroup) -> int:
    """The cgroup's memory cap as the kernel reads it back (v2's "max": no cap)."""
    text = (cgroup.path / cgroup.jail_files()["limit"]).read_text().strip()
    return 1 << 62 if text == "max" else int(text)


def peak_bytes(cgroup) -> int:
    return int((cgroup.path / ("memory.peak" if cgroup.hierarchy == "v2" else "memory.max_usage_in_bytes")).read_text())


def test_limits_go_up_and_down_and_off(cgroup):
    for megabytes in (128, 512, 96, 0, 256):
        cgroup.set_limit_mb(megabytes)
        value = limit_bytes(cgroup)
        assert value == (megabytes << 20) if megabytes else value > 1 << 50


def test_gone_processes_are_skipped_and_an_empty_cgroup_is_removed(cgroup):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    cgroup.adopt([gone.pid])  # exited and reaped: nothing to move
    assert (cgroup.path / "cgroup.procs").read_text() == ""
    cgroup.remove()
    assert not cgroup.path.exists()


def test_a_pool_makes_each_slots_cgroup_once_and_removes_them_all():
    assert SlotCgroups(None).of("tsbox0") is None  # no cgroups: processes are capped alone
    try:
        groups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    pool = SlotCgroups(groups)
    name = f"unit-pool-{os.getpid()}"
    first = pool.of(name)
    assert first is not None and pool.of(name) is first and first.path.is_dir()
    pool.remove_all()
    assert not first.path.exists()


def test_all_but_the_kept_processes_are_killed_and_the_charge_is_reset(cgroup):
    """What recycling a session's jail does to its slot's cgroup: the jail's own processes
    stay, every other is killed, and the peak the last session reached is forgotten."""
    kept = subprocess.Popen(["sleep", "60"])
    hog = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + HOG], stdin=subprocess.PIPE)
    others = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    try:
        cgroup.adopt([kept.pid, hog.pid, *(other.pid for other in others)])
        hog.stdin.write(b"g")
        hog.stdin.flush()
        while peak_bytes(cgroup) < 150 << 20:
            assert hog.poll() is None
        assert cgroup.kill_all_but(frozenset({kept.pid}))
        assert [process.wait(10) for process in (hog, *others)] == [-signal.SIGKILL] * 4
        assert cgroup.pids() == [kept.pid] and kept.poll() is None
        cgroup.reset_charge()
        assert cgroup.usage_mb() < 50
        if cgroup.hierarchy == "v1":  # v2 keeps its peak for the cgroup's life
            assert peak_bytes(cgroup) < 50 << 20
            assert int((cgroup.path / "memory.failcnt").read_text()) == 0
    finally:
        for process in (kept, hog, *others):
            if process.poll() is None:
                process.kill()
                process.wait()


def v2_slot(cgroup):
    if cgroup.hierarchy != "v2":
        pytest.skip("cgroup v2 only (scripts/cgroup2-vm.sh runs it in a v2 guest)")
    return cgroup


def test_on_cgroup_v2_a_slot_has_no_swap_and_a_process_cap(cgroup):
    slot = v2_slot(cgroup)
    assert (slot.path / "memory.swap.max").read_text().strip() == "0"
    assert (slot.path / "pids.max").read_text().strip() == "max"  # made with no cap (max_processes 0)
    groups = MemoryCgroups.open()
    capped = groups.for_slot(f"unit-pids-{os.getpid()}", max_processes=8)
    forker = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + FORK_UNTIL_REFUSED],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        capped.adopt([forker.pid])
        out, _ = forker.communicate(b"g", timeout=60)
    finally:
        capped.kill_all()
        capped.remove()
    assert int(out) == 7  # itself and 7 children: pids.max counts every process (and thread) of the slot


def test_on_cgroup_v2_the_server_moves_out_of_the_cgroup_it_hands_controllers_from():
    """v2 lets no cgroup but the root both hold processes and give its children controllers:
    the processes of the server's own cgroup (a delegated one) move into its child
    `server`, and the slots' parent gets the memory and pids controllers."""
    try:
        groups = MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")
    if groups.kind.hierarchy != "v2":
        pytest.skip("cgroup v2 only (scripts/cgroup2-vm.sh runs it in a v2 guest)")
    own = V2_ROOT / Path("/proc/self/cgroup").read_text().strip().split("::", 1)[1].lstrip("/")
    if own != V2_ROOT:  # the host's root cgroup may hold processes and hand controllers at once
        assert own.name == SERVER_LEAF, own
        own = own.parent
    assert groups.parent == own / GROUP
    assert {"memory", "pids"} <= set((groups.parent / "cgroup.subtree_control").read_text().split())
    assert "cgroup v2" in groups.description and "pids.max" in groups.description


OPEN_AS = """
import dataclasses, sys
from toolserver.server import open_memory_cgroups
from toolserver.settings import load_settings
settings = load_settings()
settings = dataclasses.replace(settings, sandbox=dataclasses.replace(settings.sandbox, memory_cgroup=sys.argv[1]))
cgroups, check = open_memory_cgroups(settings)
print(cgroups is None, check.ok, check.detail)
"""


def test_on_cgroup_v2_a_server_whose_cgroup_lacks_the_memory_controller_refuses_if_required(cgroup):
    """A server started in a cgroup that was handed no memory controller (here: a child of
    a cgroup that enables none for its children) has no memory cgroups: "required" fails
    the check (the server then refuses to serve), "auto" serves with per-process limits."""
    slot = v2_slot(cgroup)
    inner = slot.path.parent / f"unit-nomem-{os.getpid()}"
    bare = inner / "bare"
    bare.mkdir(parents=True)
    try:
        answers = {}
        for mode in ("required", "auto"):
            run = subprocess.run(["sh", "-c", f'echo 0 > {bare}/cgroup.procs && exec "$@"', "sh",
                                  sys.executable, "-c", OPEN_AS, mode], capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr
            answers[mode] = run.stdout
    finally:
        bare.rmdir()
        inner.rmdir()
    assert answers["required"].startswith("True False required but unavailable: the memory controller is not "
                                          "delegated"), answers
    assert answers["auto"].startswith("True True unavailable ("), answers
