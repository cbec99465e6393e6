"""The SandboxFusion-compatible front: `POST /run_code`, `POST /run_jupyter`, `GET /v1/ping`.

What verl's code reward (`reward.sandbox_fusion.url`), its SandboxFusionTool, SkyRL's
CodeInterpreter and the `sandbox-fusion` SDK send, answered the way SandboxFusion
answers: HTTP 200 for code that failed, a top-level status `Success`, `Failed` or
`SandboxError`, and a `run_result` with `Finished`, `Error` or `TimeLimitExceeded`. A
timeout keeps the partial output with `return_code: null`. A call waits for a worker as
long as it can still run its whole `run_timeout` before its client gives up
(`run_timeout + compile_timeout` + 10 s, as verl's client waits); one that cannot is
HTTP 504 (the one status verl retries) with `Retry-After`. The call itself runs through the
dispatcher like any gRPC call: the same jail, pools, policies, metrics and limits.
`files` are written into the working directory before the code runs and `fetch_files`
come back base64 in `files`. `/run_jupyter` runs its cells in one session of their own, closed after the last cell.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from sandbox.inside.notebook import BINARY_TYPES
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.deadline import answer_within
from toolserver.dispatch import Dispatcher
from toolserver.errors import (
    Exhausted,
    InvalidRequest,
    PermissionDenied,
    RequestError,
    Unauthenticated,
    Unavailable,
    status_of,
)
from toolserver.fronts.http_guard import parsed_body
from toolserver.fronts.http_json import counted_reply, infrastructure_failed, status_for, with_error
from toolserver.policy import CallerPolicy

T = TypeVar("T")
FRONT = "sandbox_fusion"
LANGUAGES = {"python": "python", "python3": "python", "cpp": "cpp", "bash": "bash"}  # SandboxFusion's: the tool;
# any other name is the program tool's to know (java, go, rust, nodejs, typescript, ...)
ANSWER_MARGIN_S = 10.0  # an answer comes within run_timeout + compile_timeout + this
TRUNCATED = "output truncated at the call's max_output_bytes (or fetched files beyond max_file_mb together)"
MAX_SECONDS = 86_400  # the longest run_timeout, compile_timeout, cell_timeout or total_timeout taken
MAX_MEMORY_MB = 1 << 20  # the largest memory_limit_MB taken (1 TiB); the caller's and server's caps apply below it
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


def seconds(body: dict[str, Any], name: str, default: float, zero_allowed: bool = False) -> float:
    """body's time in seconds under name: a number in (0, MAX_SECONDS] ([0, ...] where
    zero_allowed); InvalidRequest otherwise."""
    value = field(body, name, (int, float), default)
    if not (0 <= value if zero_allowed else 0 < value) or value > MAX_SECONDS:
        raise InvalidRequest(f"{name} must be {'at least 0' if zero_allowed else 'positive'} and at most "
                             f"{MAX_SECONDS} (seconds), got {value:g}")
    return float(value)


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
    run_timeout = seconds(body, "run_timeout", 10)
    compile_timeout = seconds(body, "compile_timeout", 10, zero_allowed=True)
    memory_mb = field(body, "memory_limit_MB", (int, float), -1)
    if not -1 <= memory_mb <= MAX_MEMORY_MB:
        raise InvalidRequest(f"memory_limit_MB must be -1 (the server's default) to {MAX_MEMORY_MB}, got {memory_mb:g}")
    files = field(body, "files", (dict,), {})
    fetch_files = field(body, "fetch_files", (list,), [])
    request = pb.ExecuteRequest(limits=pb.Limits(timeout_ms=max(1, int(run_timeout * 1000)),
                                                 memory_mb=max(int(memory_mb), 0)))
    tool = LANGUAGES.get(language, "program")
    if tool != "python" and (files or fetch_files):
        raise InvalidRequest(f"files and fetch_files are taken with python here, not with {language}")
    if tool == "cpp":
        request.cpp.CopyFrom(pb.CppCall(source=code, stdin=stdin, compile_timeout_ms=int(compile_timeout * 1000)))
    elif tool == "program":
        request.program.CopyFrom(pb.ProgramCall(language=language, source=code, stdin=stdin,
                                                compile_timeout_ms=int(compile_timeout * 1000)))
    elif tool == "bash":
        request.bash.CopyFrom(pb.BashCall(script=code, stdin=stdin))
    else:
        request.python.CopyFrom(pb.PythonCall(code=code, stdin=stdin, files=decoded_files(files),
                                              fetch_files=file_names(fetch_files)))
    return request, language, run_timeout + compile_timeout + ANSWER_MARGIN_S


def decoded_files(files: dict[str, Any]) -> dict[str, bytes]:
    """files' contents by path, from base64; a null content is skipped, as SandboxFusion
    skips it."""
    decoded = {}
    for name, text in files.items():
        if text is None:
            continue
        if not isinstance(text, str):
            raise InvalidRequest(f"files[{name!r}] must be base64 text")
        try:
            decoded[name] = base64.b64decode(text, validate=True)
        except ValueError as exc:
            raise InvalidRequest(f"files[{name!r}] is not valid base64: {exc}") from exc
    return decoded


def file_names(names: list[Any]) -> list[str]:
    if not all(isinstance(name, str) for name in names):
        raise InvalidRequest("fetch_files must be a list of paths")
    return names


def run_result(response: pb.ExecuteResponse) -> dict[str, Any]:
    """SandboxFusion's CommandRunResult for the answer of a call that ran."""
    stderr = response.stderr
    if response.outcome == pb.DENIED or (response.outcome == pb.MEMORY_LIMIT and "MemoryError" not in stderr):
        stderr = with_error(stderr, response.error)  # the program's own traceback says enough
    judged = judged_result(response)
    run = judged.cases[0] if judged is not None and judged.cases else None
    elapsed_us = run.elapsed_us if run is not None else response.elapsed_us
    if response.outcome == pb.TIMEOUT:
        status, return_code = "TimeLimitExceeded", None
    elif response.outcome == pb.OK:
        status, return_code = "Finished", 0
    else:
        status, return_code = "Finished", exit_code(response) or 1
    return {"status": status, "execution_time": elapsed_us / 1e6, "return_code": return_code,
            "stdout": response.stdout, "stderr": stderr}


