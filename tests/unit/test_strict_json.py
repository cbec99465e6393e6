"""Parsing a request body within limits: what json.loads takes but no client means is refused."""

from __future__ import annotations

import json

import pytest

from toolserver.fronts.strict_json import JsonRefused, parse_limited


def parse(body: bytes, values: int = 1000, depth: int = 8):
    return parse_limited(body, values, depth)


def test_ordinary_bodies_parse_as_json_loads_parses_them():
    body = {"code": 'print("a, [b], {c}")\n', "files": {"a.txt": "aGk="}, "n": [1, 2.5, -3e5, None, True],
            "emoji": "\U0001F600", "escaped": "\\u0041"}
    assert parse(json.dumps(body).encode()) == body
    assert parse(json.dumps(body, ensure_ascii=False).encode()) == body


def test_strings_do_not_count_as_values_or_depth():
    code = "[" * 50 + "," * 5000 + "]" * 50
    assert parse(json.dumps({"code": code}).encode(), values=10, depth=2) == {"code": code}


@pytest.mark.parametrize("body", [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}', b'{"a": 1e400}',
                                  b'{"a": 1' + b"0" * 5000 + b"}", b"{not json", b"\xff\xfe{}", b'"\xed\xa0\x80"'])
def test_what_is_not_json_is_refused(body):
    with pytest.raises(JsonRefused) as refused:
        parse(body)
    assert not refused.value.too_large


@pytest.mark.parametrize("body,where", [(b'{"code": "\\ud800"}', "code"), (b'{"a": ["x", "\\udfff"]}', "a[1]"),
                                        (b'{"a": {"\\udc00": 1}}', "a key of a"), (b'["\\ud83dx"]', "[0]")])
def test_a_lone_surrogate_is_refused_where_it_is(body, where):
    with pytest.raises(JsonRefused, match="lone surrogate") as refused:
        parse(body)
    assert str(refused.value).startswith(where)


def test_a_surrogate_pair_is_one_character():
    assert parse(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001F600"}


def test_too_many_values_is_too_large():
    with pytest.raises(JsonRefused) as refused:
        parse(b"[" + b"0," * 2000 + b"0]")
    assert refused.value.too_large


def test_too_deep_is_refused():
    with pytest.raises(JsonRefused, match="nests 9 deep"):
        parse(b"[" * 9 + b"]" * 9)
    assert parse(b"[" * 8 + b"]" * 8) == [[[[[[[[]]]]]]]]


def test_an_unterminated_string_of_escapes_is_refused_in_linear_time():
    """A body of escaped quotes that never closes: a backtracking pattern would take minutes."""
    with pytest.raises(JsonRefused):
        parse(b'"' + b'\\"' * (256 << 10), values=10, depth=2)
