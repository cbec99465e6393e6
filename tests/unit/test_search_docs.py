"""The default index: documents from module docstrings, built once, and relevant answers."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.search.docs_corpus import installed, module_documents
from toolserver.search.executor import SearchExecutor, ensure_default_index
from toolserver.search.index import Manifest
from toolserver.search.settings import SearchSettings

# A question a new user asks -> documents any of which is a right answer in the top 3.
QUESTIONS = {
    "prime factorization of an integer": {"sympy.factorint"},
    "greatest common divisor": {"math.gcd", "sympy.igcd", "sympy.gcd", "numpy.gcd"},
    "least common multiple": {"math.lcm", "sympy.ilcm", "sympy.lcm", "numpy.lcm"},
    "solve a system of linear equations": {"sympy.solve_linear_system", "numpy.linalg.solve", "sympy.linsolve"},
    "eigenvalues of a matrix": {"numpy.linalg.eigvals", "numpy.linalg.eig", "numpy.linalg.eigh"},
    "modular inverse": {"sympy.mod_inverse"},
    "euler totient": {"sympy.totient"},
    "divisors of a number": {"sympy.divisors", "sympy.divisor_count"},
    "gamma function": {"math.gamma", "sympy.gamma"},
    "nth prime": {"sympy.prime"},
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> SearchSettings:
    return SearchSettings(data_dir=str(tmp_path_factory.mktemp("indexes")))


@pytest.fixture(scope="module")
def default_index(settings) -> Path:
    return ensure_default_index(settings)


@pytest.fixture(scope="module")
def executor(settings, default_index) -> SearchExecutor:
    executor = SearchExecutor.from_settings(settings)
    yield executor
    executor.close()


def test_one_document_per_function_class_and_method_with_signature():
    documents = {d.id: d for d in module_documents(["math", "fractions", "itertools"])}
    gcd = documents["math.gcd"]
    assert gcd.title == "math.gcd(*integers)" and gcd.text == "Greatest Common Divisor."
    assert documents["fractions.Fraction"].title.startswith("fractions.Fraction(numerator=0, denominator=None")
    assert "fractions.Fraction.limit_denominator" in documents
    assert "itertools.permutations" in documents
    assert "math.pi" not in documents  # not callable: no documentation of its own


def test_each_object_and_each_docstring_appears_once():
    documents = list(module_documents(["sympy", "mpmath"]))
    ids = [d.id for d in documents]
    texts = [d.text for d in documents]
    assert len(ids) == len(set(ids)) and len(texts) == len(set(texts))
    assert len(documents) > 1000
    assert sum(doc_id.endswith(".taylor_term") for doc_id in ids) <= 1  # overrides are left out


def test_modules_that_are_not_installed_are_skipped():
    assert installed(["math", "no_such_module_here", "no_such.sub"]) == ["math"]
    assert {d.id.split(".")[0] for d in module_documents(["no_such_module_here", "bisect"])} == {"bisect"}


def test_the_default_index_is_built_once(settings, default_index):
    manifest = Manifest.read(default_index)
    assert manifest.name == "python-docs" and manifest.documents > 2000
    assert "sympy" in manifest.description and manifest.mode == "bm25"
    assert ensure_default_index(settings) == default_index
    assert Manifest.read(default_index).built == manifest.built  # not rebuilt


def test_processes_starting_at_once_build_the_default_index_once(tmp_path):
    settings = SearchSettings(data_dir=str(tmp_path), docs_modules=("math", "bisect"))
    with ThreadPoolExecutor(3) as pool:
        paths = list(pool.map(lambda _: ensure_default_index(settings), range(3)))
    assert paths == [tmp_path / "python-docs"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [".python-docs.lock", "python-docs"]
    assert Manifest.read(paths[0]).documents > 50


def test_no_default_index_is_built_when_switched_off(tmp_path):
    path = ensure_default_index(SearchSettings(data_dir=str(tmp_path), build_default=False))
    assert not path.exists()


@pytest.mark.parametrize("question, answers", QUESTIONS.items())
async def test_a_new_user_gets_the_right_function_near_the_top(executor, question, answers):
    response = await executor.search(pb.SearchCall(query=question, top_k=3), "r")
    found = [hit.id for hit in response.search.hits]
    assert set(found) & answers, f"{question!r} -> {found}"


async def test_hits_show_the_signature_and_docstring(executor):
    response = await executor.search(pb.SearchCall(query="prime factorization of an integer", top_k=3), "r")
    hit = next(hit for hit in response.search.hits if hit.id == "sympy.factorint")
    assert hit.title.startswith("sympy.factorint(n, limit=None")
    assert "prime factors" in hit.text


def test_the_tool_spec_describes_the_default_index(executor):
    spec = executor.spec()
    assert "python-docs: documentation of the Python modules" in spec.description
    assert executor.index_names() == ["python-docs"]


def test_the_served_default_index_can_be_chosen(settings, default_index):
    renamed = dataclasses.replace(settings, indexes=("python-docs",))
    executor = SearchExecutor.from_settings(renamed)
    assert executor.status().startswith("python-docs: ")
    executor.close()
