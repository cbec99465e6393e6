"""Errors of the settings and of a request (not of the caller's code), and their gRPC status codes.

Tools raise these; each front maps them to its own status in one place (the gRPC front
through `status_of`). A failure of the caller's code is never one of these: it is an
Outcome.
"""

from __future__ import annotations

import grpc

from toolserver.text import valid_text


class ConfigError(ValueError):
    """The settings are invalid; the message names the field."""


class RequestError(Exception):
    """Base class: the request itself cannot be served."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidRequest(RequestError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class Unauthenticated(RequestError):
    """No token, or one no policy knows."""

    code = grpc.StatusCode.UNAUTHENTICATED


class NotFound(RequestError):
    code = grpc.StatusCode.NOT_FOUND


class PermissionDenied(RequestError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Exhausted(RequestError):
    """A queue, a cap on sessions, or a size limit is full."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Busy(Exhausted):
    """No worker could start the call before its client stops waiting; worth retrying
    after retry_after_s."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Unavailable(RequestError):
    """Shutting down, or the sandbox is not proven safe."""

    code = grpc.StatusCode.UNAVAILABLE


class ToolUnavailable(RequestError):
    """The tool exists in the contract but is not enabled or installed here."""

    code = grpc.StatusCode.FAILED_PRECONDITION


def status_of(error: Exception) -> tuple[grpc.StatusCode, str]:
    """The gRPC status and message a request error is answered with."""
    if isinstance(error, RequestError):
        return error.code, valid_text(str(error))
    return grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}"
