"""The search executor: a SearchCall in, ranked hits in an ExecuteResponse out.

It serves the indexes of the data directory that the settings name, checks each call
against the caller's allow-list and the server's caps, and runs the query in this
process (a query is data, not code: no sandbox). It knows nothing of gRPC status codes:
request faults are the exceptions of toolserver.errors. `ensure_default_index` builds
the default index from module documentation when it is missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from toolcontract.names import UINT32_MAX
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments
from toolserver.errors import ConfigError, Exhausted, InvalidRequest, NotFound, ToolUnavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import BuildContext, Tool
from toolserver.search.docs_corpus import BM25_B, BM25_K1, installed, module_documents
from toolserver.search.index import (
    MANIFEST,
    Analyzer,
    DenseUnavailable,
    Encoder,
    IndexExists,
    IndexProblem,
    ScoredDocument,
    SearchIndex,
    build_index,
    index_path,
    list_indexes,
    load_encoder,
    load_index,
)
from toolserver.search.rules import SearchRules
from toolserver.search.settings import SearchSettings

log = logging.getLogger(__name__)

ARGUMENTS = {"query": str, "index": str, "top_k": int}


def ensure_default_index(settings: SearchSettings, *, force: bool = False, progress: bool = False) -> Path:
    """The default index's directory, built from module documentation if it is missing.

    Idempotent, and safe when several processes start at once (the build is locked and
    renamed into place). Does nothing when settings.build_default is off, unless force
    (which also rebuilds an existing one). Raises OSError when data_dir is not writable.
    """
    path = index_path(settings.data_dir, settings.default_index)
    if not force and (not settings.build_default or (path / MANIFEST).is_file()):
        return path
    modules = installed(settings.docs_modules)
    description = (f"documentation of the Python modules {', '.join(modules)}: one entry per public "
                   "function, class and method, with its signature and docstring")
    try:
        manifest = build_index(module_documents(modules), settings.data_dir, settings.default_index,
                               description=description, source="docstrings of installed modules",
                               k1=BM25_K1, b=BM25_B, force=force, progress=progress)
    except IndexExists:
        return path
    log.info("built the default search index %s: %d documents in %.1f s", manifest.name, manifest.documents,
             manifest.build_s)
    return path


def search_call_from_json(arguments: str) -> pb.SearchCall:
    """Parses JsonCall arguments for the search tool; raises InvalidRequest."""
    values = json_arguments(arguments, "search", ARGUMENTS, "query")
    top_k = values.get("top_k", 0)
    if not 0 <= top_k <= UINT32_MAX:
        raise InvalidRequest("argument 'top_k' must be a positive integer")
    return pb.SearchCall(query=values["query"], index=values.get("index", ""), top_k=top_k)


class SearchExecutor(Tool):
    name = "search"

    def __init__(self, settings: SearchSettings, indexes: dict[str, SearchIndex],
                 encoders: dict[str, Encoder], dense_errors: dict[str, str]) -> None:
        self.settings = settings
        self.indexes = indexes
        self.encoders = encoders          # by model package, for the dense and hybrid indexes
        self.dense_errors = dense_errors  # by model package: why it could not be loaded
        self._threads = ThreadPoolExecutor(settings.query_threads, thread_name_prefix="search")
        self._queued = 0  # queries handed to the threads and not yet answered

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> "SearchExecutor":
        """Loads the served indexes, memory-mapped, and the embedding models they need.

        Raises ConfigError when a named index is missing or an index cannot be read. A
        missing embedding model is not fatal: BM25 indexes work, dense ones answer
        FAILED_PRECONDITION saying what to install.
        """
        settings.validate()
        try:
            found = {manifest.name for manifest in list_indexes(settings.data_dir)}
            names = list(settings.indexes) or sorted(found)
            missing = [name for name in names if name not in found]
            if missing:
                raise ConfigError(f"search.indexes: no index {', '.join(missing)} in {settings.data_dir} "
                                  "(`toolserver index list` shows what is there)")
            analyzer = Analyzer()
            indexes = {name: load_index(settings.data_dir, name, analyzer) for name in names}
        except IndexProblem as exc:
            raise ConfigError(f"search: {exc}") from exc
        encoders: dict[str, Encoder] = {}
        dense_errors: dict[str, str] = {}
        for model in sorted({index.manifest.dense_model for index in indexes.values()} - {""}):
            try:
                encoders[model] = load_encoder(model, settings.torch_threads)
            except DenseUnavailable as exc:
                dense_errors[model] = str(exc)
                log.warning("search: %s", exc)
        return cls(settings, indexes, encoders, dense_errors)

    def index_names(self) -> list[str]:
        return sorted(self.indexes)

    @property
    def available(self) -> bool:
        """Whether any index is served (health shows the search tool unavailable otherwise)."""
        return bool(self.indexes)

    @staticmethod
    def call_from_json(arguments: str) -> pb.SearchCall:
        return search_call_from_json(arguments)

    def grant(self, limits: pb.Limits, caller: CallerPolicy) -> None:
        """Nothing: a query is data run in this process, bounded by the server's search
        caps (query length, top_k, max_text_chars, the queue), not by a request's limits."""

    async def run(self, call: pb.SearchCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        return await self.search(call, request_id, caller)

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

    def _index_for(self, name: str, caller: CallerPolicy) -> SearchIndex:
        # First, so that a caller cannot probe which indexes exist.
        caller.rules_of(SearchRules).require_index(name, caller.name)
        index = self.indexes.get(name)
        if index is None:
            raise NotFound(f"no search index {name!r} on this server; ListTools names the indexes")
        return index

    def _encoder_for(self, index: SearchIndex) -> Encoder | None:
        model = index.manifest.dense_model
        if index.manifest.mode == "bm25":
            return None
        if model not in self.encoders:
            raise ToolUnavailable(f"search index {index.name!r} is {index.manifest.mode}, and dense retrieval is not "
                                  f"available here: {self.dense_errors.get(model, f'model {model} not loaded')}")
        return self.encoders[model]

    def _query(self, index: SearchIndex, query: str, k: int,
               encoder: Encoder | None) -> tuple[list[ScoredDocument], int]:
        """The ranked documents and the microseconds the query took (a wait for a thread excluded)."""
        started = time.perf_counter()
        ranked = index.query(query, k, encoder, rrf_k=self.settings.rrf_k, depth=self.settings.hybrid_depth)
        return ranked, int((time.perf_counter() - started) * 1e6)

    async def search(self, call: pb.SearchCall, request_id: str,
                     caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        """Answers one call on an index the caller may search."""
        settings = self.settings
        if not call.query.strip():
            raise InvalidRequest("search.query is empty")
        if len(call.query) > settings.max_query_chars:
            raise InvalidRequest(f"search.query has {len(call.query)} characters; the most is "
                                 f"{settings.max_query_chars}")
        if call.top_k > settings.max_top_k:
            raise InvalidRequest(f"search.top_k {call.top_k} exceeds the server's maximum {settings.max_top_k}")
        k = call.top_k or settings.default_top_k
        index = self._index_for(call.index or settings.default_index, caller)
        encoder = self._encoder_for(index)
        if encoder is None and index.manifest.documents <= settings.inline_max_docs:
            ranked, elapsed_us = self._query(index, call.query, k, None)
        else:
            if self._queued >= settings.max_queue:
                raise Exhausted(f"search queue is full ({settings.max_queue} queries waiting)")
            self._queued += 1
            try:
                ranked, elapsed_us = await asyncio.get_running_loop().run_in_executor(
                    self._threads, self._query, index, call.query, k, encoder)
            finally:
                self._queued -= 1
        limit = settings.max_text_chars
        hits = [pb.SearchHit(id=hit.document.id, title=hit.document.title, text=hit.document.text[:limit],
                             score=hit.score) for hit in ranked]
        return pb.ExecuteResponse(request_id=request_id, outcome=pb.OK, elapsed_us=elapsed_us,
                                  truncated=any(len(hit.document.text) > limit for hit in ranked),
                                  search=pb.SearchResult(hits=hits))

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        """The search tool as the caller may use it: only its indexes are named."""
        settings = self.settings
        names = [name for name in self.index_names() if caller.rules_of(SearchRules).allows(name)]
        index_schema: dict[str, Any] = {"type": "string", "description": "The index to search."}
        if names:
            index_schema["enum"] = names
        required = ["query"]
        if settings.default_index in names:
            index_schema["description"] += f" Default: {settings.default_index}."
        else:
            required.append("index")
        schema = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for: keywords or a question in words."},
                "index": index_schema,
                "top_k": {"type": "integer", "minimum": 1, "maximum": settings.max_top_k,
                          "description": f"How many hits to return (default {settings.default_top_k})."},
            },
            "required": required,
            "additionalProperties": False,
        }
        described = "; ".join(f"{name}: {self.indexes[name].manifest.description or 'no description'} "
                              f"({self.indexes[name].manifest.documents} documents)" for name in names)
        description = ("Search offline document indexes and return the best-matching documents, each with id, "
                       f"title, text and score. Indexes: {described or 'none available'}.")
        return pb.ToolSpec(name="search", description=description, parameters=json.dumps(schema))

    def status(self) -> str:
        """One line for health details: each index, its size and mode."""
        if not self.indexes:
            return f"no search indexes in {self.settings.data_dir}"
        parts = []
        for name in self.index_names():
            manifest = self.indexes[name].manifest
            part = f"{name}: {manifest.documents} docs ({manifest.mode})"
            if manifest.dense_model in self.dense_errors:
                part += " [dense retrieval unavailable]"
            parts.append(part)
        return "; ".join(parts)


async def build_search(context: BuildContext, stack: AsyncExitStack) -> SearchExecutor | None:
    """The search executor over the served indexes, building the default index first when
    it is missing; None (the tool unavailable, with the reason logged) when none loads."""
    settings = context.settings.section(SearchSettings)
    try:
        if settings.build_default:
            await asyncio.to_thread(ensure_default_index, settings)
        search = await asyncio.to_thread(SearchExecutor.from_settings, settings)
    except (OSError, ConfigError) as exc:
        log.error("search tool unavailable: %s", exc)
        return None
    stack.callback(search.close)
    log.info("search: %s", search.status())
    return search
