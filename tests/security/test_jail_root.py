"""A jail is a room of its own: of the host's tree it shows only its root (sandbox/root.py),
and no host mount follows the host into it.

Canary files (mode 0644, in directories of mode 0755, outside every hidden path) lie where
a host keeps what is not the jail's: other services' data, other checkouts, a tool in
/usr/local, a user's home. Every door tries to read them: a Python call, a session, a bash
script, a C++ compile (`#include`), a Rust compile (`include_str!`), and Java, Go and
JavaScript runs; none may get a canary's text. Then tmpfs mounts made on the host while
the server runs (where container engines and `ip netns` make theirs, and one inside a path
the root shows) stay out of every jail, and sessions are still served.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import RunningServer, host_mounts_held
from toolcontract.v1 import toolserver_pb2 as pb

TOKEN = f"canary-{secrets.token_hex(8)}"
# Host places the jail's root does not hold, each a directory of its own made for the test.
CANARY_PARENTS = ("/srv", "/var/lib", "/opt", "/usr/local/share", "/home", "/mnt")
LANGUAGES = ("java", "go", "javascript", "rust")


@pytest.fixture(scope="module")
def canaries():
    made = []
    for parent in CANARY_PARENTS:
        directory = Path(parent) / f"toolserver-canary-{secrets.token_hex(4)}"
        directory.mkdir(mode=0o755, parents=True)
        directory.chmod(0o755)
        canary = directory / "canary.h"
        canary.write_text(f'"{TOKEN}"\n')
        canary.chmod(0o644)
        made.append(canary)
    yield made
    for canary in made:
        shutil.rmtree(canary.parent, ignore_errors=True)


def shared_mounts() -> bool:
    return any("shared:" in line.partition(" - ")[0] for line in Path("/proc/self/mountinfo").read_text().splitlines())


@pytest.fixture(scope="module")
def host_mounts_shared():
    """The host's mounts as container engines leave them (podman makes / rshared at its
    start): a jail's copies of them would then follow the host's later mounts. Made private
    again afterwards where none was shared before."""
    was_shared = shared_mounts()
    subprocess.run(["mount", "--make-rshared", "/"], check=True)
    yield
    if not was_shared:
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)


@pytest.fixture(scope="module")
def root_server(tmp_path_factory, canaries, host_mounts_shared):
    config = ("[lean]\nenabled = false\n[cpp]\nworkers = 1\n[bash]\nworkers = 1\n"
              f"[program]\nworkers = 1\nlanguages = {list(LANGUAGES)!r}\n[sessions]\nready = 1\n").replace("'", '"')
    running = RunningServer(tmp_path_factory.mktemp("root"), workers=1, sessions=2, slim_workers=0, extra_slots=3,
                            config=config)
    yield running
    running.stop()


def answered(response: pb.ExecuteResponse) -> str:
    """Everything a response carries back as text."""
    texts = [response.stdout, response.stderr, response.error, response.python.value]
    for result in (response.cpp, response.program):
        texts.append(result.compile.stderr)
        texts += [text for case in result.cases for text in (case.stdout, case.stderr, case.error)]
    return "\n".join(texts)


PYTHON_READS = """
import os
seen = []
for path in PATHS:
    for look in (lambda: open(path).read(), lambda: os.listdir(os.path.dirname(path))):
        try:
            seen.append(str(look()))
        except OSError as exc:
            seen.append(type(exc).__name__)
