"""The fronts' door as an ASGI app in front of a stand-in front: what passes, what is
refused and how, and a request cancelled when its client hangs up."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.security.conftest import POLICY_FILE, TOKENS
from toolserver.errors import InvalidRequest
from toolserver.fronts.http_guard import BODY, CALLER, HttpGuard, JsonRoute, host_name, parsed_body
from toolserver.metrics import ServerMetrics
from toolserver.policy import Policies
from toolserver.settings import load_policies, load_settings

ROUTES = {"/run_code": JsonRoute(), "/run/batch": JsonRoute(batch=True), "/mcp": JsonRoute(reads_raw=True)}
JSON = {"content-type": "application/json"}


class Front:
    """Answers 200 with what the door handed it; or waits until cancelled."""

    def __init__(self, wait: bool = False) -> None:
        self.wait = wait
        self.seen: list[dict[str, Any]] = []
        self.cancelled = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:
        self.seen.append(scope)
        if self.wait:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        try:
            body = parsed_body(scope)[1] if BODY in scope else None
        except InvalidRequest as exc:
            body = f"invalid: {exc}"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def guard(front: Front, policies: Policies | None = None, **settings: Any) -> HttpGuard:
    return HttpGuard(front, load_settings(**settings), policies or Policies({}), ServerMetrics(), ROUTES)


async def call(door: HttpGuard, path: str = "/run_code", headers: dict[str, str] | None = None,
               chunks: tuple[bytes, ...] = (b"{}",), method: str = "POST", hang_up_after_s: float | None = None,
               complete: bool = True) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body the door answers; chunks: the body as the client
    sends it (complete: all of it), after which it waits, or hangs up after hang_up_after_s."""
    scope = {"type": "http", "method": method, "path": path,
             "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8080", **(headers or {})}.items()]}
    messages = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1 or not complete}
                for i, chunk in enumerate(chunks)]

    async def receive():
        if messages:
            return messages.pop(0)
        if hang_up_after_s is None:
            await asyncio.sleep(3600)
        await asyncio.sleep(hang_up_after_s)
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message):
        sent.append(message)

    await door(scope, receive, send)
    if not sent:
        return 0, {}, b""
    head = {k.decode(): v.decode() for k, v in sent[0].get("headers", [])}
    return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])


async def test_a_json_request_reaches_its_front_parsed_with_its_caller():
    front = Front()
    status, _, body = await call(guard(front), headers=JSON, chunks=(b'{"code": ', b'"print(1)"}'))
    assert status == 200 and json.loads(body) == {"code": "print(1)"}
    assert front.seen[0][CALLER].name and front.seen[0][BODY] == {"code": "print(1)"}


@pytest.mark.parametrize("host,served", [("127.0.0.1:8080", True), ("localhost", True), ("[::1]:8080", True),
                                         ("LOCALHOST:1", True), ("rebound.example:8080", False),
                                         ("127.0.0.1.evil.example", False)])
async def test_only_loopback_names_are_served_on_loopback(host, served):
    status, _, _ = await call(guard(Front()), headers={**JSON, "host": host})
    assert (status == 200) == served and (served or status == 421)


async def test_allowed_hosts_and_a_wildcard_bind_with_tokens_take_other_names():
    assert (await call(guard(Front(), **{"http.allowed_hosts": ["tools.internal"]}),
                       headers={**JSON, "host": "tools.internal:80"}))[0] == 200
    assert (await call(guard(Front(), **{"http.allowed_hosts": ["*"]}), headers={**JSON, "host": "x.y"}))[0] == 200
    open_everywhere = guard(Front(), **{"http.host": "0.0.0.0"})
    assert (await call(open_everywhere, headers={**JSON, "host": "10.0.0.5:8080"}))[0] == 421
    with_tokens = guard(Front(), load_policies_text(), **{"http.host": "0.0.0.0"})
    assert (await call(with_tokens, headers={**JSON, "host": "10.0.0.5:8080",
                                             "authorization": f"Bearer {TOKENS['bob']}"}))[0] == 200


def load_policies_text() -> Policies:
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as handle:
        handle.write(POLICY_FILE)
        handle.flush()
        return load_policies(handle.name)


async def test_origins_are_refused_unless_allowed():
    status, _, body = await call(guard(Front()), headers={**JSON, "origin": "https://evil.example"})
    assert status == 403 and "http.allowed_origins" in json.loads(body)["detail"]
    allowed = guard(Front(), **{"http.allowed_origins": ["https://notebook.example"]})
    assert (await call(allowed, headers={**JSON, "origin": "https://notebook.example"}))[0] == 200
    assert (await call(allowed, headers={**JSON, "origin": "https://notebook.example.evil"}))[0] == 403