def judged_result(response: pb.ExecuteResponse) -> pb.CppResult | None:
    """The compile and runs of a judged program's answer (C++ or another compiled language)."""
    kind = response.WhichOneof("result")
    return getattr(response, kind) if kind in ("cpp", "program") else None


def exit_code(response: pb.ExecuteResponse) -> int:
    """The program's exit status, whichever tool ran it."""
    kind = response.WhichOneof("result")
    judged = judged_result(response)
    if judged is not None:
        return judged.cases[0].exit_code if judged.cases else 0
    return response.bash.exit_code if kind == "bash" else response.python.exit_code


def compile_result(compiled: pb.CppCompile) -> dict[str, Any]:
    """SandboxFusion's CommandRunResult of a compile."""
    timed_out = compiled.outcome == pb.TIMEOUT
    return {"status": "TimeLimitExceeded" if timed_out else "Finished", "execution_time": compiled.elapsed_us / 1e6,
            "return_code": None if timed_out else compiled.exit_code, "stdout": "", "stderr": compiled.stderr}


def answer(response: pb.ExecuteResponse) -> dict[str, Any]:
    if infrastructure_failed(response):
        return sandbox_error(f"{pb.Outcome.Name(response.outcome)}: {response.error}")
    ok = response.outcome == pb.OK
    message = "" if ok else response.error
    if response.truncated:
        message = (message + "; " if message else "") + TRUNCATED
    judged = judged_result(response)
    compiled = judged.compile if judged is not None and judged.HasField("compile") else None
    files = {name: base64.b64encode(data).decode("ascii") for name, data in response.python.files.items()}
    return {"status": "Success" if ok else "Failed", "message": message,
            "compile_result": compile_result(compiled) if compiled is not None else None,
            "run_result": None if response.outcome == pb.COMPILE_ERROR else run_result(response),
            "executor_pod_name": None, "files": files}


def sandbox_error(message: str) -> dict[str, Any]:
    return {"status": "SandboxError", "message": message, "compile_result": None, "run_result": None,
            "executor_pod_name": None, "files": {}}


def run_jupyter_request(body: Any) -> tuple[list[str], float, float]:
    """The cells a /run_jupyter body asks to run, the time each may take (0: the time
    left) and the time all may take together."""
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    cells = field(body, "cells", (list,), [])
    if not all(isinstance(cell, str) for cell in cells):
        raise InvalidRequest("cells must be a list of strings")
    cell_timeout = seconds(body, "cell_timeout", 0, zero_allowed=True)
    total_timeout = seconds(body, "total_timeout", 45)
    if field(body, "kernel", (str,), "python3") != "python3":
        raise InvalidRequest("kernel must be python3")
    if field(body, "files", (dict,), {}) or field(body, "fetch_files", (list,), []):
        raise InvalidRequest("files and fetch_files are not taken by /run_jupyter here: use /run_code")
    return cells, cell_timeout, total_timeout


def display_bundle(display: pb.Display) -> dict[str, Any]:
    """A display's data as a Jupyter kernel's message holds it: the binary types base64,
    JSON types parsed, the rest text."""
    bundle: dict[str, Any] = {}
    for mime, data in display.data.items():
        if mime in BINARY_TYPES:
            bundle[mime] = base64.b64encode(data).decode("ascii")
        elif mime == "application/json" or mime.endswith("+json"):
            try:
                bundle[mime] = json.loads(data)
            except ValueError:
                bundle[mime] = data.decode("utf-8", errors="replace")
        else:
            bundle[mime] = data.decode("utf-8", errors="replace")
    return bundle


