"""gRPC plumbing of the ToolServer front: registration with tolerant request parsers,
bearer-token admission, refusals, and the server's TLS credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from toolcontract.names import SERVICE, SERVICE_NAME
from toolserver.config import CoreSettings
from toolserver.errors import ConfigError, InvalidRequest, RequestError, status_of
from toolserver.policy import Policies

SERVICE_PREFIX = f"/{SERVICE_NAME}/"
# Trailing metadata of a refused call: nothing of it ran, so a client may retry it
# elsewhere (a transport failure carries no such mark: the call may have run).
NOT_STARTED = (("toolserver-not-started", "1"),)


@dataclass(frozen=True)
class Undecodable:
    """Stands for a request whose bytes are not a valid message: the servicer answers
    INVALID_ARGUMENT (INVALID on a stream) instead of gRPC's UNKNOWN."""

    message: str
    reason: str


Request = TypeVar("Request")


def decoded(request: Request | Undecodable) -> Request:
    """request, parsed; InvalidRequest where its bytes were not a valid message."""
    if isinstance(request, Undecodable):
        raise InvalidRequest(f"request is not a valid {request.message}: {request.reason}")
    return request


def tolerant_parser(message_class: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return message_class.FromString(data)
        except DecodeError as exc:
            return Undecodable(message_class.DESCRIPTOR.full_name, str(exc))
    return parse


def add_to_server(servicer: Any, server: grpc.aio.Server) -> None:
    """Registers the servicer like the generated add_ToolServerServicer_to_server, with
    request parsers that turn undecodable bytes into `Undecodable`."""
    handlers = {}
    for method in SERVICE.methods:
        kind = {(False, False): grpc.unary_unary_rpc_method_handler,
                (False, True): grpc.unary_stream_rpc_method_handler,
                (True, False): grpc.stream_unary_rpc_method_handler,
                (True, True): grpc.stream_stream_rpc_method_handler}[(method.client_streaming, method.server_streaming)]
        handlers[method.name] = kind(
            getattr(servicer, method.name),
            request_deserializer=tolerant_parser(message_factory.GetMessageClass(method.input_type)),
            response_serializer=message_factory.GetMessageClass(method.output_type).SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc.aio ships no types
    """Answers UNAUTHENTICATED to ToolServer calls without a known bearer token.

    Health and reflection stay open, as load balancers and grpcurl need them."""

    def __init__(self, policies: Policies) -> None:
        self.policies = policies

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        if self.policies.open or not handler_call_details.method.startswith(SERVICE_PREFIX):
            return await continuation(handler_call_details)
        try:
            self.policies.authenticate(handler_call_details.invocation_metadata)
        except RequestError as exc:
            return refusal(await continuation(handler_call_details), *status_of(exc))
        return await continuation(handler_call_details)


def refusal(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape as handler that aborts with code."""

    async def abort_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message)

    async def abort_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort(code, message)
        yield  # pragma: no cover - makes this an async generator

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(abort_stream)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort_stream)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort_unary)
    return grpc.unary_unary_rpc_method_handler(abort_unary)


def server_credentials(settings: CoreSettings) -> grpc.ServerCredentials | None:
    """TLS credentials from the configured PEM files, or None for plaintext."""
    if not settings.server.tls_cert:
        return None
    try:
        key = Path(settings.server.tls_key).read_bytes()
        cert = Path(settings.server.tls_cert).read_bytes()
        client_ca = Path(settings.server.tls_client_ca).read_bytes() if settings.server.tls_client_ca else None
    except OSError as exc:
        raise ConfigError(f"cannot read TLS file {exc.filename}: {exc.strerror}") from exc
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=client_ca,
                                       require_client_auth=client_ca is not None)
