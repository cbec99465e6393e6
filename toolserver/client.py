"""Python client for the tool server, sync and asyncio, mirroring the service's verbs.

`ToolClient.run_python` makes one call; `ToolClient.run_many` sends many calls over
one ExecuteStream and returns the responses in request order. Request failures raise
a `ToolServerError` subclass per gRPC status; a failure of the code itself is not an
exception: it is the response's `outcome`. `token` is sent as the bearer token of every
call; `tls_ca` (and `tls_cert`/`tls_key` for mutual TLS) make the channel TLS.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterable, Sequence

import grpc

from toolserver.v1 import toolserver_pb2 as pb
from toolserver.v1 import toolserver_pb2_grpc as pb_grpc


class ToolServerError(Exception):
    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgument(ToolServerError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ToolServerError):
    code = grpc.StatusCode.NOT_FOUND


class PermissionDenied(ToolServerError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(ToolServerError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(ToolServerError):
    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(ToolServerError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class FailedPrecondition(ToolServerError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unauthenticated(ToolServerError):
    code = grpc.StatusCode.UNAUTHENTICATED


ERRORS = {cls.code: cls for cls in (InvalidArgument, NotFound, PermissionDenied, ResourceExhausted,
                                    Unavailable, DeadlineExceeded, FailedPrecondition, Unauthenticated)}


def error_from(exc: grpc.RpcError) -> ToolServerError:
    code = exc.code()
    return ERRORS.get(code, ToolServerError)(f"{code.name}: {exc.details()}", code)


def python_request(code: str, *, stdin: str = "", timeout_ms: int = 0, memory_mb: int = 0,
                   max_output_bytes: int = 0, request_id: str = "", session_id: str = "") -> pb.ExecuteRequest:
    return pb.ExecuteRequest(
        request_id=request_id or uuid.uuid4().hex,
        python=pb.PythonCall(code=code, stdin=stdin, session_id=session_id),
        limits=pb.Limits(timeout_ms=timeout_ms, memory_mb=memory_mb, max_output_bytes=max_output_bytes),
    )


def _ordered(requests: Sequence[pb.ExecuteRequest], responses: Iterable[pb.ExecuteResponse]) -> list[pb.ExecuteResponse]:
    by_id = {r.request_id: r for r in responses}
    missing = [r.request_id for r in requests if r.request_id not in by_id]
    if missing:
        raise ToolServerError(f"stream ended without answers for {len(missing)} calls", grpc.StatusCode.DATA_LOSS)
    return [by_id[r.request_id] for r in requests]


def _unique_ids(requests: Sequence[pb.ExecuteRequest]) -> None:
    ids = [r.request_id for r in requests]
    if len(set(ids)) != len(ids) or not all(ids):
        raise ValueError("run_many needs a unique, non-empty request_id per request")


def channel_credentials(tls_ca: str | None, tls_cert: str | None, tls_key: str | None) -> grpc.ChannelCredentials | None:
    """TLS credentials from PEM files, or None for a plaintext channel."""
    if not (tls_ca or tls_cert):
        return None
    read = lambda path: Path(path).read_bytes() if path else None  # noqa: E731
    return grpc.ssl_channel_credentials(read(tls_ca), read(tls_key), read(tls_cert))


def auth_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


class ToolClient:
    """Blocking client. `target` is any gRPC target: host:port, dns:///name:port, ..."""

    def __init__(self, target: str = "127.0.0.1:50051", *, timeout_s: float = 60.0,
                 options: Sequence[tuple[str, object]] = (), token: str | None = None,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.metadata = auth_metadata(token)
        credentials = channel_credentials(tls_ca, tls_cert, tls_key)
        self.channel = (grpc.insecure_channel(target, options=list(options)) if credentials is None
                        else grpc.secure_channel(target, credentials, options=list(options)))
        self.stub = pb_grpc.ToolServerStub(self.channel)

    def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        try:
            return self.stub.Execute(request, timeout=timeout_s or self.timeout_s, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def run_python(self, code: str, **kwargs) -> pb.ExecuteResponse:
        timeout_s = kwargs.pop("timeout_s", None)
        return self.execute(python_request(code, **kwargs), timeout_s=timeout_s)

    def run_many(self, requests: Sequence[pb.ExecuteRequest], *, timeout_s: float | None = None) -> list[pb.ExecuteResponse]:
        _unique_ids(requests)
        try:
            responses = list(self.stub.ExecuteStream(iter(requests), timeout=timeout_s or self.timeout_s,
                                                     metadata=self.metadata))
        except grpc.RpcError as exc:
            raise error_from(exc) from None
        return _ordered(requests, responses)

    def list_tools(self) -> list[pb.ToolSpec]:
        try:
            return list(self.stub.ListTools(pb.ListToolsRequest(), timeout=self.timeout_s, metadata=self.metadata).tools)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def server_info(self) -> pb.ServerInfo:
        try:
            return self.stub.GetServerInfo(pb.ServerInfoRequest(), timeout=self.timeout_s, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def open_session(self) -> pb.Session:
        try:
            return self.stub.OpenSession(pb.OpenSessionRequest(), timeout=max(self.timeout_s, 120.0),
                                         metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def close_session(self, session_id: str) -> None:
        try:
            self.stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), timeout=self.timeout_s,
                                   metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "ToolClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncToolClient:
    """asyncio client with the same verbs as ToolClient."""

    def __init__(self, target: str = "127.0.0.1:50051", *, timeout_s: float = 60.0,
                 options: Sequence[tuple[str, object]] = (), token: str | None = None,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None) -> None:
        self.timeout_s = timeout_s
        self.metadata = auth_metadata(token)
        credentials = channel_credentials(tls_ca, tls_cert, tls_key)
        self.channel = (grpc.aio.insecure_channel(target, options=list(options)) if credentials is None
                        else grpc.aio.secure_channel(target, credentials, options=list(options)))
        self.stub = pb_grpc.ToolServerStub(self.channel)

    async def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        try:
            return await self.stub.Execute(request, timeout=timeout_s or self.timeout_s, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    async def run_python(self, code: str, **kwargs) -> pb.ExecuteResponse:
        timeout_s = kwargs.pop("timeout_s", None)
        return await self.execute(python_request(code, **kwargs), timeout_s=timeout_s)

    async def run_many(self, requests: Sequence[pb.ExecuteRequest], *, timeout_s: float | None = None) -> list[pb.ExecuteResponse]:
        _unique_ids(requests)
        try:
            call = self.stub.ExecuteStream(iter(requests), timeout=timeout_s or self.timeout_s, metadata=self.metadata)
            responses = [response async for response in call]
        except grpc.RpcError as exc:
            raise error_from(exc) from None
        return _ordered(requests, responses)

    async def list_tools(self) -> list[pb.ToolSpec]:
        try:
            return list((await self.stub.ListTools(pb.ListToolsRequest(), timeout=self.timeout_s,
                                                   metadata=self.metadata)).tools)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> "AsyncToolClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


