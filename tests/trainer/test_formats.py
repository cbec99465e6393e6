from __future__ import annotations

import json

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from trainer.formats import MalformedCall, RStar2Format, ToolCall, ToRLFormat, get_format, response_text
from trainer.tokenizer import ByteTokenizer

TOK = ByteTokenizer()


def test_torl_detects_closed_block_only():
    fmt = ToRLFormat()
    assert not fmt.call_closed("Let me compute.\n```python\nprint(1)\n")
    assert fmt.call_closed("Let me compute.\n```python\nprint(1)\n```")
    assert fmt.parse_call("no code here") is None
    assert fmt.parse_call("x\n```python\nprint(1+1)\n```") == ToolCall("print(1+1)\n")


def test_torl_parses_last_block_of_turn():
    text = "```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```"
    assert ToRLFormat().parse_call(text) == ToolCall("print(2)\n")


@pytest.mark.parametrize("text,reason", [("```python\n\n```", "empty"), ("```python print(1)```", "fence")])
def test_torl_malformed(text, reason):
    call = ToRLFormat().parse_call(text)
    assert isinstance(call, MalformedCall) and reason in call.reason


def test_rstar2_parses_json_call():
    fmt = RStar2Format()
    payload = json.dumps({"name": "python", "arguments": {"code": "print('hi')"}})
    assert not fmt.call_closed(f"<tool_call>{payload}")
    assert fmt.parse_call(f"think <tool_call>{payload}</tool_call>") == ToolCall("print('hi')")


@pytest.mark.parametrize("payload,reason", [
    ("{not json", "JSON"),
    ("[1, 2]", "object"),
    ('{"name": "shell", "arguments": {"code": "ls"}}', "unknown tool"),
    ('{"name": "python", "arguments": {}}', "arguments.code"),
    ('{"name": "python", "arguments": {"code": "  "}}', "arguments.code"),
])
def test_rstar2_malformed(payload, reason):
    call = RStar2Format().parse_call(f"<tool_call>{payload}</tool_call>")
    assert isinstance(call, MalformedCall) and reason in call.reason


def test_stopper_works_over_token_ids():
    stop = ToRLFormat().stopper(TOK)
    ids = TOK.encode("a\n```python\nprint(1)\n")
    assert not stop(ids)
    assert stop(ids + TOK.encode("```"))


@pytest.mark.parametrize("name", ["torl", "rstar2"])
def test_observation_is_wrapped_and_truncated_to_budget(name):
    fmt = get_format(name)
    short = fmt.observation_ids("42", TOK, 100)
    assert TOK.decode(short) == f"{fmt.response_open}42{fmt.response_close}"
    long = fmt.observation_ids("x" * 1000, TOK, 80)
    assert len(long) == 80
    text = TOK.decode(long)
    assert text.startswith(fmt.response_open + "xxx") and text.endswith(fmt.response_close)
    assert "truncated" in text


def test_response_text_shows_output_value_and_error():
    ok = pb.ExecuteResponse(outcome=pb.OK, stdout="3\n", python=pb.PythonResult(value="4"))
    assert response_text(ok) == "3\n4"
    err = pb.ExecuteResponse(outcome=pb.ERROR, stdout="partial\n", error="ZeroDivisionError: division by zero")
    assert response_text(err) == "partial\nZeroDivisionError: division by zero"
    assert response_text(pb.ExecuteResponse(outcome=pb.OK)) == "(no output)"
    assert response_text(pb.ExecuteResponse(outcome=pb.TIMEOUT)) == "TIMEOUT"


def test_final_program_is_last_code_block():
    text = "```python\nx = 1\n```\n```output\n\n```\n```python\ndef f(a):\n    return a\n```\nDone."
    assert ToRLFormat().final_program(text) == "def f(a):\n    return a"
    call = json.dumps({"name": "python", "arguments": {"code": "def g(): pass"}})
    assert RStar2Format().final_program(f"<tool_call>{call}</tool_call> done") == "def g(): pass"
    assert ToRLFormat().final_program("no code") is None


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown tool format"):
        get_format("xml")


@pytest.mark.parametrize("name", ["torl", "rstar2"])
def test_call_text_is_read_back_by_parse_call(name):
    fmt = get_format(name)
    code = 'x = "a\\nb"\nprint(x)'
    text = fmt.call_text(code)
    assert fmt.call_closed(text)
    assert fmt.parse_call(text).code.rstrip("\n") == code
