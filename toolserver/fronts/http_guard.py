"""The door every HTTP front's request passes, before the front reads it.

In this order, each refusal a JSON `{"detail": ...}` with its status (a 401 as RFC 6750
has it: `{"error": "invalid_token", "error_description": ...}` and `WWW-Authenticate`),
counted in `toolserver_http_refused_total{reason}`:

1. Host (421): a loopback name, the bound host or one of http.allowed_hosts, so that a
   page whose name was rebound to this address (DNS rebinding) is not answered. A server
   bound to every interface with caller tokens takes any Host: a rebound page has no token.
2. Origin (403): a browser's request is served only from http.allowed_origins (empty by
   default), so no page on another site can post code to an open server; clients that are
   not browsers send no Origin.
3. The caller's bearer token (401), before anything of the body is read.

The health checks `/v1/ping` and `/ping` pass all three: an orchestrator's probe names
the pod's address as its Host, and their "pong" tells a page nothing.
4. For a JSON route: `Content-Type: application/json` (415, which also makes a browser
   preflight every cross-site request), a body no larger than the route's limit (413,
   told by Content-Length before reading, and counted while reading a chunked one),
   whole within http.body_timeout_s (408), within what all bodies in flight may hold
   together while read and parsed (503), and of no more JSON values than
   http.max_json_values (413). A body that
   is not JSON within the other rules (depth, no NaN, no lone surrogates) is answered by
   its front, in that front's form (400).

The parsed body and the caller go to the front in the request's scope. While the front
answers, the door listens for the client: one that hangs up cancels the request, so its
calls that wait are dropped, those running are killed, and a notebook's session closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Callable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolserver.config import LOOPBACK_HOSTS, WILDCARD_HOSTS, CoreSettings
from toolserver.errors import InvalidRequest, Unauthenticated
from toolserver.fronts.http_listener import count_refusal
from toolserver.fronts.strict_json import JsonRefused, parse_limited
from toolserver.metrics import ServerMetrics
from toolserver.policy import CallerPolicy, Policies
from toolserver.text import valid_text

CALLER = "toolserver.caller"  # scope keys the door fills for the fronts
BODY = "toolserver.body"
HEALTH_PATHS = frozenset({"/v1/ping", "/ping"})  # open to orchestrators' probes: they answer "pong" and nothing else
PARSE_INLINE_BYTES = 256 << 10  # larger bodies are parsed off the event loop


@dataclass(frozen=True)
class JsonRoute:
    """A POST route that takes a JSON body."""

    batch: bool = False      # a code-judge batch: http.max_batch_body_mb, not http.max_body_mb
    reads_raw: bool = False  # its app parses the raw body itself (MCP's SDK): a body that is not
                             # JSON within the limits is refused here, not handed to the front


class Refusal(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class BodyBudget:
    """The bytes all requests' bodies may hold at once."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.max_bytes:
            raise Refusal(503, "bodies_in_flight", "the server is reading too many request bodies at once: retry")
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size


def has_body(headers: Headers) -> bool:
    """Whether the request says it carries a body."""
    return "transfer-encoding" in headers or headers.get("content-length", "0") not in ("0", "")


