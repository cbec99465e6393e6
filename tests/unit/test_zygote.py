"""The jailed zygote on its own (slot user 21, unused by other tests)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox.calls import (
    PROGRAM_FILE,
    CallLimits,
    CallReply,
    CallRequest,
    CellRequest,
    KeptFile,
    SessionStart,
    StartAhead,
    reply_frame_bytes,
)
from sandbox.inside.program import PROGRAM_FILE as INSIDE_PROGRAM_FILE
from sandbox.inside.zygote import REQUEST_KEYS, STARTED_AHEAD
from sandbox.jail import JailPolicy, Slot
from sandbox.profiles import GuardPolicy, GuardProfile
from sandbox.selftest import PROBE_LIMITS, probe_request, run_self_test
from sandbox.slots import prepare_scratch
from sandbox.worker import INSIDE, JailedProcess, WorkerLost, Zygote, ZygoteSpec
from toolserver.python.settings import DENIED_IMPORTS

PROJECT = str(Path(__file__).resolve().parents[2])


def kernel_can_collapse() -> bool:
    major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    try:
        enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    return (major, minor) >= (6, 1) and "[never]" not in enabled


@pytest.fixture
async def slot(sandbox_slots):
    slots = sandbox_slots(1)
    prepare_scratch(slots[0])
    return slots[0]


@pytest.mark.skipif(not kernel_can_collapse(), reason="MADV_COLLAPSE needs Linux 6.1+ with THP not 'never'")
async def test_warm_heap_is_collapsed_into_huge_pages(slot):
    spec = ZygoteSpec(interpreter=sys.executable, preload=("sympy",), jail=JailPolicy(hidden_paths=(PROJECT,)))
    zygote = Zygote(spec, slot)
    try:
        hello = await zygote.start()
        assert hello["preloaded"] == ["sympy"]
        assert hello["huge_pages_mb"] >= 8
    finally:
        await zygote.kill()


async def test_huge_pages_can_be_turned_off(slot):
    spec = ZygoteSpec(interpreter=sys.executable, preload=("sympy",), huge_pages=False,
                      jail=JailPolicy(hidden_paths=(PROJECT,)))
    zygote = Zygote(spec, slot)
    try:
        assert (await zygote.start())["huge_pages_mb"] == 0
        reply = await zygote.run(probe_request("a", "import sympy\nsympy.factorint(360)"), 10)
        assert reply.value == "{2: 3, 3: 2, 5: 1}"
    finally:
        await zygote.kill()


def test_the_zygote_reads_the_keys_the_host_sends():
    wire = CallRequest("r", "1", CallLimits(1, 1, 1, 1, 1, 1)).wire()
    assert sorted(REQUEST_KEYS) == sorted(wire)


def test_the_zygote_answers_the_keys_the_host_reads():
    keys: set[str] = set()
    for module in ("zygote", "outcome"):  # the answer is made by outcome.classify, completed by the zygote
        tree = ast.parse((INSIDE / f"{module}.py").read_text())
        keys |= {node.slice.value for node in ast.walk(tree) if isinstance(node, ast.Subscript)
                 and getattr(node.value, "id", "") == "reply" and isinstance(node.slice, ast.Constant)}
        keys |= {key.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "reply" and isinstance(node.value, ast.Dict)
                 for key in node.value.keys}
    not_a_calls = {"queued_us", "displays"}  # the scheduler's, never on the wire; a session's cell's
    assert keys == {field.name for field in dataclasses.fields(CallReply)} - not_a_calls


def session_zygote_tree() -> ast.Module:
    return ast.parse((INSIDE / "session_zygote.py").read_text())


def keys_read_of(tree: ast.AST, name: str) -> set[str]:
    """The keys the source reads of the dict named name: name["k"] and name.get("k")."""
    keys = {node.slice.value for node in ast.walk(tree) if isinstance(node, ast.Subscript)
            and getattr(node.value, "id", "") == name and isinstance(node.slice, ast.Constant)}
    return keys | {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                   and getattr(node.func.value, "id", "") == name and isinstance(node.args[0], ast.Constant)}


def test_a_session_reads_the_keys_of_its_start_and_its_cells():
    tree = session_zygote_tree()
    assert keys_read_of(tree, "start") == set(SessionStart(0, None).wire())
    assert keys_read_of(tree, "call") == set(CellRequest("r", "1", "", 1, 1).wire())


def test_a_sessions_answer_has_the_keys_of_a_calls():
    tree = session_zygote_tree()
    run_call = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "run_call")
    answer = next(node.value for node in ast.walk(run_call) if isinstance(node, ast.Return))
    keys = {key.value for key in answer.keys}
    assert keys <= {field.name for field in dataclasses.fields(CallReply)}
    assert {"id", "outcome", "error", "exit_code", "value", "truncated", "displays"} == keys  # streams: its pipes


def test_the_zygote_writes_the_program_where_the_host_keeps_room_for_it():
    assert INSIDE_PROGRAM_FILE == PROGRAM_FILE == "main.py"


class WithoutScratchCap(CallRequest):
    """A request frame that lacks a key, as a host of another version might send."""

    def wire(self, *args: Any, **kwargs: Any) -> dict:
        frame = super().wire(*args, **kwargs)
        del frame["max_scratch_mb"]
        return frame


async def test_a_request_without_its_keys_is_answered_invalid(slot):
    zygote = Zygote(ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,))), slot)
    try:
        await zygote.start()
        partial = probe_request("partial", "1")
        reply = await zygote.run(WithoutScratchCap(partial.id, partial.code, partial.limits), 10)
        assert reply.outcome == "INVALID" and "max_scratch_mb" in reply.error
        assert (await zygote.run(probe_request("whole", "6 * 7"), 10)).value == "42"
    finally:
        await zygote.kill()


async def test_a_programs_annotations_and_top_level_await_are_python3s(slot):
    """The zygote's own sources compile with `from __future__ import annotations`; a call's
    code inherits none of it (its annotations are objects), and a top-level await is
    python3's SyntaxError."""
    zygote = Zygote(ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,))), slot)
    try:
        await zygote.start()
        annotated = await zygote.run(probe_request("a", "def f(x: int): pass\nf.__annotations__"), 10)
        assert annotated.value == "{'x': <class 'int'>}"
        awaited = await zygote.run(probe_request("b", "import asyncio\nawait asyncio.sleep(0)"), 10)
        assert awaited.outcome == "ERROR" and "'await' outside function" in awaited.error
    finally:
        await zygote.kill()


