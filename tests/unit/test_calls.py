"""The call's frame and the paths of its files."""

from __future__ import annotations

import base64

import pytest

from sandbox.calls import CallLimits, CallRequest, working_path


def test_files_travel_in_base64():
    frame = CallRequest("r", "1", CallLimits(1, 1, 1, 1, 1, 1), files={"a/b.bin": b"\x00\xff"},
                        fetch_files=("out.txt",)).wire()
    assert base64.b64decode(frame["files"]["a/b.bin"]) == b"\x00\xff" and frame["fetch_files"] == ["out.txt"]


@pytest.mark.parametrize("name, path", [("a.txt", "a.txt"), ("./a/../b/c", "b/c"), ("a//b/", "a/b")])
def test_a_relative_path_is_normalized(name, path):
    assert working_path(name) == path


@pytest.mark.parametrize("name", ["", "/etc/passwd", "..", "../x", "a/../../x", ".", "a\0b"])
def test_a_path_out_of_the_working_directory_is_refused(name):
    with pytest.raises(ValueError):
        working_path(name)
