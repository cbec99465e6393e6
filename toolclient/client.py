"""Python client for the tool server, sync and asyncio, mirroring the service's verbs.

`ToolClient.run_python` makes one call; `ToolClient.stream` sends many calls over one
ExecuteStream and yields each answer as the server finishes it; `ToolClient.run_many`
returns them in request order. Request failures raise a `ToolServerError` subclass per
gRPC status; a failure of the code itself is not an exception: it is the response's
`outcome`. `token` is sent as the bearer token of every call; `tls_ca` (and
`tls_cert`/`tls_key` for mutual TLS) make the channel TLS. `AsyncToolClient` has the same
verbs as coroutines (and `stream` as an async iterator); both share `ToolClientBase`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterable, AsyncIterator, Callable, ClassVar, Iterable, Iterator, Sequence, cast

import grpc

from toolcontract.v1 import toolserver_pb2 as pb
from toolcontract.v1 import toolserver_pb2_grpc as pb_grpc

RETRYABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
OPEN_SESSION_TIMEOUT_S = 120.0  # OpenSession may wait for a session to be made: never a shorter deadline

# The generated stub's constructor is untyped (grpc's plugin writes no annotations); its
# methods are Any, so each verb below names the response type it returns.
new_stub = cast(Callable[[Any], pb_grpc.ToolServerStub], pb_grpc.ToolServerStub)


class ToolServerError(Exception):
    """A call the server refused or the channel failed; `code` is its gRPC status."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def retryable(self) -> bool:
        """The infrastructure failed, not the request (no server reachable, draining, queue
        full): a call that holds no session state may be sent again. The client resends on
        its own only calls the server says it never started (`may_retry`)."""
        return self.code in RETRYABLE_CODES


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


@contextlib.contextmanager
def translated_errors() -> Iterator[None]:
    """Raises a gRPC failure of the block as its ToolServerError: every verb of both
    clients goes through here."""
    try:
        yield
    except grpc.RpcError as exc:
        raise error_from(exc) from None


