"""Fixtures that start the real server (real firejail, real sockets) as a subprocess."""

from __future__ import annotations

import toolserver  # noqa: F401  (first: turns gRPC fork support off before grpc loads)

# isort: split
import contextlib
import fcntl
import json
import os
import pwd
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import grpc  # noqa: E402
import pytest

from sandbox.jail import Slot
from sandbox.slots import discover_slots, slot_user_name
from toolclient.client import NotFound, ToolClient
from toolserver.python.settings import WARM_PRELOAD
from toolserver.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path(Settings().sandbox.scratch_root)
# The run's temporary files (pytest's tmp_path, TMPDIR) lie under a root of its own, made
# under this parent at the start and removed at the end: nothing another process on the
# machine cleans (pytest's shared /tmp/pytest-of-USER, rotated by any other run) is ours.
SUITE_TMP_PARENT = Path(os.environ.get("TOOLSERVER_TEST_TMP", "/var/tmp"))
SUITE_TMP_PREFIX = "toolserver-suite-"
SUITE_ROOT = pytest.StashKey[Path]()
# Where slots are lent: machine-wide, so that runs side by side never share a slot.
SLOT_LOCKS = Path("/run/lock/toolserver-test-slots")
# Held exclusively by a test that mounts on the host, and shared by every server's start up
# to its listening (its self-test's jails): machine-wide, so that a run beside one that
# mounts never starts a server whose self-test finds a stranger's mount writable in its jail.
HOST_MOUNTS_LOCK = Path("/run/lock/toolserver-test-host-mounts")


@contextlib.contextmanager
def host_mounts_held(exclusive: bool) -> Iterator[None]:
    HOST_MOUNTS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(HOST_MOUNTS_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp:  # pytest's own --basetemp is the caller's choice
        return
    SUITE_TMP_PARENT.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=SUITE_TMP_PREFIX, dir=SUITE_TMP_PARENT))
    config.stash[SUITE_ROOT] = root
    config.option.basetemp = str(root / "pytest")
    os.environ["TMPDIR"] = str(root)  # the servers and programs the tests start
    tempfile.tempdir = None  # tempfile reads TMPDIR again


GUEST_TEST = "tests/integration/test_cgroup2_guest.py::"
GUEST_RUN = pytest.StashKey[tuple[subprocess.Popen[bytes], Path]]()  # the cgroup v2 guest's run and its log


def pytest_collection_finish(session: pytest.Session) -> None:
    """Starts the cgroup v2 guest's run (two minutes of emulation, most of it waiting) as
    soon as a run that selects its test has collected, so that it boots beside the rest."""
    if not any(item.nodeid.startswith(GUEST_TEST) for item in session.items):
        return
    from tests.integration.test_cgroup2_guest import start_guest, why_no_guest

    if why_no_guest():
        return
    log = Path(tempfile.mkdtemp(prefix="cgroup2-guest-")) / "guest.log"  # under the run's root
    session.config.stash[GUEST_RUN] = (start_guest(log), log)