def host_name(host: str) -> str:
    """The name of a Host header's value, without its port."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class HttpGuard:
    """ASGI middleware in front of the fronts' routes."""

    def __init__(self, app: ASGIApp, settings: CoreSettings, policies: Policies, metrics: ServerMetrics,
                 json_routes: dict[str, JsonRoute]) -> None:
        self.app = app
        self.limits = settings.http
        self.policies = policies
        self.metrics = metrics
        self.json_routes = json_routes
        bound = settings.http.host.lower()
        self.any_host = "*" in settings.http.allowed_hosts or (bound in WILDCARD_HOSTS and not policies.open)
        self.hosts = LOOPBACK_HOSTS | {host_name(name) for name in settings.http.allowed_hosts} | (
            set() if bound in WILDCARD_HOSTS else {host_name(bound if ":" not in bound else f"[{bound}]")})
        self.origins = frozenset(origin.rstrip("/").lower() for origin in settings.http.allowed_origins)
        self.budget = BodyBudget(settings.http.max_bodies_mb << 20)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        held = 0
        body_read = False
        try:
            try:
                caller = self.admit(scope, headers)
                route = self.json_routes.get(scope["path"]) if scope["method"] == "POST" else None
                if route is None:
                    scope[CALLER] = caller
                    await self.app(scope, receive, send)
                    return
                held, body = await self.read_body(headers, receive, route.batch)
                body_read = True
                scope[CALLER] = caller
                scope[BODY] = await self.parse(body)
                if route.reads_raw and isinstance(scope[BODY], InvalidRequest):
                    raise Refusal(400, "json", str(scope[BODY]))
            except Refusal as refusal:
                await self.refuse(refusal, scope, receive, send, close=not body_read and has_body(headers))
                return
            if not route.reads_raw:  # the front reads the parsed body: the bytes go back now
                self.budget.give_back(held)
                held = 0
                body = b""
            await self.answer_while_connected(scope, body, receive, send)
        finally:
            self.budget.give_back(held)

    def admit(self, scope: Scope, headers: Headers) -> CallerPolicy | None:
        """The caller, once Host, Origin and token pass; raises Refusal."""
        if scope["path"] in HEALTH_PATHS:
            return None  # an orchestrator's probe names the pod's address; "pong" tells a page nothing
        host = headers.get("host")
        if host is not None and not self.any_host and host_name(host) not in self.hosts:
            raise Refusal(421, "host", f"Host {valid_text(host)[:100]!r} is not served here: add it to "
                                       "http.allowed_hosts")
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.origins:
            raise Refusal(403, "origin", f"requests from origin {valid_text(origin)[:100]!r} are not served: add it "
                                         "to http.allowed_origins")
        try:
            return self.policies.authenticate(headers.items())
        except Unauthenticated as exc:
            raise Refusal(401, "token", str(exc)) from None

    async def read_body(self, headers: Headers, receive: Receive, batch: bool) -> tuple[int, bytes]:
        """The bytes the body holds in the budget, and the body; raises Refusal."""
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refusal(415, "content_type", "the body must be JSON, sent with Content-Type: application/json")
        limit_mb = self.limits.max_batch_body_mb if batch else self.limits.max_body_mb
        limit = limit_mb << 20
        too_large = Refusal(413, "body_too_large", f"the body is larger than this route's {limit_mb} MiB "
                                                   f"(http.{'max_batch_body_mb' if batch else 'max_body_mb'})")
        declared = headers.get("content-length")
        held = 0
        if declared is not None and declared.isdigit():
            if int(declared) > limit:
                raise too_large
            self.budget.take(int(declared))
            held = int(declared)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.limits.body_timeout_s):
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise Refusal(499, "client_gone", "the client went away while sending its body")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise too_large
                    if size > held:
                        self.budget.take(size - held)
                        held = size
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            self.budget.give_back(held)
            raise Refusal(408, "body_timeout", f"the body did not arrive within http.body_timeout_s "
                                               f"({self.limits.body_timeout_s:g} s)") from None
        except BaseException:  # a refusal, or the server stopping
            self.budget.give_back(held)
            raise
        return held, b"".join(chunks)

    async def parse(self, body: bytes) -> Any:
        """The body's JSON, or the InvalidRequest that says why it is not, for the front to
        answer in its own form; raises Refusal (413) for a body of too many values."""
        parse: Callable[[], Any] = lambda: parse_limited(body, self.limits.max_json_values, self.limits.max_json_depth)
        try:
            if len(body) <= PARSE_INLINE_BYTES:
                return parse()
            return await asyncio.to_thread(parse)
        except JsonRefused as exc:
            if exc.too_large:
                raise Refusal(413, "json_values", str(exc)) from None
            return InvalidRequest(str(exc))

    async def answer_while_connected(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Runs the app on the body already read; cancels it if the client hangs up before
        its answer is out."""
        pending = [body]
        gone = asyncio.Event()
        answered = False

        async def replay() -> Message:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def sent(message: Message) -> None:
            nonlocal answered
            await send(message)
            answered = answered or (message["type"] == "http.response.body" and not message.get("more_body"))

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        answering = asyncio.ensure_future(self.app(scope, replay, sent))
        listening = asyncio.ensure_future(listen())
        try:
            await asyncio.wait((answering, listening), return_when=asyncio.FIRST_COMPLETED)
            if not answering.done() and not answered:
                answering.cancel()
                self.count("client_gone", "the client hung up before its answer: its request was cancelled")
            with contextlib.suppress(asyncio.CancelledError):
                await answering
        finally:
            listening.cancel()
            answering.cancel()

    async def refuse(self, refusal: Refusal, scope: Scope, receive: Receive, send: Send, close: bool) -> None:
        """Answers the refusal; close: the request's body is left unread, so the connection
        cannot carry another request."""
        self.count(refusal.reason, "HTTP request refused (%d): %s", refusal.status, str(refusal))
        if refusal.status == 499:
            return  # nobody is there to answer
        headers = {"connection": "close"} if close else {}
        body: dict[str, str] = {"detail": valid_text(str(refusal))}
        if refusal.status == 401:  # as RFC 6750 (and MCP's authorization) has it
            headers["www-authenticate"] = 'Bearer error="invalid_token"'
            body = {"error": "invalid_token", "error_description": body["detail"]}
        if refusal.status == 503:
            headers["retry-after"] = "1"
        await JSONResponse(body, status_code=refusal.status, headers=headers)(scope, receive, send)

    def count(self, reason: str, message: str, *args: object) -> None:
        count_refusal(self.metrics, reason, message, *args)


def parsed_body(scope: Scope) -> tuple[CallerPolicy, Any]:
    """The caller and the JSON body the door admitted for this request; raises
    InvalidRequest where the body is not JSON within the limits."""
    body = scope[BODY]
    if isinstance(body, InvalidRequest):
        raise InvalidRequest(str(body))
    return scope[CALLER], body
