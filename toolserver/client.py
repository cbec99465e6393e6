"""Python client for the tool server, sync and asyncio, mirroring the service's verbs.

`ToolClient.run_python` makes one call; `ToolClient.run_many` sends many calls over
one ExecuteStream and returns the responses in request order. Request failures raise
a `ToolServerError` subclass per gRPC status; a failure of the code itself is not an
exception: it is the response's `outcome`. `token` is sent as the bearer token of every
call; `tls_ca` (and `tls_cert`/`tls_key` for mutual TLS) make the channel TLS.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

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


def channel_options(options: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """Round-robin across every address a target resolves to (dns:///, ipv4:a,b,...)
    unless the caller's options say otherwise."""
    merged: dict[str, object] = {"grpc.lb_policy_name": "round_robin"}
    merged.update(dict(options))
    return list(merged.items())


def may_retry(exc: grpc.RpcError, request: pb.ExecuteRequest) -> bool:
    """Only a call the server refused before running it, and that holds no session
    state, is retried: on another replica it may succeed (draining, queue full)."""
    if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return False
    if request.WhichOneof("call") == "python" and request.python.session_id:
        return False
    return ("toolserver-not-started", "1") in tuple(exc.trailing_metadata() or ())


def backoff_s(attempt: int) -> float:
    return min(0.05 * 2 ** attempt, 1.0)


class Connection:
    """Channels to the target and to the replicas that hold this client's sessions."""

    def __init__(self, target: str, options: Sequence[tuple[str, object]], credentials: grpc.ChannelCredentials | None,
                 aio: bool) -> None:
        self.target = target
        self.options = channel_options(options)
        self.credentials = credentials
        self.module = grpc.aio if aio else grpc
        self.channel = self.open(target)
        self.stub = pb_grpc.ToolServerStub(self.channel)
        self.replicas: dict[str, tuple[Any, pb_grpc.ToolServerStub]] = {}  # address -> (channel, stub)
        self.pinned: dict[str, pb_grpc.ToolServerStub] = {}                # session_id -> its replica's stub

    def open(self, target: str) -> Any:
        if self.credentials is None:
            return self.module.insecure_channel(target, options=self.options)
        return self.module.secure_channel(target, self.credentials, options=self.options)

    def pin(self, session: pb.Session) -> None:
        """Sends the session's calls to the replica that holds it."""
        if not session.replica or session.replica == self.target:
            return
        if session.replica not in self.replicas:
            channel = self.open(session.replica)
            self.replicas[session.replica] = (channel, pb_grpc.ToolServerStub(channel))
        self.pinned[session.session_id] = self.replicas[session.replica][1]

    def stub_for(self, request: pb.ExecuteRequest) -> pb_grpc.ToolServerStub:
        if request.WhichOneof("call") == "python" and request.python.session_id:
            return self.pinned.get(request.python.session_id, self.stub)
        return self.stub

    def channels(self) -> list[Any]:
        return [self.channel] + [channel for channel, _ in self.replicas.values()]


class ToolClient:
    """Blocking client. `target` is any gRPC target: host:port, dns:///name:port,
    ipv4:a:p,b:p, ...; calls are balanced round-robin across the addresses it resolves
    to, a call refused before it ran is retried (up to `retries` times), and a session's
    calls go to the replica that holds it."""

    def __init__(self, target: str = "127.0.0.1:50051", *, timeout_s: float = 60.0,
                 options: Sequence[tuple[str, object]] = (), token: str | None = None,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                 retries: int = 2) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self.metadata = auth_metadata(token)
        self.connection = Connection(target, options, channel_credentials(tls_ca, tls_cert, tls_key), aio=False)
        self.channel = self.connection.channel
        self.stub = self.connection.stub

    def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        stub = self.connection.stub_for(request)
        attempt = 0
        while True:
            try:
                return stub.Execute(request, timeout=timeout_s or self.timeout_s, metadata=self.metadata)
            except grpc.RpcError as exc:
                if attempt >= self.retries or not may_retry(exc, request):
                    raise error_from(exc) from None
            attempt += 1
            time.sleep(backoff_s(attempt))

    def run_python(self, code: str, **kwargs) -> pb.ExecuteResponse:
        timeout_s = kwargs.pop("timeout_s", None)
        return self.execute(python_request(code, **kwargs), timeout_s=timeout_s)

    def run_many(self, requests: Sequence[pb.ExecuteRequest], *, timeout_s: float | None = None) -> list[pb.ExecuteResponse]:
        """Sends requests over one ExecuteStream (not for session calls, which execute() pins)."""
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

    def open_session(self, *, memory_mb: int = 0) -> pb.Session:
        """A new session; memory_mb: what its code may add to the warm kernel (0: the
        server's default)."""
        try:
            session = self.stub.OpenSession(pb.OpenSessionRequest(limits=pb.Limits(memory_mb=memory_mb)),
                                            timeout=max(self.timeout_s, 120.0),
                                            metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None
        self.connection.pin(session)
        return session

    def close_session(self, session_id: str) -> None:
        stub = self.connection.pinned.pop(session_id, self.stub)
        try:
            stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), timeout=self.timeout_s,
                              metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    def close(self) -> None:
        for channel in self.connection.channels():
            channel.close()

    def __enter__(self) -> "ToolClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncToolClient:
    """asyncio client with the same verbs and balancing as ToolClient."""

    def __init__(self, target: str = "127.0.0.1:50051", *, timeout_s: float = 60.0,
                 options: Sequence[tuple[str, object]] = (), token: str | None = None,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                 retries: int = 2) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self.metadata = auth_metadata(token)
        self.connection = Connection(target, options, channel_credentials(tls_ca, tls_cert, tls_key), aio=True)
        self.channel = self.connection.channel
        self.stub = self.connection.stub

    async def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        stub = self.connection.stub_for(request)
        attempt = 0
        while True:
            try:
                return await stub.Execute(request, timeout=timeout_s or self.timeout_s, metadata=self.metadata)
            except grpc.RpcError as exc:
                if attempt >= self.retries or not may_retry(exc, request):
                    raise error_from(exc) from None
            attempt += 1
            await asyncio.sleep(backoff_s(attempt))

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

    async def open_session(self, *, memory_mb: int = 0) -> pb.Session:
        try:
            session = await self.stub.OpenSession(pb.OpenSessionRequest(limits=pb.Limits(memory_mb=memory_mb)),
                                                  timeout=max(self.timeout_s, 120.0),
                                                  metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None
        self.connection.pin(session)
        return session

    async def close_session(self, session_id: str) -> None:
        stub = self.connection.pinned.pop(session_id, self.stub)
        try:
            await stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), timeout=self.timeout_s,
                                    metadata=self.metadata)
        except grpc.RpcError as exc:
            raise error_from(exc) from None

    async def close(self) -> None:
        for channel in self.connection.channels():
            await channel.close()

    async def __aenter__(self) -> "AsyncToolClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
