"""The HTTP fronts' listener: what a connection may hold and for how long.

uvicorn with httptools (llhttp) parses requests strictly: a request with both
Content-Length and Transfer-Encoding, or with bare LF line ends, is a 400 and the
connection closes, so no request hides inside another. uvicorn itself bounds neither the
connections nor a request's head, so its protocol class is extended here:

- at most http.max_connections open at once; one past it is answered 503 and closed at
  once, so a flood of idle connections holds no descriptor gRPC needs (the budget is
  checked against RLIMIT_NOFILE at start-up);
- a connection that begins no request is closed after http.idle_timeout_s (uvicorn's
  keep-alive timer, armed from the start rather than after a first response, and stopped
  when a request begins rather than by any byte);
- a request's line and headers arrive within http.header_timeout_s of its first byte
  (408) and hold at most http.max_header_kb (431);
- a client that reads none of its answer for http.send_timeout_s, while the answer waits
  in the server's buffer, is dropped.

What a request's body may be (its size, how fast it comes, its JSON) is the ASGI guard's
(`toolserver.fronts.http_guard`). Every refusal is counted in
`toolserver_http_refused_total{reason}` and logged at most once in ten seconds a reason.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from http import HTTPStatus
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from toolserver.config import CoreSettings
from toolserver.errors import ConfigError
from toolserver.logs import Throttled
from toolserver.metrics import ServerMetrics

log = logging.getLogger(__name__)
THROTTLED = Throttled(log)
DESCRIPTORS_PER_SLOT = 16  # a jail's pipes, pidfd and kernel sockets, with room to spare
DESCRIPTORS_RESERVED = 1024  # gRPC's connections, the metrics port, logs, Lean, the search indexes


def count_refusal(metrics: ServerMetrics, reason: str, message: str, *args: object) -> None:
    """Counts a refusal by its reason and logs it, at most once in ten seconds a reason."""
    metrics.http_refused.labels(reason).inc()
    THROTTLED.warning(reason, message, *args)


def refusal(status: int, message: str) -> bytes:
    """A whole HTTP response that refuses a request and closes its connection."""
    body = f"{message}\n".encode()
    return (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


def connection_budget(settings: CoreSettings) -> int:
    """How many HTTP connections may be open at once: http.max_connections, less where
    RLIMIT_NOFILE (raised to its hard limit first) leaves no room for them beside what the
    rest of the server needs. Raises ConfigError where fewer than 64 would fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return settings.http.max_connections
    room = soft - DESCRIPTORS_RESERVED - DESCRIPTORS_PER_SLOT * settings.sandbox.slots
    if room >= settings.http.max_connections:
        return settings.http.max_connections
    if room < 64:
        raise ConfigError(f"RLIMIT_NOFILE {soft} leaves no room for HTTP connections beside the server's own "
                          f"descriptors: raise it (ulimit -n) to at least "
                          f"{soft - room + settings.http.max_connections}")
    log.warning("RLIMIT_NOFILE %d holds %d HTTP connections beside the server's own descriptors, not "
                "http.max_connections %d: raise it (ulimit -n) to serve more", soft, room,
                settings.http.max_connections)
    return room


def guarded_protocol(settings: CoreSettings, metrics: ServerMetrics, max_connections: int) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with the listener's limits."""
    limits = settings.http
    max_head_bytes = limits.max_header_kb << 10

    class GuardedProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.turned_away = False  # refused: nothing more it sends is read
            self.refused_at_once = False  # refused as it connected: uvicorn never knew it
            self.awaiting_head = False  # a request has begun and its head is not complete
            self.head_began = False  # a request began in the data being parsed
            self.head_bytes = 0
            self.head_timer: asyncio.TimerHandle | None = None
            self.send_timer: asyncio.TimerHandle | None = None  # armed while the answer waits on the client
            self.send_buffered = 0  # bytes of the answer waiting when the send timer was armed

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= max_connections:
                self.turned_away = self.refused_at_once = True
                self.transport = transport
                self.count("connections", "HTTP connection refused: %d open, the most http.max_connections allows",
                           len(self.connections))
                transport.write(refusal(503, f"too many connections ({max_connections} open)"))
                transport.close()
                return
            super().connection_made(transport)
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_head_timer()
            if self.send_timer is not None:
                self.send_timer.cancel()
            if not self.refused_at_once:
                super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.turned_away:
                return
            # The idle timer stays armed until a request begins (on_message_begin): bytes that
            # begin none (empty lines, a body left unread after an answer) do not stop it.
            self.head_began = False
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                pass  # no upgrade is served: the request is answered as a plain one
            except httptools.HttpParserError as exc:
                if not self.turned_away:  # else a callback failed on the request turned away
                    self.turn_away(400, "malformed", f"malformed HTTP request: {exc}")
                return
            if self.awaiting_head and not self.head_began:  # a head that goes on past its first data
                self.head_bytes += len(data)
                if self.head_bytes > max_head_bytes:
                    self.turn_away(431, "header_too_large",
                                   f"request line and headers over http.max_header_kb ({limits.max_header_kb})")

        def on_message_begin(self) -> None:
            if self.turned_away:
                return
            self._unset_keepalive_if_required()
            super().on_message_begin()
            self.awaiting_head = self.head_began = True
            self.head_bytes = 0
            self.stop_head_timer()
            self.head_timer = self.loop.call_later(limits.header_timeout_s, self.head_timed_out)

        def on_headers_complete(self) -> None:
            self.awaiting_head = False
            self.stop_head_timer()
            if self.turned_away:
                return
            if len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers) > max_head_bytes:
                self.turn_away(431, "header_too_large", f"request line and headers over http.max_header_kb "
                                                        f"({limits.max_header_kb})")
                return
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            if not self.turned_away:
                super().on_body(body)

        def on_message_complete(self) -> None:
            if not self.turned_away:
                super().on_message_complete()

        def pause_writing(self) -> None:
            super().pause_writing()
            self.arm_send_timer()

        def resume_writing(self) -> None:
            super().resume_writing()
            if self.send_timer is not None:
                self.send_timer.cancel()
                self.send_timer = None

        def arm_send_timer(self) -> None:
            if self.send_timer is not None:
                self.send_timer.cancel()
            self.send_buffered = self.transport.get_write_buffer_size()
            self.send_timer = self.loop.call_later(limits.send_timeout_s, self.send_timed_out)

        def send_timed_out(self) -> None:
            """A client that read some of its answer meanwhile gets another interval."""
            self.send_timer = None
            if self.transport.is_closing():
                return
            if self.transport.get_write_buffer_size() < self.send_buffered:
                self.arm_send_timer()
                return
            self.count("send_timeout", "HTTP client dropped: it read nothing of its answer for http.send_timeout_s "
                                       "(%g s)", limits.send_timeout_s)
            self.transport.abort()

        def head_timed_out(self) -> None:
            self.head_timer = None
            if self.transport.is_closing():
                return
            self.turn_away(408, "header_timeout",
                           f"request line and headers not complete within http.header_timeout_s "
                           f"({limits.header_timeout_s:g} s)")

        def stop_head_timer(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def turn_away(self, status: int, reason: str, message: str) -> None:
            self.turned_away = True
            self.count(reason, "HTTP request refused (%d): %s", status, message)
            if not self.transport.is_closing():
                if self.cycle is None or self.cycle.response_complete:
                    self.transport.write(refusal(status, message))
                self.transport.close()

        def count(self, reason: str, message: str, *args: object) -> None:
            count_refusal(metrics, reason, message, *args)

    return GuardedProtocol