def cell_result(response: pb.ExecuteResponse) -> dict[str, Any]:
    """SandboxFusion's result of one cell: the streams (a traceback is in stderr), what it
    displayed and the value of its last expression (its rich forms where it has them) as
    displays, in the order a kernel sends them, and its error as ename and evalue."""
    result: dict[str, Any] = {"stdout": response.stdout, "stderr": response.stderr,
                              "display": [display_bundle(display) for display in response.python.displays],
                              "error": []}
    if response.python.value and all(display.kind != "execute_result" for display in response.python.displays):
        result["display"].append({"text/plain": response.python.value})  # a session without IPython
    if response.outcome != pb.OK:
        name, _, value = response.error.partition(": ")
        result["error"].append({"ename": name if value else pb.Outcome.Name(response.outcome),
                                "evalue": value or response.error, "traceback": [response.error]})
    return result


class TooLate(Exception):
    """No answer within the time SandboxFusion's clients wait (HTTP 504, which verl retries)."""


async def within(call: Awaitable[T], seconds: float) -> T:
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        raise TooLate(f"no answer within {seconds:.0f} s") from None


class SandboxFusionFront:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def routes(self) -> list[Route]:
        return [Route("/run_code", self.run_code, methods=["POST"]),
                Route("/run_jupyter", self.run_jupyter, methods=["POST"]),
                Route("/v1/ping", self.ping, methods=["GET"])]

    async def ping(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse("pong")

    async def run_code(self, request: Request) -> JSONResponse:
        return await self.answered(request, self._run_code)

    async def run_jupyter(self, request: Request) -> JSONResponse:
        return await self.answered(request, self._run_jupyter)

    async def answered(self, request: Request,
                       handle: Callable[[CallerPolicy, Any], Awaitable[dict[str, Any]]]) -> JSONResponse:
        """The reply to what handle(caller, body) answers: HTTP 200 with it, 504 when it came
        too late, a refused request with the front's status for its error."""
        try:
            caller, body = parsed_body(request.scope)
            return self.reply(200, await handle(caller, body))
        except TooLate as exc:
            return self.reply(504, sandbox_error(str(exc)))
        except RequestError as exc:
            code, message = status_of(exc)
            return self.reply(status_for(exc, HTTP_STATUS, 200), sandbox_error(f"{code.name}: {message}"), exc)

    async def _run_code(self, caller: CallerPolicy, body: Any) -> dict[str, Any]:
        call, language, answer_within_s = run_code_request(body)
        if call.WhichOneof("call") == "program" and self.dispatcher.registry.language_tool(language) is None:
            known = [*LANGUAGES, *(name for tool in self.dispatcher.registry for name in tool.languages)]
            return sandbox_error(f"language {language!r} is not supported here: only {', '.join(known)}")
        with answer_within(answer_within_s):
            return answer(await within(self.dispatcher.execute(call, caller), answer_within_s))

    async def _run_jupyter(self, caller: CallerPolicy, body: Any) -> dict[str, Any]:
        cells, cell_timeout, total_timeout = run_jupyter_request(body)
        return await within(self.notebook(cells, cell_timeout, total_timeout, caller), total_timeout + ANSWER_MARGIN_S)

    async def notebook(self, cells: list[str], cell_timeout: float, total_timeout: float,
                       caller: CallerPolicy) -> dict[str, Any]:
        """Runs the cells one after another in one fresh session, closed at the end. A cell
        that times out or loses its session ends the run: its partial output is kept."""
        started = time.monotonic()
        session = await self.dispatcher.open_session(pb.Limits(), caller)
        results: list[dict[str, Any]] = []
        status, message = "Finished", ""
        try:
            for index, cell in enumerate(cells):
                left_s = total_timeout - (time.monotonic() - started)
                if left_s <= 0:
                    status, message = "TimeLimitExceeded", f"total_timeout {total_timeout:g} s reached before cell {index}"
                    break
                if not cell.strip():
                    results.append(cell_result(pb.ExecuteResponse(outcome=pb.OK)))
                    continue
                timeout_s = min(cell_timeout or left_s, left_s)
                response = await self.dispatcher.execute(
                    pb.ExecuteRequest(python=pb.PythonCall(code=cell, session_id=session.session_id),
                                      limits=pb.Limits(timeout_ms=max(1, int(timeout_s * 1000)))), caller)
                results.append(cell_result(response))
                if response.outcome == pb.TIMEOUT:
                    status, message = "TimeLimitExceeded", f"cell {index}: {response.error}"
                    break
                if response.outcome in (pb.CRASHED, pb.INVALID):
                    status, message = "Error", f"cell {index}: {response.error}"
                    break
        finally:
            with contextlib.suppress(RequestError):
                await self.dispatcher.close_session(session.session_id, caller)
        driver = {"status": status, "execution_time": time.monotonic() - started,
                  "return_code": 0 if status == "Finished" else None, "stdout": "", "stderr": message}
        return {"status": "Success" if status == "Finished" else "Failed", "message": message, "driver": driver,
                "cells": results, "executor_pod_name": None, "files": {}}

    def reply(self, status: int, body: dict[str, Any], error: RequestError | None = None) -> JSONResponse:
        return counted_reply(self.dispatcher.metrics, FRONT, status, body, error)