async def test_tokens_are_checked_before_the_body_on_every_route_but_health():
    front = Front()
    door = guard(front, load_policies_text())
    status, head, body = await call(door, headers=JSON)
    assert status == 401 and json.loads(body)["error"] == "invalid_token" and "www-authenticate" in head
    assert (await call(door, path="/status", method="GET"))[0] == 401
    assert (await call(door, path="/v1/ping", method="GET"))[0] == 200
    assert (await call(door, path="/ping", method="GET", headers={"host": "10.1.2.3:8080"}))[0] == 200  # a probe
    assert (await call(door, headers={**JSON, "authorization": f"Bearer {TOKENS['bob']}"}))[0] == 200
    assert [scope[CALLER].name for scope in front.seen if scope[CALLER]] == ["bob"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""])
async def test_json_routes_take_only_json(content_type):
    headers = {"content-length": "2", **({"content-type": content_type} if content_type else {})}
    status, head, _ = await call(guard(Front()), headers=headers)
    assert status == 415 and head.get("connection") == "close"  # its body is left unread


async def test_a_body_over_its_routes_limit_is_413_before_or_while_reading():
    door = guard(Front(), **{"http.max_body_mb": 1, "http.max_batch_body_mb": 2})
    status, head, _ = await call(door, headers={**JSON, "content-length": str(2 << 20)})
    assert status == 413 and head["connection"] == "close"
    megabyte = b" " * (1 << 20)
    assert (await call(door, headers=JSON, chunks=(megabyte, megabyte)))[0] == 413
    assert (await call(door, path="/run/batch", headers=JSON, chunks=(b"{}", megabyte)))[0] == 200
    assert door.budget.held == 0


async def test_bodies_in_flight_share_one_budget():
    """A body holds its bytes while it is read and parsed, and through the call where the
    front reads it raw (MCP)."""
    front = Front(wait=True)
    door = guard(front, **{"http.max_body_mb": 1, "http.max_batch_body_mb": 1, "http.max_bodies_mb": 1})
    parsed = asyncio.ensure_future(call(door, headers={**JSON, "content-length": str(600 << 10)},
                                        chunks=(b" " * (600 << 10) + b"{}",), hang_up_after_s=0.5))
    while not front.seen:
        await asyncio.sleep(0.01)
    assert door.budget.held == 0  # parsed: its bytes are back while the call runs
    raw = asyncio.ensure_future(call(door, path="/mcp", headers={**JSON, "content-length": str(600 << 10)},
                                     chunks=(b" " * (600 << 10) + b"{}",), hang_up_after_s=0.5))
    while len(front.seen) < 2:
        await asyncio.sleep(0.01)
    assert door.budget.held >= 600 << 10
    status, head, _ = await call(door, headers={**JSON, "content-length": str(600 << 10)}, chunks=(b"{}",))
    assert status == 503 and head["retry-after"] == "1" and head["connection"] == "close"
    await asyncio.gather(parsed, raw)
    assert door.budget.held == 0


async def test_a_slow_body_is_408():
    door = guard(Front(), **{"http.body_timeout_s": 0.2})
    status, _, body = await call(door, headers=JSON, chunks=(b'{"code"', b': "1"}'), hang_up_after_s=5)
    assert status == 200  # both chunks in time
    status, _, body = await call(door, headers={**JSON, "content-length": "100"}, chunks=(b'{"code"',), complete=False)
    assert status == 408 and "body_timeout_s" in json.loads(body)["detail"] and door.budget.held == 0


async def test_json_errors_go_to_the_front_but_raw_readers_get_400():
    status, _, body = await call(guard(Front()), headers=JSON, chunks=(b'{"code": NaN}',))
    assert status == 200 and json.loads(body).startswith("invalid: the body is not valid JSON")
    status, _, body = await call(guard(Front()), path="/mcp", headers=JSON, chunks=(b'{"a": "\\ud800"}',))
    assert status == 400 and "lone surrogate" in json.loads(body)["detail"]
    status, _, _ = await call(guard(Front(), **{"http.max_json_values": 10}), headers=JSON,
                              chunks=(b"[" + b"1," * 20 + b"1]",))
    assert status == 413


async def test_a_client_that_hangs_up_cancels_its_request():
    front = Front(wait=True)
    status, _, _ = await call(guard(front), headers=JSON, hang_up_after_s=0.2)
    assert status == 0 and front.cancelled.is_set()


def test_host_names_lose_their_port():
    assert [host_name(h) for h in ("a.b:80", "A.B", "[::1]:8080", "[::1]", "::1")] == ["a.b", "a.b", "[::1]",
                                                                                       "[::1]", "::1"]
