"""The call's frame and the paths of its files."""

from __future__ import annotations

import base64

import pytest

from sandbox.calls import CallLimits, CallReply, CallRequest, KeptFile, working_path


def test_files_travel_in_base64():
    frame = CallRequest("r", "1", CallLimits(1, 1, 1, 1, 1, 1), files={"a/b.bin": b"\x00\xff"},
                        fetch_files=("out.txt",)).wire()
    assert base64.b64decode(frame["files"]["a/b.bin"]) == b"\x00\xff" and frame["fetch_files"] == ["out.txt"]


def test_a_kept_file_goes_by_key_where_the_zygote_holds_it_and_with_its_bytes_once():
    request = CallRequest("r", "1", CallLimits(1, 1, 1, 1, 1, 1),
                          kept_files={"held.bin": KeptFile("h", b"held"), "new.bin": KeptFile("n", b"\x00\xff"),
                                      "plain.bin": KeptFile("p", b"plain")})
    frame = request.wire(held={"h"}, new={"n"}, forget=["old"])
    assert frame["kept"] == {"held.bin": "h", "new.bin": "n"} and frame["forget"] == ["old"]
    assert {key: base64.b64decode(text) for key, text in frame["kept_data"].items()} == {"n": b"\x00\xff"}
    assert {path: base64.b64decode(text) for path, text in frame["files"].items()} == {"plain.bin": b"plain"}
    everything_plain = request.wire()  # a zygote that keeps nothing gets every file as one of files
    assert (everything_plain["kept"], everything_plain["kept_data"]) == ({}, {})
    assert sorted(everything_plain["files"]) == ["held.bin", "new.bin", "plain.bin"]


def test_a_reply_reads_a_result_frame():
    frame = {"id": "r", "outcome": "OK", "stdout": "out", "stderr": "err", "value": "42", "error": "",
             "exit_code": 3, "truncated": True, "elapsed_us": 7, "files": {"out.bin": "AP8="}}
    assert CallReply.from_wire(frame) == CallReply("r", "OK", stdout="out", stderr="err", value="42", exit_code=3,
                                                   truncated=True, elapsed_us=7, files={"out.bin": b"\x00\xff"})


def test_an_invalid_frame_reads_with_the_defaults():
    reply = CallReply.from_wire({"id": "r", "outcome": "INVALID", "error": "the request lacks code"})
    assert reply == CallReply("r", "INVALID", error="the request lacks code")


def test_files_that_are_not_base64_read_as_none():
    assert CallReply.from_wire({"id": "r", "outcome": "OK", "files": {"a": "not base64!"}}).files == {}
    assert CallReply.from_wire({"id": "r", "outcome": "OK", "files": ["a"]}).files == {}


@pytest.mark.parametrize("outcome", ["CRASHED", "ERROR", "OK"])
def test_a_call_the_oom_killer_ended_hit_its_memory_limit(outcome):
    reply = CallReply("r", outcome, value="[-9, 0]", error="killed by signal SIGKILL")
    reply.note_oom_kills(1, "memory limit of 64 MB exceeded")
    assert (reply.outcome, reply.error, reply.value) == ("MEMORY_LIMIT", "memory limit of 64 MB exceeded", "[-9, 0]")


@pytest.mark.parametrize("outcome, killed", [("OK", 0), ("TIMEOUT", 2), ("DENIED", 1), ("CRASHED", 0)])
def test_other_ends_stay_what_they_were(outcome, killed):
    reply = CallReply("r", outcome, error="as reported")
    reply.note_oom_kills(killed, "memory limit of 64 MB exceeded")
    assert (reply.outcome, reply.error) == (outcome, "as reported")


@pytest.mark.parametrize("name, path", [("a.txt", "a.txt"), ("./a/../b/c", "b/c"), ("a//b/", "a/b")])
def test_a_relative_path_is_normalized(name, path):
    assert working_path(name) == path


@pytest.mark.parametrize("name", ["", "/etc/passwd", "..", "../x", "a/../../x", ".", "a\0b"])
def test_a_path_out_of_the_working_directory_is_refused(name):
    with pytest.raises(ValueError):
        working_path(name)


def test_a_sessions_messages_sit_beside_a_calls():
    from sandbox.calls import CellRequest, SessionStart, session_state

    assert SessionStart(512, None).wire() == {"memory_mb": 512, "guard": None}
    assert CellRequest("t", "x = 1", "in", 100, 2000).wire() == {"id": "t", "code": "x = 1", "stdin": "in",
                                                                 "value_chars": 100, "display_bytes": 2000}
    assert [session_state(frame) for frame in ({"waiting": True}, {"serving": True, "pid": 7}, {"serving": 1}, {})] == [
        "waiting", "serving", "", ""]