def guarded(reroute: bool, preload: tuple[str, ...] = ()) -> ZygoteSpec:
    profiles = {"open": GuardProfile(), "guarded": GuardProfile(denied=DENIED_IMPORTS, refuse_actions=True)}
    return ZygoteSpec(interpreter=sys.executable, preload=preload, jail=JailPolicy(hidden_paths=(PROJECT,)),
                      guard=GuardPolicy(profiles), reroute_outside_stdlib=reroute)


def call(code: str, stdin: str = "", profile: str = "open") -> CallRequest:
    request = probe_request("c", code)
    return CallRequest(request.id, code, request.limits, stdin=stdin, profile=profile)


async def test_a_slim_zygote_hands_back_a_call_that_reaches_past_the_standard_library(slot):
    """However the import is spelled and whatever the code catches, the call ends at the
    import, REROUTE, to run again on a warm zygote; standard modules run where they are."""
    zygote = Zygote(guarded(reroute=True, preload=("json",)), slot)
    try:
        await zygote.start()
        for code in ("import sympy", "print('first'); __import__('sym' + 'py')",
                     "import importlib\ntry:\n    importlib.import_module('numpy')\nexcept BaseException:\n    pass\n"
                     "print('went on')", "from mpmath import mp"):
            reply = await zygote.run(call(code), 10)
            assert reply.outcome == "REROUTE", (code, reply)
        reply = await zygote.run(call("import statistics, fractions, json, sys\ninput() + str(statistics.mean([1, 3]))",
                                      stdin="x\n"), 10)
        assert reply.outcome == "OK" and reply.value == "'x2'"
        assert (await zygote.run(call("import ctypes"), 10)).outcome == "OK"  # standard, and open
        assert (await zygote.run(call("import ctypes", profile="guarded"), 10)).outcome == "DENIED"
        # subprocess loads a denied module: a slim zygote leaves it (and threading) out.
        for code in ("import subprocess", "import asyncio", "print('x'); __import__('subprocess')"):
            reply = await zygote.run(call(code), 10)
            assert reply.outcome == "REROUTE" and "subprocess" in reply.error, (code, reply)
        reply = await zygote.run(call("import sys\nsorted({'subprocess', 'threading'} & set(sys.modules))"), 10)
        assert reply.outcome == "OK" and reply.value == "[]", reply
    finally:
        await zygote.kill()


