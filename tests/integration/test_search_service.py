"""The search tool through the real server: hits, JSON calls, streams, errors, ListTools."""

from __future__ import annotations

import json

import pytest

from toolclient.client import InvalidArgument, NotFound
from toolcontract.v1 import toolserver_pb2 as pb


def search(client, query: str, **fields) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(request_id="s", search=pb.SearchCall(query=query, **fields)))


def test_default_index_answers_a_math_question(client):
    response = search(client, "prime factorization of an integer", top_k=5)
    assert response.outcome == pb.OK and response.request_id == "s"
    ids = [hit.id for hit in response.search.hits]
    assert "sympy.factorint" in ids, ids
    scores = [hit.score for hit in response.search.hits]
    assert scores == sorted(scores, reverse=True) and len(ids) == 5
    assert all(hit.title and hit.text for hit in response.search.hits)


def test_json_call_and_stream_batch(client):
    response = client.execute(pb.ExecuteRequest(json=pb.JsonCall(
        tool="search", arguments=json.dumps({"query": "greatest common divisor", "top_k": 3}))))
    assert response.outcome == pb.OK and len(response.search.hits) == 3
    queries = ["binomial coefficient", "matrix determinant", "solve a linear equation", "least common multiple"]
    requests = [pb.ExecuteRequest(request_id=str(i), search=pb.SearchCall(query=q)) for i, q in enumerate(queries)]
    responses = client.run_many(requests)
    assert [r.outcome for r in responses] == [pb.OK] * 4 and all(r.search.hits for r in responses)


def test_bad_searches_are_request_errors(client):
    with pytest.raises(InvalidArgument):
        search(client, "   ")
    with pytest.raises(NotFound):
        search(client, "anything", index="no-such-index")
    with pytest.raises(InvalidArgument):
        client.execute(pb.ExecuteRequest(json=pb.JsonCall(tool="search", arguments='{"query": 1}')))


def test_list_tools_describes_search_and_its_indexes(client):
    tools = {tool.name: tool for tool in client.list_tools()}
    schema = json.loads(tools["search"].parameters)
    assert schema["required"] == ["query"] and "python-docs" in schema["properties"]["index"]["enum"]
    assert "python-docs" in tools["search"].description
    search_status = [t for t in client.server_info().tools if t.name == "search"][0]
    assert search_status.available and "python-docs" in search_status.detail
