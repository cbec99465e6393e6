"""The oracle: a plain python3 of the calls' runtime, as a non-root user, in a fresh
directory that holds only main.py and the program's files, with the jail's environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandbox.jail import Slot, jail_environment
from tests.fidelity.program import Program, normalize


@dataclass(frozen=True)
class Ran:
    stdout: str
    stderr: str
    exit_code: int | None  # None: killed at its time limit


def run_plain(program: Program, interpreter: str, slot: Slot | None = None) -> Ran:
    """program under `interpreter main.py` (with -u where it ends abruptly), as slot's uid
    when given (else this process's)."""
    base = Path(tempfile.mkdtemp(prefix="fidelity-", dir="/var/tmp"))
    work = base / "work"
    work.mkdir()
    try:
        (work / "main.py").write_text(program.code, encoding="utf-8", errors="surrogateescape")
        for name, data in program.files.items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        identity = {}
        if slot is not None and os.geteuid() == 0:
            os.chmod(base, 0o755)
            for path in [work, *work.rglob("*")]:
                os.chown(path, slot.uid, slot.gid)
            identity = {"user": slot.uid, "group": slot.gid, "extra_groups": []}
        env = jail_environment(Slot("oracle", 0, 0, work), interpreter)
        env.pop("TMPDIR")
        argv = [interpreter, *(["-u"] if program.abrupt or program.times_out else []), "main.py"]
        process = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True, **identity)
        try:
            out, err = process.communicate(program.stdin.encode("utf-8", "surrogateescape"),
                                           timeout=program.timeout_ms / 1000)
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            out, err = process.communicate()
            code = None
        cwd = str(work)
        return Ran(normalize(out.decode("utf-8", "replace"), cwd), normalize(err.decode("utf-8", "replace"), cwd), code)
    finally:
        if slot is not None and os.geteuid() == 0:
            subprocess.run(["pkill", "-KILL", "-u", str(slot.uid)], check=False)
        shutil.rmtree(base, ignore_errors=True)