seen
"""


def python_probe(canaries: list[Path]) -> str:
    return f"PATHS = {[str(path) for path in canaries]!r}\n" + PYTHON_READS


def test_no_door_reads_a_host_file_outside_the_root(root_server, canaries):
    paths = [str(path) for path in canaries]
    with root_server.client() as client:
        replies = {"a call": client.run_python(python_probe(canaries))}
        session = client.open_session()
        try:
            replies["a session"] = client.run_python(python_probe(canaries), session_id=session.session_id)
        finally:
            client.close_session(session.session_id)
        replies["bash"] = client.execute(pb.ExecuteRequest(bash=pb.BashCall(
            script="".join(f"cat {path}; ls {Path(path).parent}\n" for path in paths))))
        for path in paths:
            replies[f"a C++ compile of {path}"] = client.execute(pb.ExecuteRequest(cpp=pb.CppCall(
                source=f'#include <cstdio>\nint main() {{ std::puts(\n#include "{path}"\n); }}\n')))
            replies[f"a Rust compile of {path}"] = client.execute(pb.ExecuteRequest(program=pb.ProgramCall(
                language="rust", source=f'fn main() {{ print!("{{}}", include_str!("{path}")); }}\n')))
        sources = {
            "java": "import java.nio.file.*;\npublic class Main { public static void main(String[] a) {\n"
                    "  for (String p : a.length > 0 ? a : PATHS) {\n"
                    "    try { System.out.println(Files.readString(Path.of(p))); }\n"
                    "    catch (Exception e) { System.out.println(e.getClass().getSimpleName()); } } }\n"
                    f"  static String[] PATHS = {{{', '.join(f'{chr(34)}{p}{chr(34)}' for p in paths)}}}; }}\n",
            "go": "package main\nimport (\"fmt\"; \"os\")\nfunc main() {\n"
                  f"  for _, p := range []string{{{', '.join(f'{chr(34)}{p}{chr(34)}' for p in paths)}}} {{\n"
                  "    b, err := os.ReadFile(p); fmt.Println(string(b), err) } }\n",
            "javascript": "const fs = require('fs');\n"
                          f"for (const p of {paths!r}) {{\n"
                          "  try { console.log(fs.readFileSync(p, 'utf8')); } catch (e) { console.log(e.code); } }\n",
        }
        for language, source in sources.items():
            replies[f"a {language} run"] = client.execute(pb.ExecuteRequest(
                program=pb.ProgramCall(language=language, source=source), limits=pb.Limits(timeout_ms=10000)))
    leaked = [door for door, reply in replies.items() if TOKEN in answered(reply)]
    assert not leaked, leaked
    # each door really ran: the interpreters and compilers answered, and refused the paths
    assert replies["a call"].outcome == pb.OK and "FileNotFoundError" in replies["a call"].python.value
    assert replies["a session"].python.value == replies["a call"].python.value
    assert "No such file" in replies["bash"].stderr
    for door, reply in replies.items():
        if "compile" in door:
            assert reply.outcome == pb.COMPILE_ERROR, (door, answered(reply)[-500:])
    for language in sources:
        reply = replies[f"a {language} run"]
        assert reply.outcome == pb.OK and reply.program.cases[0].stdout, (language, answered(reply)[-500:])


def test_the_self_test_proved_the_root_and_the_mounts(root_server):
    with root_server.client() as client:
        checks = {check.name: check for check in client.server_info().checks}
    for name in ("root_of_its_own", "mounts_private", "session_root", "session_mounts"):
        assert checks[name].ok, checks[name]
    assert "holding only what the root names" in checks["root_of_its_own"].detail


@contextlib.contextmanager
def host_mounts() -> Iterator[list[Path]]:
    """tmpfs mounts made on the host now, each with a file: where podman and `ip netns` make
    theirs (/run, /var/lib), and one inside a directory every jail shows (/usr/share). No
    server of any run on the machine starts meanwhile (tests/conftest.py host_mounts_held)."""
    made: list[Path] = []
    with host_mounts_held(exclusive=True):
        try:
            for parent in ("/run", "/var/lib", "/usr/share"):
                point = Path(parent) / f"toolserver-mount-{secrets.token_hex(4)}"
                point.mkdir()
                made.append(point)
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], check=True)
                (point / "inside").write_text(TOKEN)
            yield made
        finally:
            for point in made:
                subprocess.run(["umount", "-l", str(point)], check=False)
                point.rmdir()


MOUNT_PROBE = """
import os
def written(point):
    try:
        open(os.path.join(point, 'written'), 'w').close()
        return True
    except OSError:
        return False
[(os.path.exists(os.path.join(point, 'inside')), written(point)) for point in POINTS]
"""


def test_a_host_mount_made_while_the_server_runs_stays_out_of_every_jail(root_server):
    """Jails running when the mounts are made (a worker's, an open session's) never see
    them: their mounts are private. A jail started afterwards shows the one inside its
    root's /usr/share, read-only, as it shows the rest of /usr, and neither of the others.
    Sessions are served throughout, and the self-test's checks still hold."""
    with root_server.client() as client:
        before = client.open_session()
        try:
            with host_mounts() as points:
                probe = f"POINTS = {[str(point) for point in points]!r}\n" + MOUNT_PROBE
                unseen = str([(False, False)] * 3)
                assert client.run_python(probe).python.value == unseen  # a worker started before
                assert client.run_python(probe, session_id=before.session_id).python.value == unseen
                later = []
                for _ in range(3):  # sessions made after the mounts
                    session = client.open_session()
                    try:
                        reply = client.run_python(probe, session_id=session.session_id)
                    finally:
                        client.close_session(session.session_id)
                    assert reply.outcome == pb.OK, reply
                    later.append(eval(reply.python.value))
                    time.sleep(0.3)
                assert all(point.joinpath("inside").read_text() == TOKEN and not point.joinpath("written").exists()
                           for point in points)
        finally:
            client.close_session(before.session_id)
        info = client.server_info()
    assert all(view[:2] == [(False, False)] * 2 and not view[2][1] for view in later), later
    assert not [check for check in info.checks if not check.ok]