async def test_a_warm_zygote_runs_what_a_slim_one_hands_back(slot):
    zygote = Zygote(guarded(reroute=False, preload=("sympy",)), slot)
    try:
        await zygote.start()
        reply = await zygote.run(call("print('first'); __import__('sym' + 'py').factorint(12)"), 10)
        assert reply.outcome == "OK" and reply.stdout == "first\n" and reply.value == "{2: 2, 3: 1}"
        reply = await zygote.run(call("import subprocess\nsubprocess.run(['true'])"), 10)
        assert reply.outcome == "OK", reply
        reply = await zygote.run(call("import subprocess\nsubprocess.run(['true'])", profile="guarded"), 10)
        assert reply.outcome == "DENIED", reply  # importable where it is preloaded, refused on use
    finally:
        await zygote.kill()


async def test_a_program_imports_its_own_modules_of_the_librarys_names(slot):
    """The library the zygote runs on is out of sys.modules before any call: a program's
    own frames.py and sandbox package are the ones it imports, as under python3."""
    zygote = Zygote(ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,))), slot)
    code = ("import sys\nbefore = sorted(name for name in sys.modules if name.split('.')[0] in ('sandbox', 'frames'))\n"
            "import frames, sandbox.inside\nbefore, frames.OWN, sandbox.inside.OWN")
    request = call(code)
    request = dataclasses.replace(request, files={"frames.py": b"OWN = 'frames'\n", "sandbox/__init__.py": b"",
                                                  "sandbox/inside.py": b"OWN = 'inside'\n"})
    try:
        await zygote.start()
        reply = await zygote.run(request, 10)
        assert reply.outcome == "OK" and reply.value == "([], 'frames', 'inside')", reply
    finally:
        await zygote.kill()


async def test_a_kept_file_is_sent_once_and_every_call_finds_it_whole(slot):
    """A zygote keeps a program's bytes between calls (a compiled program run case after
    case): the host sends them once and names them after, within the spec's budget, least
    recently used forgotten first. A call that spoils its copy leaves the next call's
    whole; a file past the budget is sent every time."""
    zygote = Zygote(ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,)),
                               kept_files_mb=1), slot)
    code = ("import hashlib\nwith open('bin/prog', 'rb') as f:\n    data = f.read()\n"
            "with open('bin/prog', 'wb') as f:\n    f.write(b'spoiled')\nhashlib.sha256(data).hexdigest()")
    files = {name: KeptFile(name, os.urandom(size)) for name, size in
             (("small", 300_000), ("other", 600_000), ("third", 400_000), ("big", 2 << 20))}
    runs = [("small", ["small"]), ("small", ["small"]), ("other", ["small", "other"]), ("small", ["other", "small"]),
            ("third", ["small", "third"]), ("big", ["small", "third"]), ("other", ["third", "other"]),
            ("third", ["other", "third"])]
    try:
        await zygote.start()
        for name, kept_after in runs:
            request = dataclasses.replace(call(code), kept_files={"bin/prog": files[name]})
            reply = await zygote.run(request, 10)
            assert reply.outcome == "OK" and reply.value == repr(hashlib.sha256(files[name].data).hexdigest()), reply
            assert list(zygote.kept) == kept_after, (name, list(zygote.kept))
    finally:
        await zygote.kill()


# A stand-in for a runtime started ahead: what it is told first picks what it does.
AHEAD = StartAhead(("/bin/sh", "-c", 'read line; case "$line" in sleep) sleep 30;; segv) kill -SEGV $$;; esac; '
                    'echo "first: $line"; echo "dir: $(ls -d out)"; echo "where: $WHERE"; '
                    'echo "open files: $(ulimit -n)"; wc -c; exit 3'),
                   (("WHERE", "{cwd}/x"),), ("out",))
TAKE_OVER = (f"import os\nahead = globals().pop({STARTED_AHEAD!r}, None)\n"
             "print('ahead' if ahead else 'none', sorted(os.listdir('.')), flush=True)\n"
             "if ahead is not None:\n    ahead(open('line').read())\n")


