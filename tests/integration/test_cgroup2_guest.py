"""The cgroup v2 path on a real cgroup v2 kernel: `scripts/cgroup2-vm.sh` boots a Debian 12
guest (its cloud kernel, systemd on the unified hierarchy) under qemu with this checkout and
the host's /opt/toolserver shared, and runs `scripts/cgroup2-guest-job.sh` there: the slot
cgroups' unit tests, the whole-call and whole-session caps through a real server (its
self-test included) and the Lean REPLs' cap, in the delegated cgroup systemd gives a service.

Runs where qemu-system-x86_64 is installed and the server's venv is at /opt/toolserver
(scripts/test.sh installs qemu as root); the guest's image is built once and cached."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUEST_TESTS = ("test_on_cgroup_v2_a_slot_has_no_swap_and_a_process_cap",
               "test_on_cgroup_v2_the_server_moves_out_of_the_cgroup_it_hands_controllers_from",
               "test_on_cgroup_v2_a_server_whose_cgroup_lacks_the_memory_controller_refuses_if_required",
               "test_the_server_proves_the_whole_call_cap_on_the_hierarchy_it_found",
               "test_a_calls_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_sessions_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_bash_scripts_processes_past_its_cap_together_are_a_memory_limit",
               "test_a_repl_and_what_its_proofs_start_are_capped_together")

pytestmark = [pytest.mark.vm, pytest.mark.timeout(2400)]


def test_the_memory_caps_hold_on_a_cgroup_v2_guest():
    if os.geteuid() != 0 or shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs root and qemu-system-x86_64 (scripts/test.sh installs it)")
    if not Path("/opt/toolserver/venv/bin/python").exists():
        pytest.skip("the guest runs the server from the host's /opt/toolserver/venv (scripts/setup.sh)")
    run = subprocess.run(["bash", "scripts/cgroup2-vm.sh", "run", str(ROOT), "bash scripts/cgroup2-guest-job.sh"],
                         cwd=ROOT, capture_output=True, text=True, timeout=2300)
    output = run.stdout + run.stderr
    print(output[-6000:])
    assert run.returncode == 0, output[-6000:]
    assert re.search(r"/sys/fs/cgroup is cgroup2fs, this job in /system\.slice/vmrun\.service", output), output[-6000:]
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)?", output)
    assert summary and summary.group(2) is None, output[-3000:]  # every test ran on the v2 kernel, none skipped
    assert [name for name in GUEST_TESTS if not re.search(rf"::{name} PASSED", output)] == []
