"""The server's log: plain lines for a terminal, or one JSON object a line for log
pipelines, with the request id, tool, outcome and caller of the call a line is about."""

from __future__ import annotations

import json
import logging
import threading
import time

CALL_FIELDS = ("request_id", "tool", "outcome", "status", "caller", "elapsed_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for name in CALL_FIELDS:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, style: str) -> None:
    handler = logging.StreamHandler()
    if style == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


class Throttled:
    """A log that writes a kind of line at most once an interval, with how many of that
    kind it left out meanwhile: what a hostile client can make happen thousands of times a
    second must not fill the disk."""

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._left_out: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, kind: str, message: str, *args: object) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, -self.interval_s) < self.interval_s:
                self._left_out[kind] = self._left_out.get(kind, 0) + 1
                return
            self._last[kind] = now
            left_out = self._left_out.pop(kind, 0)
        suffix = f" ({left_out} more like it in the last {self.interval_s:g} s)" if left_out else ""
        self.logger.warning(message + suffix, *args)
