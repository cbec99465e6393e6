import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.errors import InvalidRequest, status_of
from toolserver.text import is_valid_text, valid_text


def test_lone_surrogates_become_replacement_characters_and_pairs_join():
    assert valid_text("a\udc80b") == "a\ufffdb"
    assert valid_text("\ud83d\ude00") == "\U0001f600"
    assert valid_text("plain ascii") == "plain ascii" and valid_text("é") == "é"
    pb.ExecuteResponse(stdout=valid_text("x\ud800"))  # protobuf takes it
    assert not is_valid_text("\ud800") and is_valid_text("€")


def test_status_messages_are_valid_text():
    code, message = status_of(InvalidRequest("bad \udc80"))
    assert message == "bad \ufffd"


@pytest.mark.parametrize("arguments", ["[" * 50000, '{"code": ' + "1" * 5000 + "}", '{"code": "\\udfff"}'])
def test_unreadable_json_arguments_are_invalid_requests(arguments):
    from toolserver.python.schema import python_call_from_json

    with pytest.raises(InvalidRequest):
        python_call_from_json(arguments)