async def test_a_process_started_ahead_is_taken_over_by_the_call_that_names_it(slot):
    """A request names the process its call's launcher takes over; the zygote's next child
    starts it while it waits (in its working directory, with its directories and its
    environment), and a call that names the same one runs on it: its first line, then the
    call's stdin (more than a pipe holds), the call's limits, its exit status, its signal,
    the call's time limit. A call that names another or none finds none started."""
    zygote = Zygote(ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,))), slot)
    other = dataclasses.replace(AHEAD, argv=(*AHEAD.argv[:2], AHEAD.argv[2] + " "))

    def request(ahead: StartAhead | None, line: str = "go\n", stdin: str = "", timeout_ms: int = 5000) -> CallRequest:
        made = call(TAKE_OVER, stdin=stdin)
        return dataclasses.replace(made, ahead=ahead, files={"line": line.encode()},
                                   limits=dataclasses.replace(made.limits, timeout_ms=timeout_ms))

    try:
        await zygote.start()
        first = await zygote.run(request(AHEAD), 10)
        assert (first.outcome, first.stdout) == ("OK", "none ['line', 'main.py']\n"), first
        taken = await zygote.run(request(AHEAD, stdin="x" * 200_000), 10)
        lines = taken.stdout.splitlines()
        assert (taken.outcome, taken.exit_code) == ("ERROR", 3), taken
        assert lines[0] == "ahead ['line', 'main.py', 'out']" and lines[1:3] == ["first: go", "dir: out"], lines
        assert lines[3].startswith("where: /") and lines[3].endswith("/x"), lines
        assert lines[4:] == [f"open files: {PROBE_LIMITS.max_open_files}", "200000"], lines
        timed_out = await zygote.run(request(AHEAD, "sleep\n", timeout_ms=500), 10)
        assert timed_out.outcome == "TIMEOUT" and timed_out.stdout.startswith("ahead"), timed_out
        crashed = await zygote.run(request(AHEAD, "segv\n"), 10)
        assert (crashed.outcome, crashed.error) == ("CRASHED", "killed by signal SIGSEGV"), crashed
        replaced = await zygote.run(request(other), 10)
        assert replaced.stdout == "none ['line', 'main.py']\n", replaced
        again = await zygote.run(request(other), 10)
        assert again.stdout.startswith("ahead") and again.exit_code == 3, again
        without = await zygote.run(request(None), 10)
        assert (without.outcome, without.stdout) == ("OK", "none ['line', 'main.py']\n"), without
    finally:
        await zygote.kill()


@pytest.mark.skipif(os.geteuid() != 0, reason="the jail's private mounts are proven and capped as root")
async def test_the_self_test_finds_a_writable_place_that_is_never_wiped(slot):
    """firejail's /run/lock is writable from inside: a jail that did not count it among the
    places wiped after every call would carry one call's files to the next."""
    spec = ZygoteSpec(interpreter=sys.executable, jail=JailPolicy(hidden_paths=(PROJECT,)))
    checks = {check.name: check for check in await run_self_test(spec, slot)}
    assert checks["only_own_places_writable"].ok, checks["only_own_places_writable"]
    assert "/run/lock" in spec.jail.private_dirs
    lacking = dataclasses.replace(spec, jail=dataclasses.replace(spec.jail, private_dirs=("/tmp", "/var/tmp", "/dev/shm")))
    check = next(check for check in await run_self_test(lacking, slot) if check.name == "only_own_places_writable")
    assert not check.ok and "/run/lock" in check.detail, check


async def test_a_frame_past_what_it_may_be_is_not_read(tmp_path):
    """What a jailed program writes is untrusted: a frame that announces more bytes than
    its kind may have ends the worker (WorkerLost) before any of it is read."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import os, struct\nos.write(1, struct.pack('>I', 2**31) + b'{' * 65536)",
        stdout=asyncio.subprocess.PIPE)
    jailed = JailedProcess(Slot("unread", os.getuid(), os.getgid(), tmp_path))
    jailed._process = process
    limits = probe_request("r", "1").limits
    with pytest.raises(WorkerLost, match="past the"):
        await jailed.read_frame(reply_frame_bytes(limits))
    await process.wait()
    assert reply_frame_bytes(limits) < 2**31