def pytest_unconfigure(config: pytest.Config) -> None:
    started = config.stash.get(GUEST_RUN, None)
    if started is not None and started[0].poll() is None:  # the run stopped before its test read it
        os.killpg(started[0].pid, 9)
        started[0].wait()
    root = config.stash.get(SUITE_ROOT, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


class SlotRanges:
    """The sandbox slot users of this machine, lent to tests as disjoint ranges.

    Everything alive at once that jails processes (a server, a pool, a probe) needs slots
    of its own, as each kills every process of its slots' uids. A lent slot is held by
    an exclusive lock on a file of its own, so that test runs side by side on one
    machine never share one either; a range goes back when its holder stops."""

    def __init__(self, total: int, lock_dir: Path, wait_s: float = 600.0) -> None:
        self.total = total
        self.lock_dir = lock_dir
        self.wait_s = wait_s
        self.held: dict[int, int] = {}  # slot index -> descriptor of its locked file

    def take(self, count: int) -> int:
        """The first index of count slots in a row, now lent; waits while others hold them."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while True:
            for first in range(self.total - count + 1):
                if self._lock_all(range(first, first + count)):
                    return first
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {count} free sandbox slots in a row within {self.wait_s:.0f} s")
            time.sleep(0.5)

    def give_back(self, first: int, count: int) -> None:
        for index in range(first, first + count):
            os.close(self.held.pop(index))  # closing the descriptor drops its lock

    def _lock_all(self, indexes: range) -> bool:
        locked = []
        for index in indexes:
            if index in self.held or not self._lock(index):
                for taken in locked:
                    os.close(self.held.pop(taken))
                return False
            locked.append(index)
        return True

    def _lock(self, index: int) -> bool:
        fd = os.open(self.lock_dir / f"{index}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.held[index] = fd
        return True


def slot_users(prefix: str, at_least: int) -> int:
    """How many slot users prefix0, prefix1, ... exist in a row (scripts/test.sh makes twice
    a server's), or at_least where fewer do."""
    count = 0
    with contextlib.suppress(KeyError):
        while True:
            pwd.getpwnam(slot_user_name(prefix, count))
            count += 1
    return max(count, at_least)


SLOTS = SlotRanges(slot_users(Settings().sandbox.user_prefix, Settings().sandbox.slots),
                   SLOT_LOCKS)


@contextlib.contextmanager
def lent_slots(count: int) -> Iterator[list[Slot]]:
    """count slots of SLOTS while the block runs; skips the test when the slot users
    are missing."""
    first = SLOTS.take(count)
    try:
        slots = discover_slots(Settings().sandbox.user_prefix, count, SCRATCH, first=first)
        if len(slots) < count:
            pytest.skip("sandbox slot users missing: run toolserver setup-sandbox")
        yield slots
    finally:
        SLOTS.give_back(first, count)


@pytest.fixture
def sandbox_slots():
    """Lends slots for the test: sandbox_slots(count) is a list of count slots."""
    with contextlib.ExitStack() as stack:
        yield lambda count: stack.enter_context(lent_slots(count))


HANDED_OUT_PORTS: set[int] = set()


def ephemeral_ports() -> range:
    """The ports the kernel picks for a bind to port 0 and for outgoing connections."""
    try:
        low, high = (int(part) for part in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def free_port() -> int:
    """A port nothing listens on, for a server a test starts, never the same twice in a run.
    It lies below the kernel's ephemeral range: a port the kernel picked would be free again
    once this returns, and another server's port-0 listener (its metrics) or any outgoing
    connection could take it before the server binds it."""
    first_ephemeral = ephemeral_ports().start
    below = range(20000 if first_ephemeral > 21000 else 1024, first_ephemeral)
    while True:
        with socket.socket() as sock:
            port = random.choice(below) if len(below) > 1000 else 0  # else the kernel's pick, as a last resort
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = sock.getsockname()[1]
        if port not in HANDED_OUT_PORTS:
            HANDED_OUT_PORTS.add(port)
            return port


class RunningServer:
    """A real server process on slots lent by SLOTS until it stops; extra_slots are
    for the tools that take what the python workers leave (Lean REPLs, C++ and bash
    workers, in that order) and for the python pools' growth. As the default config does, it runs as many slim workers as
    warm ones unless slim_workers says otherwise, and no scientific worker unless
    scientific_workers says so (one takes 2.5 s of CPU to start here, the longest part of
    a start; calls that import the data stack then run on warm workers), and no program
    tool unless config has a [program] table. Its session zygote preloads the warm workers'
    modules (and makes IPython's shell), not the data stack (3 s more of CPU a start here), unless
    full_session_preload says so or config names [sessions] preload. Its slots in order:
    the self-test's, the warm workers', the sessions', the slim workers', the scientific
    workers', the rest."""

    def __init__(self, tmp: Path, *, workers: int = 2, sessions: int = 0, extra_slots: int = 0,
                 args: tuple[str, ...] = (), config: str = "", slim_workers: int | None = None,
                 scientific_workers: int = 0, full_session_preload: bool = False) -> None:
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        path = tmp / f"config-{self.port}.toml"
        self.workers = workers
        self.slim_workers = workers if slim_workers is None else slim_workers
        self.scientific_workers = scientific_workers
        self.sessions = sessions
        self.slot_count = workers + self.slim_workers + scientific_workers + 1 + sessions + extra_slots
        self.first_slot = SLOTS.take(self.slot_count)
        slots = f"first_slot = {self.first_slot}\nslots = {self.slot_count}\n"
        if "[sandbox]" in config:
            config = config.replace("[sandbox]\n", f"[sandbox]\n{slots}")
        else:
            config += f"\n[sandbox]\n{slots}"
        session_settings = f"max_sessions = {sessions}\n"
        if not full_session_preload and "preload" not in config.partition("[sessions]")[2].partition("\n[")[0]:
            session_settings += f"preload = {json.dumps(list(WARM_PRELOAD))}\n"
        if "[sessions]" in config:
            config = config.replace("[sessions]\n", f"[sessions]\n{session_settings}")
        else:
            config += f"\n[sessions]\n{session_settings}"
        if "[metrics]" not in config:
            config += "\n[metrics]\nport = 0\n"  # any free port: servers run side by side
        if "[program]" not in config:
            config += "\n[program]\nenabled = false\n"  # its language probes and workers: for the tests of it
        path.write_text(config)
        cmd = [sys.executable, "-m", "toolserver", "serve", "--port", str(self.port), "--workers", str(workers),
               "--slim-workers", str(self.slim_workers), "--scientific-workers", str(scientific_workers),
               "--config", str(path), *args]
        self.log = open(tmp / f"server-{self.port}.log", "w+")
        with host_mounts_held(exclusive=False):
            self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
            try:
                self.wait_listening()
            except RuntimeError:
                self.stop()
                raise

    def wait_listening(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with status {self.process.returncode}: {self.output()}")
            if "listening on" in self.output():
                return
            time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.output()}")

    def worker_slot_indexes(self) -> list[int]:
        """The slot indexes of its python workers: warm, slim and scientific."""
        warm = range(self.first_slot + 1, self.first_slot + 1 + self.workers)
        slim_start = self.first_slot + 1 + self.workers + self.sessions
        return [*warm, *range(slim_start, slim_start + self.slim_workers + self.scientific_workers)]

    def metrics_url(self) -> str:
        match = re.search(r"metrics on (http://\S+)", self.output())
        assert match, "the server did not report its metrics endpoint"
        return match.group(1)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def client(self) -> ToolClient:
        return ToolClient(self.target, timeout_s=60)

    def session_is_open(self, session_id: str) -> bool:
        """Whether a call in the session runs (NOT_FOUND once it is closed)."""
        with self.client() as client:
            try:
                client.run_python("1", session_id=session_id)
            except NotFound:
                return False
        return True

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self.log.closed:
            self.log.close()
            SLOTS.give_back(self.first_slot, self.slot_count)
        return self.process.returncode


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("server"), workers=2, sessions=2, scientific_workers=1)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def jail_server(tmp_path_factory):
    """A server with no Python-level guard at all (the default profile installs none, and
    without slim or scientific workers there is no hook that hands a call back either):
    what its calls meet is the jail alone."""
    running = RunningServer(tmp_path_factory.mktemp("jail"), workers=2, sessions=1, slim_workers=0,
                            scientific_workers=0)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def jail_client(jail_server):
    with jail_server.client() as c:
        yield c


@pytest.fixture(scope="session")
def client(server):
    with server.client() as c:
        yield c


@pytest.fixture(scope="session")
def channel(server):
    with grpc.insecure_channel(server.target) as ch:
        yield ch
