"""The host's view of a process tree and of a jail's filesystem."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sandbox.hostside import cap_tmpfs, descendants, host_pid, jail_view, mount_point, namespace_pid


def test_descendants_include_grandchildren():
    tree = subprocess.Popen([sys.executable, "-c",
                             "import subprocess, sys, time\n"
                             "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(20)'])\n"
                             "print(child.pid, flush=True)\ntime.sleep(20)"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(tree.stdout.readline())
        assert grandchild in descendants(tree.pid)
        assert tree.pid not in descendants(tree.pid)
        assert host_pid(tree.pid, namespace_pid(grandchild)) == grandchild  # same pid namespace here
    finally:
        tree.kill()
        tree.wait()
        time.sleep(0.1)


def test_paths_of_a_process_in_the_hosts_namespace_are_plain():
    assert jail_view(os.getpid(), "/var/lib/x") == "/var/lib/x"
    assert namespace_pid(os.getpid()) == os.getpid()


def test_capping_needs_a_jail():
    """Never the host's own mounts: a process without a mount namespace of its own is refused."""
    with pytest.raises(OSError, match="no mount namespace"):
        cap_tmpfs(os.getpid(), "/tmp", 16, 100)


def test_mount_point_is_the_nearest_mount_of_the_paths_device():
    assert mount_point(os.getpid(), "/proc/self/status") == "/proc"
    assert mount_point(os.getpid(), "/") == "/"
    shm = mount_point(os.getpid(), "/dev/shm/some-file-that-need-not-exist/..")
    assert shm in ("/dev/shm", "/dev")
