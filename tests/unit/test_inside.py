"""sandbox/inside: what the host sends to run outside its process, and how it gets there."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from sandbox.inside import call_process, cleanup, files, frames, outcome, program, warm
from sandbox.worker import BOOTSTRAP, INSIDE, LIBRARY, LIBRARY_MODULES

ENTRIES = ("zygote", "session_zygote")  # the sources the host runs; the rest is their library


def imports_of(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def test_every_module_is_sent_or_runs():
    modules = {path.stem for path in INSIDE.glob("*.py")} - {"__init__"}
    assert modules == set(LIBRARY_MODULES) | set(ENTRIES)
    assert len(set(LIBRARY_MODULES)) == len(LIBRARY_MODULES)


# Packages of the calls' runtime a module may use where the runtime has them: imported in
# a function, each import ready for its absence.
RUNTIME_PACKAGES = {"notebook": ("IPython", "traitlets")}


def test_each_module_imports_the_standard_library_and_the_library_before_it_at_its_top():
    """The bootstrap installs the library in LIBRARY_MODULES's order and the zygotes drop it
    from sys.modules before they run a program: an import of the library after that (in a
    function) would fail, and one of a module later in the order would find nothing."""
    order = {name: index for index, name in enumerate(LIBRARY_MODULES)}
    for name in (*LIBRARY_MODULES, *ENTRIES):
        tree = ast.parse((INSIDE / f"{name}.py").read_text())
        top = {id(node) for node in tree.body}
        for node in imports_of(tree):
            for imported in imported_names(node):
                top_level = imported.split(".")[0]
                if top_level == "sandbox":
                    assert id(node) in top, f"{name} imports {imported} inside a function"
                    assert imported.startswith("sandbox.inside."), f"{name} imports {imported}"
                    used = imported.removeprefix("sandbox.inside.")
                    assert used in order and order[used] < order.get(name, len(order)), f"{name} imports {used}"
                elif top_level in RUNTIME_PACKAGES.get(name, ()):
                    assert id(node) not in top, f"{name} imports {imported} at its top: a runtime may lack it"
                else:
                    assert top_level in sys.stdlib_module_names, f"{name} imports {imported}"


def test_the_library_is_sent_in_its_order():
    assert [name for name, _ in LIBRARY] == ["sandbox", "sandbox.inside",
                                             *(f"sandbox.inside.{name}" for name in LIBRARY_MODULES)]
    for name, source in LIBRARY[2:]:
        assert source == (INSIDE / f"{name.rpartition('.')[2]}.py").read_text()


def test_the_bootstrap_installs_the_library_and_the_zygote_can_forget_it():
    source = ("import sys\nfrom sandbox.inside.program import PROGRAM_FILE\nfrom sandbox.inside import warm\n"
              "before = sorted(name for name in sys.modules if name.startswith('sandbox'))\n"
              "warm.forget_library()\n"
              "after = sorted(name for name in sys.modules if name.startswith('sandbox'))\n"
              "print(JAIL_CONFIG['say'], PROGRAM_FILE, len(before), after, __name__)\n")
    payload = json.dumps({"config": {"say": "hello"}, "source": source, "name": "probe", "library": LIBRARY}).encode()
    done = subprocess.run([sys.executable, "-I", "-c", BOOTSTRAP], input=b"%010d" % len(payload) + payload,
                          capture_output=True, cwd="/", timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split(" ", 4) == ["hello", "main.py", str(len(LIBRARY)), "[]", "probe\n"]


def test_the_bootstrap_still_runs_a_source_without_a_library():
    payload = json.dumps({"config": {}, "source": "print(__name__)", "name": "holder"}).encode()
    done = subprocess.run([sys.executable, "-I", "-c", BOOTSTRAP], input=b"%010d" % len(payload) + payload,
                          capture_output=True, timeout=60)
    assert done.stdout == b"holder\n", done.stderr.decode()


def test_frames_round_trip_through_a_pipe():
    read_end, write_end = __import__("os").pipe()
    try:
        frames.send_frame(write_end, {"a": [1, "é"]})
        assert json.loads(frames.read_frame(read_end)) == {"a": [1, "é"]}
    finally:
        for fd in (read_end, write_end):
            __import__("os").close(fd)


def test_the_outcome_table_of_calls_and_cells():
    assert outcome.program_end({"kind": "ok"}, 0, 64) == ("OK", "")
    assert outcome.program_end({"kind": "ok"}, 3, 64) == ("ERROR", "exited with status 3")
    assert outcome.program_end({"kind": "memory"}, 1, 64) == ("MEMORY_LIMIT", "memory limit of 64 MB exceeded")
    assert outcome.program_end({"kind": "denied", "error": "no"}, 1, 64) == ("DENIED", "no")
    assert outcome.raised(MemoryError(), ()) ["kind"] == "memory"
    assert outcome.raised(KeyError("k"), (KeyError,)) == {"kind": "denied", "error": "KeyError: 'k'"}


def test_a_capture_keeps_up_to_its_cap():
    capture = outcome.Capture(4)
    capture.feed(b"ab")
    capture.feed(b"cdef")
    assert capture.text() == "abcd" and capture.truncated


def test_exit_status_as_python3():
    assert program.exit_status(SystemExit(None)) == 0
    assert program.exit_status(SystemExit(256 + 3)) == 3


def test_wipe_leaves_an_empty_directory_whatever_the_permissions(tmp_path):
    locked = tmp_path / "a" / "b"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    locked.chmod(0)
    (tmp_path / "a").chmod(0o500)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    cleanup.wipe(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_files_stay_in_the_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    files.write_files({"d/x.txt": "aGk="})
    assert (tmp_path / "d" / "x.txt").read_bytes() == b"hi"
    assert files.inside_home("../x") is None
    assert files.fetch_files(["d/x.txt", "../etc/passwd"], 2) == ({"d/x.txt": "aGk="}, False)
    assert files.fetch_files(["d/x.txt"], 1) == ({}, True)


def test_the_modules_hold_no_state_of_their_own():
    """A zygote's state lives in one object (zygote.Zygote, session_zygote.SessionZygote):
    the zygotes' sources and the library's modules hold constants, functions and classes only."""
    for name in (*(module.__name__.rpartition('.')[2] for module in (frames, outcome, program, files, cleanup,
                                                                       call_process, warm)), *ENTRIES):
        tree = ast.parse((INSIDE / f"{name}.py").read_text())
        assert not [node for node in ast.walk(tree) if isinstance(node, ast.Global)], name
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    assert isinstance(target, ast.Name) and target.id.isupper(), (name, ast.dump(target))
