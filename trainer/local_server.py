"""A tool server started for one run of the trainer, as a child process on a free port.

For the demo and for trying the trainer on one machine: it writes a small config (a
few workers on slot users of its own range, so it does not kill the processes of a
server on the default range), starts `python -m toolserver serve`, waits until the
server is serving (its sandbox self-test passed) and stops it afterwards. A real run
points the trainer at a running server instead.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from toolclient.client import ToolClient, ToolServerError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_serving(target: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    with ToolClient(target, timeout_s=5) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the tool server exited ({process.returncode}); its log: {log}\n"
                                   f"{log.read_text()[-2000:]}")
            try:
                if client.run_python("print(1)").stdout == "1\n":
                    return
            except ToolServerError:
                pass
            time.sleep(0.5)
    raise RuntimeError(f"the tool server was not serving after {timeout_s:.0f} s; its log: {log}")


@contextlib.contextmanager
def local_server(directory: Path, *, workers: int = 2, first_slot: int = 59,
                 timeout_s: float = 180.0) -> Iterator[str]:
    """Yields the target of a fresh server with `workers` warm and as many slim workers,
    and no scientific ones (the trainer's calls are math: sympy, numpy) (slot users 59-63
    by default); its config and log are left in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = directory / "server.toml"
    config.write_text(f"[sandbox]\nfirst_slot = {first_slot}\nslots = {2 * workers + 1}\n\n"
                      f"[sessions]\nmax_sessions = 0\n\n[metrics]\nport = 0\n")
    log = directory / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "toolserver", "serve", "--port", str(port),
                                    "--workers", str(workers), "--scientific-workers", "0", "--config", str(config)],
                                   stdout=out, stderr=subprocess.STDOUT)
    target = f"127.0.0.1:{port}"
    try:
        wait_serving(target, process, log, timeout_s)
        yield target
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
