"""Fixtures of the unit tests that need a real tool without a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolserver.search.corpus import read_corpus
from toolserver.search.executor import SearchExecutor
from toolserver.search.index import build_index
from toolserver.search.settings import SearchSettings

DATA = Path(__file__).resolve().parent.parent / "data" / "search"


@pytest.fixture(scope="module")
def search(tmp_path_factory) -> SearchExecutor:
    """The search tool over twelve encyclopedia facts (index "facts")."""
    data_dir = tmp_path_factory.mktemp("indexes")
    build_index(read_corpus(DATA / "facts.jsonl"), data_dir, "facts", description="twelve encyclopedia facts")
    executor = SearchExecutor.from_settings(SearchSettings(data_dir=str(data_dir), default_index="facts",
                                                           build_default=False))
    yield executor
    executor.close()
