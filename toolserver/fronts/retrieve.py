"""The Search-R1-compatible retriever front: `POST /retrieve` over the search tool.

Search-R1 recipes and verl's search tool send `{"queries": [...], "topk": k,
"return_scores": bool}`; SkyRL's SearchToolGroup sends `{"query": "..."}`. Both get
`{"result": [[hit, ...], ...]}`, one list per query, a hit being `{"document": {"id",
"contents": "title\\ntext"}, "score"}` (or the bare document without return_scores).
An optional `index` picks a served index other than the default.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolcontract.names import UINT32_MAX
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.dispatch import Dispatcher
from toolserver.errors import (
    Exhausted,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RequestError,
    ToolUnavailable,
    Unauthenticated,
    Unavailable,
)
from toolserver.fronts.http_guard import parsed_body
from toolserver.fronts.http_json import counted_reply, status_for
from toolserver.text import valid_text

FRONT = "retrieve"
MAX_QUERIES = 1024
HTTP_STATUS = {Unauthenticated: 401, PermissionDenied: 403, NotFound: 404, InvalidRequest: 400,
               Exhausted: 503, Unavailable: 503, ToolUnavailable: 503}


def search_calls(body: Any) -> tuple[list[pb.SearchCall], bool]:
    """The searches a /retrieve body asks for, and whether scores are wanted."""
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    queries = body.get("queries", [body["query"]] if "query" in body else None)
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) for q in queries):
        raise InvalidRequest("queries must be a non-empty list of strings (or query one string)")
    if len(queries) > MAX_QUERIES:
        raise InvalidRequest(f"at most {MAX_QUERIES} queries a request, got {len(queries)}")
    top_k = body.get("topk", body.get("top_k", 0))
    if top_k is None:
        top_k = 0
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k <= UINT32_MAX:
        raise InvalidRequest(f"topk must be an integer from 0 (the index's default) to {UINT32_MAX}")
    index = body.get("index", "")
    if not isinstance(index, str):
        raise InvalidRequest("index must be a string")
    return_scores = body.get("return_scores", True)
    if not isinstance(return_scores, bool):
        raise InvalidRequest("return_scores must be true or false")
    return [pb.SearchCall(query=query, index=index, top_k=top_k) for query in queries], return_scores


def hits(response: pb.ExecuteResponse, return_scores: bool) -> list[dict[str, Any]]:
    documents = [({"id": hit.id, "contents": f"{hit.title}\n{hit.text}"}, hit.score) for hit in response.search.hits]
    if return_scores:
        return [{"document": document, "score": score} for document, score in documents]
    return [document for document, _ in documents]


class RetrieveFront:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def routes(self) -> list[Route]:
        return [Route("/retrieve", self.retrieve, methods=["POST"])]

    async def retrieve(self, request: Request) -> JSONResponse:
        try:
            caller, body = parsed_body(request.scope)
            calls, return_scores = search_calls(body)
            responses = await asyncio.gather(*(self.dispatcher.execute(pb.ExecuteRequest(search=call), caller)
                                               for call in calls))
        except RequestError as exc:
            return self.reply(status_for(exc, HTTP_STATUS, 500), {"detail": valid_text(str(exc))})
        return self.reply(200, {"result": [hits(response, return_scores) for response in responses]})

    def reply(self, status: int, body: dict[str, Any]) -> JSONResponse:
        return counted_reply(self.dispatcher.metrics, FRONT, status, body)
