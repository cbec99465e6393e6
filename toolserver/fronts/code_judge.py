"""The code-judge-compatible front: what rStar2-Agent's tool and math reward send.

`POST /run` and `/judge` take one submission (`type`, `solution`, `input`,
`expected_output`); `/run/batch`, `/run/long-batch` and their `/judge` twins take
`{"submissions": [...]}` and run them all at once through the dispatcher, answering in
order. Per item: `run_success` (the program exited 0 in time), `success` (for /run the
same; for /judge also its output equals `expected_output`), `stdout`, `stderr`, `cost`
(seconds) and `reason`: "" or `worker_timeout`, `queue_timeout` (refused by
backpressure: resend exactly those), `internal_error`. `stdout` and `stderr` are the
program's own, byte for byte as code-judge gives them (a model trained against one and
served by the other sees the same tool output); the server's one-line explanation of an
end that is not a success goes in a field of its own, `error`, and output cut at the
server's cap says so (`truncated`), where code-judge says nothing. `GET /ping` and
`GET /status` answer as it does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from toolcontract.output_match import same_output
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.dispatch import Dispatcher
from toolserver.errors import Exhausted, InvalidRequest, PermissionDenied, RequestError, Unauthenticated, Unavailable
from toolserver.fronts.http_guard import parsed_body
from toolserver.fronts.http_json import counted_reply, infrastructure_failed, status_for
from toolserver.policy import CallerPolicy
from toolserver.text import valid_text

FRONT = "code_judge"
MAX_BATCH = 4096  # submissions in one batch request
LANGUAGES = ("python", "cpp")  # code-judge's `type`s; any other is a language of the program tool (java, go, ...)
BATCH_PATHS = frozenset(f"/{verb}/{kind}" for verb in ("run", "judge") for kind in ("batch", "long-batch"))
HTTP_STATUS = {Unauthenticated: 401, PermissionDenied: 403, InvalidRequest: 400}


def submission(item: Any, where: str, others: tuple[str, ...] = ()) -> tuple[str, pb.ExecuteRequest, str | None]:
    """A submission's id, request and expected output; InvalidRequest names what is wrong.
    others: the languages beside LANGUAGES that the server's tools run."""
    if not isinstance(item, dict):
        raise InvalidRequest(f"{where} must be a JSON object")
    language = item.get("type", "python")
    if language not in LANGUAGES and language not in others:
        raise InvalidRequest(f"{where}.type {language!r} is not supported here: only "
                             f"{', '.join((*LANGUAGES, *others))}")
    values = {}
    for name in ("solution", "input", "expected_output", "sub_id"):
        value = item.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidRequest(f"{where}.{name} must be a string")
        values[name] = value
    if values["solution"] is None:
        raise InvalidRequest(f"{where}.solution is required")
    sub_id = values["sub_id"] or uuid.uuid4().hex
    stdin = values["input"] or ""
    if language == "cpp":
        request = pb.ExecuteRequest(request_id=sub_id, cpp=pb.CppCall(source=values["solution"], stdin=stdin))
    elif language not in LANGUAGES:
        request = pb.ExecuteRequest(request_id=sub_id, program=pb.ProgramCall(language=language,
                                                                              source=values["solution"], stdin=stdin))
    else:
        request = pb.ExecuteRequest(request_id=sub_id, python=pb.PythonCall(code=values["solution"], stdin=stdin))
    return sub_id, request, values["expected_output"]


def result(sub_id: str, response: pb.ExecuteResponse, expected: str | None) -> dict[str, Any]:
    ran = response.outcome == pb.OK
    reason = "internal_error" if infrastructure_failed(response) else \
        "worker_timeout" if response.outcome == pb.TIMEOUT else ""
    return {"sub_id": sub_id, "run_success": ran, "success": ran and (expected is None or
                                                                      same_output(response.stdout, expected)),
            "cost": response.elapsed_us / 1e6, "reason": reason, "stdout": response.stdout,
            "stderr": response.stderr, "truncated": response.truncated, "error": response.error}


def refused(sub_id: str, error: RequestError) -> dict[str, Any]:
    reason = "queue_timeout" if isinstance(error, (Exhausted, Unavailable)) else "internal_error"
    return {"sub_id": sub_id, "run_success": False, "success": False, "cost": 0.0, "reason": reason,
            "stdout": "", "stderr": "", "truncated": False, "error": valid_text(str(error))}


class CodeJudgeFront:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def routes(self) -> list[Route]:
        routes = [Route("/ping", self.ping, methods=["GET"]), Route("/status", self.status, methods=["GET"])]
        for verb in ("run", "judge"):
            judged = verb == "judge"
            routes.append(Route(f"/{verb}", self.single(judged), methods=["POST"]))
            for kind in ("batch", "long-batch"):
                routes.append(Route(f"/{verb}/{kind}", self.batch(judged), methods=["POST"]))
        return routes

    def languages(self) -> tuple[str, ...]:
        """The languages beside LANGUAGES that the server's tools run (the program tool's)."""
        return tuple(name for tool in self.dispatcher.registry for name in tool.languages)

    async def ping(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse("pong")

    async def status(self, request: Request) -> JSONResponse:
        tool = self.dispatcher.registry.tools.get("python")
        workers = tool.workers if tool is not None else 0
        return self.reply(200, {"queue": self.dispatcher.state.inflight, "num_workers": workers})

    def single(self, judged: bool) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                caller, body = parsed_body(request.scope)
                sub_id, call, expected = submission(body, "the submission", self.languages())
            except RequestError as exc:
                return self.refusal(exc)
            return self.reply(200, await self.run(sub_id, call, expected if judged else None, caller))
        return endpoint

    def batch(self, judged: bool) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                caller, body = parsed_body(request.scope)
                if not isinstance(body, dict) or not isinstance(body.get("submissions"), list):
                    raise InvalidRequest("the body must be {\"submissions\": [...]}")
                items = body["submissions"]
                if len(items) > MAX_BATCH:
                    raise InvalidRequest(f"a batch holds at most {MAX_BATCH} submissions, got {len(items)}")
                languages = self.languages()
                parsed = [submission(item, f"submissions[{i}]", languages) for i, item in enumerate(items)]
                batch_id = body.get("sub_id") if isinstance(body.get("sub_id"), str) else uuid.uuid4().hex
            except RequestError as exc:
                return self.refusal(exc)
            results = await asyncio.gather(*(self.run(sub_id, call, expected if judged else None, caller)
                                             for sub_id, call, expected in parsed))
            return self.reply(200, {"sub_id": batch_id, "results": results})
        return endpoint

    async def run(self, sub_id: str, call: pb.ExecuteRequest, expected: str | None,
                  caller: CallerPolicy) -> dict[str, Any]:
        try:
            response = await self.dispatcher.execute(call, caller)
        except RequestError as exc:
            return refused(sub_id, exc)
        return result(sub_id, response, expected)

    def refusal(self, error: RequestError) -> JSONResponse:
        return self.reply(status_for(error, HTTP_STATUS, 503), {"detail": valid_text(str(error))}, error)

    def reply(self, status: int, body: dict[str, Any], error: RequestError | None = None) -> JSONResponse:
        return counted_reply(self.dispatcher.metrics, FRONT, status, body, error)
