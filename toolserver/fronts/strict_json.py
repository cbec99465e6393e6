"""Parsing an HTTP request's JSON body within limits that bound what parsing costs.

A body's size bounds its bytes, not what it becomes: `[[],[],...]` turns each three bytes
into a 56-byte list. So before the parser runs, a skeleton of the body (its strings
emptied) is checked for the number of values and the nesting depth. What json.loads lets
through but no client means, and what would fail later where it is harder to say why, is
refused here: NaN and the infinities (RFC 8259 has neither), numbers too large to be a
finite float, bytes that are not UTF-8, and lone surrogates (`"\\ud800"`), which no
UTF-8 text and no protobuf string can hold.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# A string, or an unterminated one to the end: possessive, so that no body makes it backtrack
# (a body of escaped quotes that never closes would otherwise take quadratic time).
STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
BRACKET = re.compile(rb"[\[\]{}]")
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonRefused(ValueError):
    """A body refused before or while parsing; too_large: it was refused for its size
    (HTTP 413) rather than its form (400)."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


def parse_limited(body: bytes, max_elements: int, max_depth: int) -> Any:
    """The value body holds; raises JsonRefused."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused(f"the body is not UTF-8 (byte {exc.start})") from None
    skeleton = STRING.sub(b'""', body)
    elements = skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{") + 1
    if elements > max_elements:
        raise JsonRefused(f"the body holds about {elements} JSON values; the most is {max_elements}", too_large=True)
    depth = deepest = 0
    for bracket in BRACKET.findall(skeleton):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    if deepest > max_depth:
        raise JsonRefused(f"the body nests {deepest} deep; the most is {max_depth}")
    try:
        value = json.loads(text, parse_constant=refuse_constant, parse_float=finite_float)
    except RecursionError:
        raise JsonRefused("the body nests too deep") from None
    except ValueError as exc:
        raise JsonRefused(f"the body is not valid JSON: {str(exc)[:200]}") from None
    if SURROGATE_ESCAPE.search(body):
        where = lone_surrogate(value, "")
        if where is not None:
            raise JsonRefused(f"{where or 'the body'} holds a lone surrogate, which is not text")
    return value


def refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is too large for a number")
    return value


def printable(key: str) -> str:
    """key as it may appear in a message: a lone surrogate written as its escape, cut short."""
    return key[:40].encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate(value: Any, where: str) -> str | None:
    """The path of the first string (or key) in value that holds a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, list):
        items = ((f"{where}[{index}]", item) for index, item in enumerate(value))
    elif isinstance(value, dict):
        for key in value:
            if lone_surrogate(key, where) is not None:
                return f"a key of {where or 'the body'}"
        items = ((f"{where}.{printable(key)}" if where else printable(key), item) for key, item in value.items())
    else:
        return None
    for path, item in items:
        found = lone_surrogate(item, path)
        if found is not None:
            return found
    return None
