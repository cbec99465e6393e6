"""A call's and a session's processes are capped together, through a real server, on the
cgroup hierarchy this host has: cgroup v1 on these machines, and cgroup v2 in the guest
`scripts/cgroup2-vm.sh` boots (tests/integration/test_cgroup2_guest.py runs this module there).

The server is started with `sandbox.memory_cgroup = "required"`: where the test process
(root, like the server) finds a hierarchy, the server must serve on it, never fall back."""

from __future__ import annotations

import ast

import pytest

from sandbox.cgroups import CgroupUnavailable, MemoryCgroups
from tests.conftest import RunningServer
from tests.security.test_isolation import forked_hogs
from toolcontract.v1 import toolserver_pb2 as pb

FOUR_HOGS = forked_hogs(200)  # every one under the cap alone, all of them over 512 MB


@pytest.fixture(scope="module")
def hierarchy() -> MemoryCgroups:
    try:
        return MemoryCgroups.open()
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroups here: {exc}")


@pytest.fixture(scope="module")
def capped(tmp_path_factory, hierarchy):
    running = RunningServer(tmp_path_factory.mktemp("capped"), workers=1, slim_workers=0, scientific_workers=0,
                            sessions=1, extra_slots=1,
                            config='[sandbox]\nmemory_cgroup = "required"\n[lean]\nenabled = false\n'
                                   '[cpp]\nenabled = false\n')
    yield running
    running.stop()


def test_the_server_proves_the_whole_call_cap_on_the_hierarchy_it_found(capped, hierarchy):
    with capped.client() as client:
        info = client.server_info()
    checks = {check.name: check for check in info.checks}
    assert info.serving and info.sandbox_verified, info
    assert checks["memory_cgroup"].ok and checks["whole_call_memory_cap"].ok, checks
    assert checks["memory_cgroup"].detail.startswith(f"cgroup {hierarchy.kind.hierarchy}")
    assert f"memory cgroups: cgroup {hierarchy.kind.hierarchy}" in capped.output()


def test_a_calls_processes_past_its_cap_together_are_a_memory_limit(capped):
    with capped.client() as client:
        over = client.run_python(FOUR_HOGS, memory_mb=512, timeout_ms=60_000, timeout_s=120)
        assert over.outcome == pb.MEMORY_LIMIT, over
        assert "together" in over.error
        assert client.run_python("1 + 1").python.value == "2"  # the server serves on
        under = client.run_python(FOUR_HOGS, memory_mb=1024, timeout_ms=60_000, timeout_s=120)
        assert under.outcome == pb.OK, under
        assert ast.literal_eval(under.python.value) == [0, 0, 0, 0]


def test_a_sessions_processes_past_its_cap_together_are_a_memory_limit(capped):
    with capped.client() as client:
        for memory_mb, outcome in ((512, pb.MEMORY_LIMIT), (1024, pb.OK)):
            session = client.open_session(memory_mb=memory_mb)
            try:
                reply = client.run_python(FOUR_HOGS, session_id=session.session_id, timeout_ms=60_000,
                                          timeout_s=120)
                assert reply.outcome == outcome, reply
                if outcome == pb.OK:
                    assert ast.literal_eval(reply.python.value) == [0, 0, 0, 0]
                again = client.run_python("sum(range(10))", session_id=session.session_id)
                assert again.python.value == "45"  # the session serves on
            finally:
                client.close_session(session.session_id)


def test_a_bash_scripts_processes_past_its_cap_together_are_a_memory_limit(capped):
    """The bash tool's workers run on the same slot cgroups (as the C++ tool's do)."""
    script = ("for i in 1 2 3 4; do python3 -c 'import time; b = bytearray(200 << 20); "
              "[b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; time.sleep(2)' & done; wait")
    with capped.client() as client:
        for memory_mb, outcome in ((512, pb.MEMORY_LIMIT), (1024, pb.OK)):
            reply = client.execute(pb.ExecuteRequest(bash=pb.BashCall(script=script),
                                                     limits=pb.Limits(memory_mb=memory_mb, timeout_ms=60_000)),
                                   timeout_s=120)
            assert reply.outcome == outcome, reply


SESSION_THEN_CHILD = (
    "import subprocess, sys\nheld = bytearray(220 << 20)\nfor i in range(0, len(held), 4096):\n    held[i] = 1\n"
    "print('holding', flush=True)\n"
    "subprocess.run([sys.executable, '-c', 'import time\\nb = bytearray(200 << 20)\\n"
    "[b.__setitem__(i, 1) for i in range(0, len(b), 4096)]\\ntime.sleep(5)'])\nprint('never')\n")


def test_a_session_the_oom_killer_ends_answers_a_memory_limit_and_is_closed(capped):
    """The session's own process holds the most when its child pushes the session past its
    cap: the kernel kills it; the answer keeps what it printed."""
    with capped.client() as client:
        session = client.open_session(memory_mb=300)
        reply = client.run_python(SESSION_THEN_CHILD, session_id=session.session_id, timeout_ms=60_000,
                                  timeout_s=120)
        assert reply.outcome == pb.MEMORY_LIMIT and reply.stdout == "holding\n", reply
        assert reply.python.exit_code == -9 and "the session is closed" in reply.error
        assert not capped.session_is_open(session.session_id)
