"""The HTTP listener's budget of connections and its refusals."""

from __future__ import annotations

import resource
import subprocess
import sys

from toolserver.fronts.http_listener import DESCRIPTORS_PER_SLOT, DESCRIPTORS_RESERVED, refusal

BUDGET = """
from toolserver.settings import load_settings
from toolserver.errors import ConfigError
from toolserver.fronts.http_listener import connection_budget
try:
    print(connection_budget(load_settings(**{"http.max_connections": 1024, "sandbox.slots": 64, "sessions.max_sessions": 4})))
except ConfigError as exc:
    print(exc)
"""


def budget_under(nofile: int) -> str:
    """What connection_budget says in a process whose RLIMIT_NOFILE is nofile (soft and hard)."""
    return subprocess.run([sys.executable, "-c", BUDGET], capture_output=True, text=True, check=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
                          ).stdout.strip()


def test_connections_fit_beside_the_servers_own_descriptors():
    own = DESCRIPTORS_RESERVED + DESCRIPTORS_PER_SLOT * 64
    assert budget_under(own + 5000) == "1024"
    assert budget_under(own + 500) == "500"
    assert "ulimit -n" in budget_under(own + 10)


def test_a_refusal_is_a_whole_response_that_closes():
    answer = refusal(503, "too many connections")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 Service Unavailable") and b"connection: close" in head
    assert body == b"too many connections\n" and f"content-length: {len(body)}".encode() in head
