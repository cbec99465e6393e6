"""Header/body split, normalisation and line mapping (pure functions)."""

from __future__ import annotations

import pytest

from toolserver.lean.header import Header, HeaderError, parse_header, split_source


def test_header_is_normalised_whatever_its_spelling():
    a = parse_header("import Mathlib\nimport  Aesop\n")
    b = parse_header("-- a comment\n\nimport Mathlib Aesop\nimport Mathlib")
    assert a == b == Header(("Mathlib", "Aesop"))
    assert a.key == "import Mathlib\nimport Aesop"


def test_empty_header_elaborates_the_prelude():
    header = parse_header("")
    assert header.key == "" and header.command == "import Init"


def test_imports_in_the_code_join_the_header_and_keep_line_numbers():
    code = "import Mathlib\n\ntheorem t : 1 = 1 := rfl"
    source = split_source(code, "")
    assert source.header == Header(("Mathlib",))
    assert source.command.split("\n")[2] == "theorem t : 1 = 1 := rfl"
    assert "import" not in source.command
    assert source.prelude_lines == 0 and source.caller_line(3) == 3


def test_header_field_and_code_imports_give_one_key():
    assert split_source("import Mathlib\ntheorem t : True := trivial").header == \
        split_source("theorem t : True := trivial", "import Mathlib").header


def test_non_import_header_lines_run_before_the_code_and_shift_lines():
    source = split_source("theorem t : 1 = 1 := rfl\nexample : True := trivial",
                          "import Mathlib\nopen Nat\nset_option maxHeartbeats 400000\n\n")
    assert source.header.key == "import Mathlib"
    assert source.command.startswith("open Nat\nset_option maxHeartbeats 400000\ntheorem t")
    assert source.prelude_lines == 2
    assert source.caller_line(4) == 2
    assert source.caller_line(1) == 0  # a position in the header field


def test_block_comment_before_imports_is_skipped():
    source = split_source("/- a\n   multi-line comment -/\nimport Mathlib\ntheorem t : True := trivial")
    assert source.header.imports == ("Mathlib",)
    assert source.command.split("\n")[3] == "theorem t : True := trivial"


def test_an_import_after_a_declaration_is_left_to_lean():
    source = split_source("theorem t : True := trivial\nimport Mathlib")
    assert source.header.imports == ()
    assert "import Mathlib" in source.command


@pytest.mark.parametrize("header", ["import", "import Foo;bar", "import Foo.", "import 9lives"])
def test_malformed_imports_are_refused(header):
    with pytest.raises(HeaderError):
        parse_header(header)
