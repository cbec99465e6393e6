"""What the python tool checks of a call's files before a worker sees them."""

from __future__ import annotations

import pytest

from sandbox.calls import CallLimits
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest
from toolserver.python.executor import call_files

LIMITS = CallLimits(timeout_ms=1000, memory_mb=64, max_output_bytes=1024, max_processes=1, max_file_mb=1,
                    max_open_files=8, max_scratch_mb=2)


def test_files_are_keyed_by_normalized_path_and_fetches_by_the_names_asked():
    files, fetch = call_files(pb.PythonCall(files={"./a/b.txt": b"1"}, fetch_files=["./o", "./o", "o"]), LIMITS, 8)
    assert files == {"a/b.txt": b"1"} and fetch == ("./o", "o")


@pytest.mark.parametrize("call", [
    pb.PythonCall(files={"a": b"1", "./a": b"2"}),           # one path twice
    pb.PythonCall(files={"a": b"1", "a/b": b"2"}),           # a file and a directory
    pb.PythonCall(files={"big": b"x" * ((1 << 20) + 1)}),    # above max_file_mb
    pb.PythonCall(files={f"f{i}": b"x" * (1 << 20) for i in range(3)}),  # above max_scratch_mb together
    pb.PythonCall(files={f"f{i}": b"" for i in range(9)}),   # too many
    pb.PythonCall(fetch_files=["../secret"]),
    pb.PythonCall(files={"./main.py": b"print(1)"}),         # the program's own file
])
def test_files_a_call_may_not_write_are_refused(call):
    with pytest.raises(InvalidRequest):
        call_files(call, LIMITS, 8)
