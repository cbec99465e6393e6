"""The cgroup v2 path on a real cgroup v2 kernel: `scripts/cgroup2-vm.sh` boots a Debian 12
guest (its cloud kernel, systemd on the unified hierarchy) under qemu with this checkout and
the host's /opt/toolserver shared, and runs `scripts/cgroup2-guest-job.sh` there: the slot
cgroups' unit tests, the whole-call and whole-session caps through a real server (its
self-test included) and the Lean REPLs' cap, in the delegated cgroup systemd gives a service.

Runs where qemu-system-x86_64 is installed and the server's venv is at /opt/toolserver
(scripts/test.sh installs qemu as root); the guest's image is built once and cached. The
guest boots under emulation for two minutes, most of it waiting: where the run selects this
test, the guest starts as soon as the run has collected its tests (tests/conftest.py), runs
beside the rest of the suite, and the test reads its answer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GUEST_RUN

ROOT = Path(__file__).resolve().parents[2]
GUEST_TESTS = ("test_on_cgroup_v2_a_slot_has_no_swap_and_a_process_cap",
               "test_on_cgroup_v2_the_server_moves_out_of_the_cgroup_it_hands_controllers_from",
               "test_on_cgroup_v2_a_server_whose_cgroup_lacks_the_memory_controller_refuses_if_required",
               "test_the_server_proves_the_whole_call_cap_on_the_hierarchy_it_found",
               "test_a_calls_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_sessions_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_bash_scripts_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_repl_and_what_its_proofs_start_are_capped_together")

GUEST_TIMEOUT_S = 2300
pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]


def why_no_guest() -> str:
    """Why the guest cannot run here ("" where it can)."""
    if os.geteuid() != 0 or shutil.which("qemu-system-x86_64") is None:
        return "needs root and qemu-system-x86_64 (scripts/test.sh installs it)"
    if not Path("/opt/toolserver/venv/bin/python").exists():
        return "the guest runs the server from the host's /opt/toolserver/venv (scripts/setup.sh)"
    return ""


def start_guest(log: Path) -> subprocess.Popen[bytes]:
    """The guest's run, started now, its output going to log."""
    with open(log, "wb") as output:
        return subprocess.Popen(["bash", "scripts/cgroup2-vm.sh", "run", str(ROOT), "bash scripts/cgroup2-guest-job.sh"],
                                cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def guest_answer(run: subprocess.Popen[bytes], log: Path) -> tuple[int, str]:
    """The run's exit status and output, once it ends (killed past GUEST_TIMEOUT_S)."""
    try:
        run.wait(timeout=GUEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, 9)
        run.wait()
    return run.returncode, log.read_text(errors="replace")


def test_the_memory_caps_hold_on_a_cgroup_v2_guest(request, tmp_path):
    reason = why_no_guest()
    if reason:
        pytest.skip(reason)
    started = request.config.stash.get(GUEST_RUN, None)
    run, log = started if started is not None else (start_guest(tmp_path / "guest.log"), tmp_path / "guest.log")
    returncode, output = guest_answer(run, log)
    print(output[-6000:])
    assert returncode == 0, output[-6000:]
    assert re.search(r"/sys/fs/cgroup is cgroup2fs, this job in /system\.slice/vmrun\.service", output), output[-6000:]
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)?", output)
    assert summary and summary.group(2) is None, output[-3000:]  # every test ran on the v2 kernel, none skipped
    assert [name for name in GUEST_TESTS if not re.search(rf"::{name} PASSED", output)] == []
