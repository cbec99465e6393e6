"""Search indexes: BM25 relevance on a fixed corpus, exact top-k, fusion, the files on
disk, the `toolserver index` command, and dense / hybrid retrieval with the packaged model."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from toolserver.search.cli import add_index_parser, run_index_command
from toolserver.search.corpus import CorpusError, Document, read_corpus
from toolserver.search.index import (
    Analyzer,
    DenseUnavailable,
    IndexExists,
    IndexProblem,
    SearchIndex,
    build_index,
    list_indexes,
    load_encoder,
    load_index,
    rrf,
    top_k,
)
from toolserver.search.settings import SearchSettings

DATA = Path(__file__).resolve().parent.parent / "data" / "search"
FACTS = DATA / "facts.jsonl"
MODEL = SearchSettings().dense_model
HAS_MODEL = importlib.util.find_spec("torch") is not None and importlib.util.find_spec(MODEL) is not None
needs_model = pytest.mark.skipif(not HAS_MODEL, reason=f"dense retrieval needs torch and {MODEL} "
                                 "(pip install 'toolserver[dense]')")

# query -> the id that must rank first
RELEVANCE = {
    "who designed the iron tower in Paris": "eiffel",
    "highest mountain in the Himalayas": "everest",
    "greatest common divisor of two integers": "euclid",
    "first antibiotic discovered": "penicillin",
    "humans landing on the Moon": "moon-landing",
    "plants turn sunlight into glucose": "photosynthesis",
    "divide and conquer sorting": "sorting",
    "hypotenuse of a right triangle": "pythagoras",
    "curvature of spacetime gravity": "relativity",
}


@pytest.fixture(scope="module")
def facts(tmp_path_factory) -> SearchIndex:
    data_dir = tmp_path_factory.mktemp("indexes")
    build_index(read_corpus(FACTS), data_dir, "facts", description="twelve facts")
    return load_index(data_dir, "facts", Analyzer())


@pytest.mark.parametrize("query, expected", RELEVANCE.items())
def test_bm25_ranks_the_known_answer_first(facts, query, expected):
    hits = facts.query(query, 3)
    assert hits[0].document.id == expected
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_hits_carry_the_stored_document(facts):
    hit = facts.query("Gustave Eiffel", 1)[0]
    assert hit.document == Document("eiffel", "Eiffel Tower", hit.document.text)
    assert "completed in 1889" in hit.document.text
    assert hit.score > 0


def test_a_query_with_no_known_term_has_no_hits(facts):
    assert facts.query("xylophone zeppelin", 5) == []
    assert facts.query("the of and", 5) == []  # stopwords only


def test_k_caps_the_hits_and_only_matching_documents_count(facts):
    assert len(facts.query("the", 5)) == 0
    assert len(facts.query("algorithm", 10)) == 2  # euclid and sorting
    assert len(facts.query("river mountain tower theory", 2)) == 2


def test_the_arrays_are_memory_mapped(facts):
    assert isinstance(facts.docs.offsets, np.memmap)
    assert isinstance(facts._data, np.memmap) and isinstance(facts._indices, np.memmap)
    assert facts.embeddings is None
    assert len(facts.docs) == facts.manifest.documents == 12


def test_the_analyzer_stems_drops_stopwords_and_splits_snake_case():
    terms = Analyzer().terms("The is_prime numbers, factorization!")
    assert terms == ["is_prim", "prime", "number", "factor"]


@pytest.mark.parametrize("size", [50, 5_000, 300_000])
def test_top_k_is_exact_with_ties_to_the_lower_index(size):
    rng = np.random.default_rng(size)
    scores = np.round(rng.random(size) * 20) / 2  # many ties
    scores[rng.random(size) < 0.3] = 0
    for k in (1, 7, 40):
        expected = sorted(np.flatnonzero(scores > 0), key=lambda i: (-scores[i], i))[:k]
        assert top_k(scores, k).tolist() == expected


def test_top_k_of_all_zero_scores_is_empty():
    assert top_k(np.zeros(10_000), 5).size == 0


def test_rrf_rewards_documents_both_rankings_agree_on():
    fused = rrf([np.array([1, 2, 3]), np.array([3, 1, 4])], k=3, rrf_k=60)
    assert [doc for doc, _ in fused] == [1, 3, 2]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)


def test_an_existing_index_is_replaced_only_with_force(tmp_path):
    docs = [Document("a", "", "alpha beta")]
    build_index(docs, tmp_path, "x")
    with pytest.raises(IndexExists, match="--force"):
        build_index([Document("b", "", "gamma")], tmp_path, "x")
    build_index([Document("b", "", "gamma"), Document("c", "", "delta")], tmp_path, "x", force=True)
    index = load_index(tmp_path, "x", Analyzer())
    assert index.manifest.documents == 2 and index.query("gamma", 1)[0].document.id == "b"


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"id": "a", "text": "fine"}\n{"id": "a", "text": "again"}\n')
    data_dir = tmp_path / "indexes"
    with pytest.raises(CorpusError, match="duplicate id"):
        build_index(read_corpus(corpus), data_dir, "bad")
    assert [p.name for p in data_dir.iterdir() if not p.name.endswith(".lock")] == []
    assert list_indexes(data_dir) == []


def test_list_indexes_skips_incomplete_directories(tmp_path):
    build_index([Document("a", "T", "text")], tmp_path, "complete", description="d")
    (tmp_path / "half").mkdir()
    assert [m.name for m in list_indexes(tmp_path)] == ["complete"]
    assert list_indexes(tmp_path / "absent") == []
    with pytest.raises(IndexProblem, match="no index 'half'"):
        load_index(tmp_path, "half", Analyzer())


def test_an_index_of_another_format_is_refused(tmp_path):
    build_index([Document("a", "T", "text")], tmp_path, "old")
    manifest = tmp_path / "old" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "format": 0}))
    with pytest.raises(IndexProblem, match="rebuild it"):
        load_index(tmp_path, "old", Analyzer())


def test_bad_names_and_modes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="index name"):
        build_index([Document("a", "", "x")], tmp_path, "../escape")
    with pytest.raises(IndexProblem, match="mode must be one of"):
        build_index([Document("a", "", "x")], tmp_path, "x", mode="fuzzy")
    with pytest.raises(DenseUnavailable):
        build_index([Document("a", "", "x")], tmp_path, "x", mode="hybrid")


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_index_parser(parser.add_subparsers(dest="command"))
    return run_index_command(parser.parse_args(["index", *argv]))


def test_cli_builds_and_lists_indexes(tmp_path, capsys):
    assert run_cli("build", "--name", "facts", "--input", str(FACTS), "--data-dir", str(tmp_path),
                   "--description", "twelve facts") == 0
    assert "index facts ready" in capsys.readouterr().out
    assert run_cli("build", "--name", "wiki", "--input", str(DATA / "wiki18.jsonl"), "--data-dir", str(tmp_path)) == 0
    assert run_cli("build", "--name", "facts", "--input", str(FACTS), "--data-dir", str(tmp_path)) == 2
    assert "already exists" in capsys.readouterr().err
    assert run_cli("list", "--data-dir", str(tmp_path)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["facts", "wiki"]
    assert "12 docs" in lines[0] and "twelve facts" in lines[0]


def test_cli_reports_a_bad_corpus_line(tmp_path, capsys):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n')
    assert run_cli("build", "--name", "bad", "--input", str(corpus), "--data-dir", str(tmp_path / "d")) == 2
    assert "line 2: needs 'text'" in capsys.readouterr().err


def test_cli_refuses_a_bad_index_name(tmp_path):
    with pytest.raises(SystemExit):
        run_cli("build", "--name", "Bad Name", "--input", str(FACTS), "--data-dir", str(tmp_path))


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory) -> SearchIndex:
    if not HAS_MODEL:
        pytest.skip(f"dense retrieval needs torch and {MODEL} (pip install 'toolserver[dense]')")
    data_dir = tmp_path_factory.mktemp("dense")
    encoder = load_encoder(MODEL, 1)
    build_index(read_corpus(FACTS), data_dir, "facts", mode="hybrid", encoder=encoder)
    return load_index(data_dir, "facts", Analyzer())


@needs_model
def test_dense_finds_a_paraphrase_that_shares_no_term_with_the_answer(hybrid):
    query = "tallest peak on the globe"
    everest = hybrid.docs[1]
    assert not set(hybrid.analyzer.terms(query)) & set(hybrid.analyzer.terms(f"{everest.title}\n{everest.text}"))
    assert hybrid.bm25(query, 3) == []
    vector = load_encoder(MODEL, 1).encode([query])[0]
    assert hybrid.docs[hybrid.dense(vector, 3)[0][0]].id == "everest"


@needs_model
def test_dense_embeddings_are_unit_length_and_memory_mapped(hybrid):
    assert isinstance(hybrid.embeddings, np.memmap)
    assert hybrid.embeddings.shape == (12, hybrid.manifest.dimension)
    assert np.allclose(np.linalg.norm(hybrid.embeddings, axis=1), 1, atol=1e-3)
    assert hybrid.manifest.dense_model == MODEL and hybrid.manifest.mode == "hybrid"


@needs_model
@pytest.mark.parametrize("query, expected", [*RELEVANCE.items(), ("tallest peak on the globe", "everest")])
def test_hybrid_ranks_the_known_answer_first(hybrid, query, expected):
    hits = hybrid.query(query, 3, load_encoder(MODEL, 1))
    assert hits[0].document.id == expected
    assert hits[0].score <= 2 / 61  # a fused score: at most first in both rankings


@needs_model
def test_a_dense_index_without_its_model_says_so(hybrid):
    with pytest.raises(DenseUnavailable, match="needs the embedding model"):
        hybrid.query("anything", 3)
