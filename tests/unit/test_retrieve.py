"""Search-R1's /retrieve request and result shapes, translated to and from the contract."""

from __future__ import annotations

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.fronts.retrieve import hits, search_calls


def test_search_r1_and_skyrl_bodies_become_searches():
    calls, scores = search_calls({"queries": ["a", "b"], "topk": 3, "return_scores": False})
    assert calls == [pb.SearchCall(query="a", top_k=3), pb.SearchCall(query="b", top_k=3)] and not scores
    calls, scores = search_calls({"query": "c", "index": "wiki"})
    assert calls == [pb.SearchCall(query="c", index="wiki")] and scores


@pytest.mark.parametrize("body", [{"queries": "a"}, {"queries": [1]}, {}, {"query": "a", "topk": True},
                                  {"query": "a", "return_scores": "yes"}, ["a"]])
def test_malformed_bodies_are_invalid(body):
    with pytest.raises(InvalidRequest):
        search_calls(body)


def test_hits_are_documents_with_title_and_text():
    response = pb.ExecuteResponse(search=pb.SearchResult(hits=[pb.SearchHit(id="7", title="T", text="body",
                                                                            score=1.5)]))
    assert hits(response, True) == [{"document": {"id": "7", "contents": "T\nbody"}, "score": 1.5}]
    assert hits(response, False) == [{"id": "7", "contents": "T\nbody"}]
