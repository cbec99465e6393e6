"""Reading JSONL corpora in both layouts, and the errors that name the bad line."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolserver.search.corpus import CorpusError, Document, read_corpus, split_contents

DATA = Path(__file__).resolve().parent.parent / "data" / "search"


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_the_id_title_text_layout_in_order():
    documents = list(read_corpus(DATA / "facts.jsonl"))
    assert len(documents) == 12
    assert documents[0] == Document("eiffel", "Eiffel Tower", documents[0].text)
    assert documents[0].text.startswith("The Eiffel Tower is a wrought-iron lattice tower")
    assert [d.id for d in documents][-1] == "prime_numbers"


def test_reads_the_wiki18_contents_layout():
    documents = list(read_corpus(DATA / "wiki18.jsonl"))
    assert [d.id for d in documents] == ["0", "1", "2"]  # the blank line is skipped
    assert documents[1].title == "Great Barrier Reef"
    assert documents[1].text.startswith("The Great Barrier Reef is")
    assert documents[2].title == "" and "Sahara" in documents[2].text


@pytest.mark.parametrize("contents, title, text", [
    ('"Title"\nBody text.', "Title", "Body text."),
    ("Unquoted title\nBody", "Unquoted title", "Body"),
    ("only one line", "", "only one line"),
    ('"A"\nfirst\nsecond', "A", "first\nsecond"),
])
def test_split_contents(contents, title, text):
    assert split_contents(contents) == (title, text)


def test_integer_ids_become_strings_and_title_is_optional(tmp_path):
    path = write(tmp_path, '{"id": 7, "text": "seven"}', '{"id": "x", "title": "T", "text": "t", "extra": 1}')
    assert list(read_corpus(path)) == [Document("7", "", "seven"), Document("x", "T", "t")]


@pytest.mark.parametrize("line, message", [
    ('{"id": "a", "text": ', "not valid JSON"),
    ('["a", "b"]', "expected a JSON object, got list"),
    ('{"text": "no id"}', "'id' must be a string or an integer"),
    ('{"id": true, "text": "t"}', "'id' must be a string or an integer"),
    ('{"id": "  ", "text": "t"}', "'id' is empty"),
    ('{"id": "a", "title": "t"}', "needs 'text'"),
    ('{"id": "a", "text": 5}', "'text' must be a string"),
    ('{"id": "a", "title": 5, "text": "t"}', "'title' must be a string"),
    ('{"id": "a", "contents": 5}', "'contents' must be a string"),
    ('{"id": "a", "text": "t", "contents": "c"}', "both 'text' and 'contents'"),
    ('{"id": "a", "title": " ", "text": ""}', "neither title nor text"),
])
def test_a_bad_line_is_an_error_naming_file_and_line(tmp_path, line, message):
    path = write(tmp_path, '{"id": "ok", "text": "fine"}', "", line)
    with pytest.raises(CorpusError) as caught:
        list(read_corpus(path))
    assert f"{path} line 3: " in str(caught.value)
    assert message in str(caught.value)


def test_duplicate_ids_are_an_error(tmp_path):
    path = write(tmp_path, '{"id": "a", "text": "x"}', '{"id": "b", "text": "y"}', '{"id": "a", "text": "z"}')
    with pytest.raises(CorpusError, match="line 3: duplicate id 'a'"):
        list(read_corpus(path))


def test_an_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="holds no documents"):
        list(read_corpus(write(tmp_path, "", "  ")))


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="cannot read corpus"):
        list(read_corpus(tmp_path / "absent.jsonl"))


def test_text_that_is_not_utf8_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusError, match="line 2: not UTF-8"):
        list(read_corpus(path))