def python_request(code: str, *, stdin: str = "", timeout_ms: int = 0, memory_mb: int = 0,
                   max_output_bytes: int = 0, request_id: str = "", session_id: str = "",
                   files: dict[str, bytes] | None = None, fetch_files: Sequence[str] = ()) -> pb.ExecuteRequest:
    """A python call; files are written into its working directory before it runs and
    fetch_files come back in the answer's python.files."""
    return pb.ExecuteRequest(
        request_id=request_id or uuid.uuid4().hex,
        python=pb.PythonCall(code=code, stdin=stdin, session_id=session_id, files=files or {},
                             fetch_files=fetch_files),
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

    def read(path: str | None) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return grpc.ssl_channel_credentials(read(tls_ca), read(tls_key), read(tls_cert))


def auth_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def channel_options(options: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """Round-robin across every address a target resolves to (dns:///, ipv4:a,b,...), and
    answers of any size (a call's output is capped by the server, 16 MiB a stream by
    default), unless the caller's options say otherwise."""
    merged: dict[str, object] = {"grpc.lb_policy_name": "round_robin", "grpc.max_receive_message_length": -1}
    merged.update(dict(options))
    return list(merged.items())


def may_retry(exc: grpc.RpcError, request: pb.ExecuteRequest) -> bool:
    """Only a call the server refused before running it, and that holds no session
    state, is retried: on another replica it may succeed (draining, queue full)."""
    if exc.code() not in RETRYABLE_CODES:
        return False
    if request.WhichOneof("call") == "python" and request.python.session_id:
        return False
    return ("toolserver-not-started", "1") in tuple(exc.trailing_metadata() or ())


def backoff_s(attempt: int) -> float:
    return min(0.05 * 2.0 ** attempt, 1.0)


class Connection:
    """Channels to the target and to the replicas that hold this client's sessions."""

    def __init__(self, target: str, options: Sequence[tuple[str, object]], credentials: grpc.ChannelCredentials | None,
                 aio: bool) -> None:
        self.target = target
        self.options = channel_options(options)
        self.credentials = credentials
        self.module = grpc.aio if aio else grpc
        self.channel = self.open(target)
        self.stub = new_stub(self.channel)
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
            self.replicas[session.replica] = (channel, new_stub(channel))
        self.pinned[session.session_id] = self.replicas[session.replica][1]

    def unpin(self, session_id: str) -> pb_grpc.ToolServerStub:
        """The stub of the replica that held the session, which is forgotten."""
        return self.pinned.pop(session_id, self.stub)

    def stub_for(self, request: pb.ExecuteRequest) -> pb_grpc.ToolServerStub:
        if request.WhichOneof("call") == "python" and request.python.session_id:
            return self.pinned.get(request.python.session_id, self.stub)
        return self.stub

    def channels(self) -> list[Any]:
        return [self.channel] + [channel for channel, _ in self.replicas.values()]


class ToolClientBase:
    """What both clients share. `target` is any gRPC target: host:port, dns:///name:port,
    ipv4:a:p,b:p, ...; calls are balanced round-robin across the addresses it resolves
    to, a call refused before it ran is retried (up to `retries` times), and a session's
    calls go to the replica that holds it."""

    aio: ClassVar[bool] = False

    def __init__(self, target: str = "127.0.0.1:50051", *, timeout_s: float = 60.0,
                 options: Sequence[tuple[str, object]] = (), token: str | None = None,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                 retries: int = 2) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self.metadata = auth_metadata(token)
        self.connection = Connection(target, options, channel_credentials(tls_ca, tls_cert, tls_key), aio=self.aio)
        self.channel = self.connection.channel
        self.stub = self.connection.stub

    def _call_options(self, timeout_s: float | None = None) -> dict[str, Any]:
        return {"timeout": timeout_s or self.timeout_s, "metadata": self.metadata}

    def _open_session_options(self) -> dict[str, Any]:
        return self._call_options(max(self.timeout_s, OPEN_SESSION_TIMEOUT_S))

    def _retries_left(self, exc: grpc.RpcError, request: pb.ExecuteRequest, attempt: int) -> bool:
        return attempt < self.retries and may_retry(exc, request)


class ToolClient(ToolClientBase):
    """Blocking client."""

    def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        stub = self.connection.stub_for(request)
        attempt = 0
        while True:
            with translated_errors():
                try:
                    response: pb.ExecuteResponse = stub.Execute(request, **self._call_options(timeout_s))
                    return response
                except grpc.RpcError as exc:
                    if not self._retries_left(exc, request, attempt):
                        raise
            attempt += 1
            time.sleep(backoff_s(attempt))

    def run_python(self, code: str, **kwargs: Any) -> pb.ExecuteResponse:
        timeout_s = kwargs.pop("timeout_s", None)
        return self.execute(python_request(code, **kwargs), timeout_s=timeout_s)

    def stream(self, requests: Iterable[pb.ExecuteRequest], *, timeout_s: float | None = None
               ) -> Iterator[pb.ExecuteResponse]:
        """Each request's answer as the server finishes it (not in request order; match them
        by request_id), all over one ExecuteStream. Not for session calls, which execute() pins."""
        call = self.stub.ExecuteStream(iter(requests), **self._call_options(timeout_s))
        try:
            with translated_errors():
                yield from call
        finally:
            call.cancel()

    def run_many(self, requests: Sequence[pb.ExecuteRequest], *, timeout_s: float | None = None) -> list[pb.ExecuteResponse]:
        """Every request's answer, in request order, over one ExecuteStream."""
        _unique_ids(requests)
        return _ordered(requests, list(self.stream(requests, timeout_s=timeout_s)))

    def list_tools(self) -> list[pb.ToolSpec]:
        with translated_errors():
            return list(self.stub.ListTools(pb.ListToolsRequest(), **self._call_options()).tools)

    def server_info(self) -> pb.ServerInfo:
        with translated_errors():
            info: pb.ServerInfo = self.stub.GetServerInfo(pb.ServerInfoRequest(), **self._call_options())
        return info

    def open_session(self, *, memory_mb: int = 0) -> pb.Session:
        """A new session; memory_mb: what its code may add to the warm process (0: the
        server's default)."""
        with translated_errors():
            request = pb.OpenSessionRequest(limits=pb.Limits(memory_mb=memory_mb))
            session: pb.Session = self.stub.OpenSession(request, **self._open_session_options())
        self.connection.pin(session)
        return session

    def close_session(self, session_id: str) -> None:
        stub = self.connection.unpin(session_id)
        with translated_errors():
            stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), **self._call_options())

    def close(self) -> None:
        for channel in self.connection.channels():
            channel.close()

    def __enter__(self) -> "ToolClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncToolClient(ToolClientBase):
    """asyncio client with the same verbs and balancing as ToolClient."""

    aio = True

    async def execute(self, request: pb.ExecuteRequest, *, timeout_s: float | None = None) -> pb.ExecuteResponse:
        stub = self.connection.stub_for(request)
        attempt = 0
        while True:
            with translated_errors():
                try:
                    response: pb.ExecuteResponse = await stub.Execute(request, **self._call_options(timeout_s))
                    return response
                except grpc.RpcError as exc:
                    if not self._retries_left(exc, request, attempt):
                        raise
            attempt += 1
            await asyncio.sleep(backoff_s(attempt))

    async def run_python(self, code: str, **kwargs: Any) -> pb.ExecuteResponse:
        timeout_s = kwargs.pop("timeout_s", None)
        return await self.execute(python_request(code, **kwargs), timeout_s=timeout_s)

    async def stream(self, requests: Iterable[pb.ExecuteRequest] | AsyncIterable[pb.ExecuteRequest], *,
                     timeout_s: float | None = None) -> AsyncIterator[pb.ExecuteResponse]:
        """Each request's answer as the server finishes it (not in request order; match them
        by request_id), all over one ExecuteStream; requests may be an async iterator that
        waits for answers before it sends more. Not for session calls, which execute() pins."""
        source = requests if isinstance(requests, AsyncIterable) else iter(requests)
        call = self.stub.ExecuteStream(source, **self._call_options(timeout_s))
        try:
            with translated_errors():
                async for response in call:
                    yield response
        finally:
            call.cancel()

    async def run_many(self, requests: Sequence[pb.ExecuteRequest], *, timeout_s: float | None = None
                       ) -> list[pb.ExecuteResponse]:
        """Every request's answer, in request order, over one ExecuteStream."""
        _unique_ids(requests)
        return _ordered(requests, [response async for response in self.stream(requests, timeout_s=timeout_s)])

    async def list_tools(self) -> list[pb.ToolSpec]:
        with translated_errors():
            return list((await self.stub.ListTools(pb.ListToolsRequest(), **self._call_options())).tools)

    async def server_info(self) -> pb.ServerInfo:
        with translated_errors():
            info: pb.ServerInfo = await self.stub.GetServerInfo(pb.ServerInfoRequest(), **self._call_options())
        return info

    async def open_session(self, *, memory_mb: int = 0) -> pb.Session:
        with translated_errors():
            request = pb.OpenSessionRequest(limits=pb.Limits(memory_mb=memory_mb))
            session: pb.Session = await self.stub.OpenSession(request, **self._open_session_options())
        self.connection.pin(session)
        return session

    async def close_session(self, session_id: str) -> None:
        stub = self.connection.unpin(session_id)
        with translated_errors():
            await stub.CloseSession(pb.CloseSessionRequest(session_id=session_id), **self._call_options())

    async def close(self) -> None:
        for channel in self.connection.channels():
            await channel.close()

    async def __aenter__(self) -> "AsyncToolClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
