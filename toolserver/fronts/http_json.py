"""What the HTTP fronts share: answering a JSON request (the door, http_guard, reads it)."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import Busy, RequestError
from toolserver.metrics import ServerMetrics


def status_for(error: RequestError, statuses: dict[type[RequestError], int], default: int) -> int:
    """The HTTP status of a request error in a front's table (its first matching class)."""
    return next((status for kind, status in statuses.items() if isinstance(error, kind)), default)


def infrastructure_failed(response: pb.ExecuteResponse) -> bool:
    """Whether a call's answer is the server's failure rather than the program's: CRASHED
    but for a program that a signal ended (its own, or its native code's), which python3
    reports as a negative exit status."""
    if response.outcome == pb.INVALID:
        return True
    return response.outcome == pb.CRASHED and response.python.exit_code >= 0


def with_error(stderr: str, error: str) -> str:
    """stderr with the server's error line after it, for APIs that have only the streams to
    say why a call failed; stderr as it is when it already holds the error."""
    if not error or error in stderr:
        return stderr
    return f"{stderr}{'' if not stderr or stderr.endswith(chr(10)) else chr(10)}{error}\n"


def counted_reply(metrics: ServerMetrics, front: str, status: int, body: dict[str, Any],
                  error: RequestError | None = None) -> JSONResponse:
    """The JSON answer, counted by front and status; a Busy error's answer says when to
    retry (Retry-After)."""
    metrics.front_requests.labels(front, str(status)).inc()
    headers = {"Retry-After": str(error.retry_after_s)} if isinstance(error, Busy) else None
    return JSONResponse(body, status_code=status, headers=headers)
