"""The SandboxFusion-compatible front: `POST /run_code` and `GET /v1/ping`.

What verl's code reward (`reward.sandbox_fusion.url`), its SandboxFusionTool, SkyRL's
CodeInterpreter and the `sandbox-fusion` SDK send, answered the way SandboxFusion
answers: HTTP 200 for code that failed, a top-level status `Success`, `Failed` or
`SandboxError`, and a `run_result` with `Finished`, `Error` or `TimeLimitExceeded`. A
timeout keeps the partial output with `return_code: null`. A server too busy to take
the call is HTTP 504, the one status verl retries. The call itself runs through the
dispatcher like any gRPC call: the same jail, pools, policies, metrics and limits.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from toolserver.dispatch import Dispatcher
from toolserver.errors import (Exhausted, InvalidRequest, PermissionDenied, RequestError, Unauthenticated, Unavailable,
                               status_of)
from toolserver.fronts.http_json import counted_reply, read_json, status_for, with_error
from toolserver.policy import Policies
from toolserver.v1 import toolserver_pb2 as pb

FRONT = "sandbox_fusion"
LANGUAGES = ("python", "python3")
ANSWER_MARGIN_S = 10.0  # an answer comes within run_timeout + compile_timeout + this
HTTP_STATUS = {Unauthenticated: 401, PermissionDenied: 403, InvalidRequest: 400, Exhausted: 504, Unavailable: 504}


KIND_NAMES = {str: "a string", int: "a number", float: "a number", dict: "an object", list: "a list"}


def field(body: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    """body's value of name (default when absent or null); InvalidRequest when its type is wrong."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise InvalidRequest(f"{name} must be {KIND_NAMES[kinds[0]]}")
    return value


def run_code_request(body: Any) -> tuple[pb.ExecuteRequest, str, float]:
    """The call a /run_code body asks for, its language, and how long its answer may take.
    Unknown fields are ignored, as SandboxFusion ignores them."""
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    code = body.get("code")
    if not isinstance(code, str):
        raise InvalidRequest("code must be a string")
    language = field(body, "language", (str,), "python")
    stdin = field(body, "stdin", (str,), "")
    run_timeout = field(body, "run_timeout", (int, float), 10)
    compile_timeout = field(body, "compile_timeout", (int, float), 10)
    memory_mb = int(field(body, "memory_limit_MB", (int, float), -1))
    files = field(body, "files", (dict,), {})
    fetch_files = field(body, "fetch_files", (list,), [])
    if run_timeout <= 0 or compile_timeout < 0:
        raise InvalidRequest("run_timeout must be positive and compile_timeout not negative")
    if files or fetch_files:
        raise InvalidRequest("files and fetch_files are not supported by this server yet")
    request = pb.ExecuteRequest(python=pb.PythonCall(code=code, stdin=stdin),
                                limits=pb.Limits(timeout_ms=int(run_timeout * 1000),
                                                 memory_mb=max(memory_mb, 0)))
    return request, language, run_timeout + compile_timeout + ANSWER_MARGIN_S


def run_result(response: pb.ExecuteResponse) -> dict[str, Any]:
    """SandboxFusion's CommandRunResult for the answer of a call that ran."""
    stderr = response.stderr
    if response.outcome in (pb.DENIED, pb.MEMORY_LIMIT):
        stderr = with_error(stderr, response.error)
    if response.outcome == pb.TIMEOUT:
        status, return_code = "TimeLimitExceeded", None
    elif response.outcome == pb.OK:
        status, return_code = "Finished", 0
    else:
        status, return_code = "Finished", response.python.exit_code or 1
    return {"status": status, "execution_time": response.elapsed_us / 1e6, "return_code": return_code,
            "stdout": response.stdout, "stderr": stderr}


def answer(response: pb.ExecuteResponse) -> dict[str, Any]:
    if response.outcome in (pb.CRASHED, pb.INVALID):
        return sandbox_error(f"{pb.Outcome.Name(response.outcome)}: {response.error}")
    ok = response.outcome == pb.OK
    message = "" if ok else response.error
    if response.truncated:
        message = (message + "; " if message else "") + "output truncated at the server's max_output_bytes"
    return {"status": "Success" if ok else "Failed", "message": message, "compile_result": None,
            "run_result": run_result(response), "executor_pod_name": None, "files": {}}


def sandbox_error(message: str) -> dict[str, Any]:
    return {"status": "SandboxError", "message": message, "compile_result": None, "run_result": None,
            "executor_pod_name": None, "files": {}}


class SandboxFusionFront:
    def __init__(self, dispatcher: Dispatcher, policies: Policies) -> None:
        self.dispatcher = dispatcher
        self.policies = policies

    def routes(self) -> list[Route]:
        return [Route("/run_code", self.run_code, methods=["POST"]),
                Route("/v1/ping", self.ping, methods=["GET"])]

    async def ping(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse("pong")

    async def run_code(self, request: Request) -> JSONResponse:
        try:
            caller, body = await read_json(request, self.policies)
            call, language, answer_within_s = run_code_request(body)
            if language not in LANGUAGES:
                return self.reply(200, sandbox_error(f"language {language!r} is not supported here: only python"))
            try:
                response = await asyncio.wait_for(self.dispatcher.execute(call, caller), answer_within_s)
            except asyncio.TimeoutError:
                return self.reply(504, sandbox_error(f"no answer within {answer_within_s:.0f} s"))
        except RequestError as exc:
            code, message = status_of(exc)
            return self.reply(status_for(exc, HTTP_STATUS, 200), sandbox_error(f"{code.name}: {message}"))
        return self.reply(200, answer(response))

    def reply(self, status: int, body: dict[str, Any]) -> JSONResponse:
        return counted_reply(self.dispatcher.metrics, FRONT, status, body)
