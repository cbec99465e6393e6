import os
import subprocess
from pathlib import Path

import pytest

from sandbox.jail import JailPolicy, Slot, firejail_path, jail_command, jail_environment
from sandbox.slots import prepare_scratch

SLOT = Slot("tsbox3", 1003, 1003, Path("/var/lib/toolserver/scratch/tsbox3"))


def test_command_line_has_every_isolation_flag():
    argv = jail_command(JailPolicy(hidden_paths=("/srv/project",)), SLOT, ["/usr/bin/python3", "-I"])
    for flag in ("--net=none", "--caps.drop=all", "--nonewprivs", "--noroot", "--seccomp",
                 "--restrict-namespaces", "--ipc-namespace", "--hostname=sandbox", "--private-dev", "--private-tmp", "--read-only=/",
                 f"--private={SLOT.scratch}", f"--read-write={SLOT.scratch}", "--blacklist=/srv/project",
                 "--rlimit-nproc=64"):
        assert flag in argv
    assert argv[-2:] == ["/usr/bin/python3", "-I"]
    assert not any(a.startswith("--timeout") for a in argv), "firejail --timeout costs ~2 s per call"
    assert "--" not in argv, "firejail runs the program through the user's shell after --"


def test_read_only_comes_before_the_scratch_exception():
    argv = jail_command(JailPolicy(), SLOT, ["/bin/true"])
    assert argv.index("--read-only=/") < argv.index(f"--read-write={SLOT.scratch}")


def test_memory_cap_only_when_set():
    assert not any(a.startswith("--rlimit-as") for a in jail_command(JailPolicy(), SLOT, ["/bin/true"]))
    assert f"--rlimit-as={512 * 1024 * 1024}" in jail_command(JailPolicy(memory_mb=512), SLOT, ["/bin/true"])


def test_environment_carries_nothing_of_the_server(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    env = jail_environment(SLOT)
    assert "SECRET_TOKEN" not in env
    assert env["HOME"] == str(SLOT.scratch) and env["OPENBLAS_NUM_THREADS"] == "1"


def test_the_hosts_x11_and_sound_sockets_do_not_reach_a_jails_tmp(sandbox_slots, tmp_path):
    """firejail's --private-tmp carries the host's /tmp/.X11-unix (made by systemd on every
    boot) and /tmp/pulse-* into the jail; the jail's /tmp starts empty all the same."""
    if os.geteuid() != 0 or firejail_path(JailPolicy()) is None:
        pytest.skip("needs root and firejail")
    [slot] = sandbox_slots(1)
    prepare_scratch(slot)
    made = []
    for place in (Path("/tmp/.X11-unix"), Path(f"/tmp/pulse-test{os.getpid()}")):
        if not place.exists():
            place.mkdir(mode=0o1777)
            made.append(place)
    try:
        listed = subprocess.run(jail_command(JailPolicy(), slot, ["/bin/ls", "-A", "/tmp"]), user=slot.uid,
                                group=slot.gid, extra_groups=[], env=jail_environment(slot), cwd="/",
                                capture_output=True, text=True, timeout=60)
    finally:
        for place in made:
            place.rmdir()
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == ""
