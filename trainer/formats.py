"""The two tool protocols, ToRL and rStar2-Agent, as one interface; pure functions.

A format knows how a task is put to the model (`prompt`), when generated text has
closed a tool call (`call_closed`), what the call asks for (`parse_call`: the code, or
why it is malformed), how a tool's response is shown back (`observation_ids`: token ids
to append, truncated to a token budget) and where a code task's final program is
(`final_program`). It is the one place these strings live. It does not run anything,
talk to the server, or score answers (that is `rewards`).

ToRL:    ```python\\n<code>\\n```            answered by  ```output\\n<text>\\n```
rStar2:  <tool_call>{"name": "python", "arguments": {"code": ...}}</tool_call>
                                           answered by  <tool_response>\\n<text>\\n</tool_response>
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from toolcontract.v1 import toolserver_pb2 as pb
from trainer.tokenizer import Tokenizer

CODE_BLOCK = re.compile(r"```python\n(.*?)\n?```", re.DOTALL)
TRUNCATED = "\n...[output truncated]\n"
TOOL_NAME = "python"


@dataclass(frozen=True)
class ToolCall:
    code: str


@dataclass(frozen=True)
class MalformedCall:
    """The model closed a call the tool cannot run; `reason` is shown back to it."""

    reason: str


Call = ToolCall | MalformedCall


class ToolFormat:
    """Base of the two protocols; subclasses set the strings and parse calls."""

    name = ""
    response_open = ""
    response_close = ""
    stop_strings: tuple[str, ...] = ()  # for backends that stop on strings (vLLM); `call_closed` decides
    instructions = ""

    def __init__(self, instructions: bool = True) -> None:
        if not instructions:
            self.instructions = ""

    def prompt(self, problem: str) -> str:
        """The task as put to the model: the format's instructions (unless turned off,
        for a model trained from scratch on the format) and the problem."""
        head = f"{self.instructions}\n\n" if self.instructions else ""
        return f"{head}Problem: {problem}\nSolution:\n"

    def call_closed(self, turn_text: str) -> bool:
        """True when the text generated since the last observation ends a tool call."""
        raise NotImplementedError

    def parse_call(self, turn_text: str) -> Call | None:
        """The call the turn closed, or None when it closed none."""
        raise NotImplementedError

    def call_text(self, code: str) -> str:
        """How a model writes a call of `code`: what `parse_call` reads back (traces)."""
        raise NotImplementedError

    def final_program(self, model_text: str) -> str | None:
        """A code task's answer: the last ```python block the model wrote."""
        blocks = CODE_BLOCK.findall(model_text)
        return blocks[-1] if blocks else None

    def observation_ids(self, body: str, tokenizer: Tokenizer, budget: int) -> list[int]:
        """The response wrapped in this format's delimiters as token ids, at most `budget`
        of them: the body is cut (head kept) when it does not fit. The pieces are encoded
        separately and joined as ids, so nothing already generated is re-tokenised."""
        head = tokenizer.encode(self.response_open)
        tail = tokenizer.encode(self.response_close)
        room = budget - len(head) - len(tail)
        if room <= 0:
            return (head + tail)[:max(budget, 0)]
        ids = tokenizer.encode(body)
        if len(ids) > room:
            marker = tokenizer.encode(TRUNCATED)
            ids = ids[:max(room - len(marker), 0)] + marker
            ids = ids[:room]
        return head + ids + tail

    def stopper(self, tokenizer: Tokenizer) -> Callable[[Sequence[int]], bool]:
        """A stop test over the ids generated in the current turn."""
        return lambda ids: self.call_closed(tokenizer.decode(ids))


class ToRLFormat(ToolFormat):
    name = "torl"
    response_open = "\n```output\n"
    response_close = "\n```\n"
    stop_strings = ("\n```",)
    instructions = ("Solve the problem. You may write Python in a ```python block; its output comes back "
                    "in an ```output block. Put the final answer in \\boxed{}.")

    def call_closed(self, turn_text: str) -> bool:
        start = turn_text.rfind("```python")
        return start >= 0 and "```" in turn_text[start + len("```python"):]

    def call_text(self, code: str) -> str:
        return f"```python\n{code.rstrip()}\n```"

    def parse_call(self, turn_text: str) -> Call | None:
        if not self.call_closed(turn_text):
            return None
        start = turn_text.rfind("```python")
        body = turn_text[start + len("```python"):]
        if not body.startswith("\n"):
            return MalformedCall("the ```python fence must end its line")
        code = body[1:body.index("```")]
        if not code.strip():
            return MalformedCall("empty code block")
        return ToolCall(code.rstrip("\n") + "\n")


class RStar2Format(ToolFormat):
    name = "rstar2"
    response_open = "\n<tool_response>\n"
    response_close = "\n</tool_response>\n"
    stop_strings = ("</tool_call>",)
    instructions = ("Solve the problem. To run Python, write <tool_call>{\"name\": \"python\", \"arguments\": "
                    "{\"code\": \"...\"}}</tool_call>; the result comes back in <tool_response>. "
                    "Put the final answer in \\boxed{}.")

    def call_closed(self, turn_text: str) -> bool:
        start = turn_text.rfind("<tool_call>")
        return start >= 0 and "</tool_call>" in turn_text[start:]

    def call_text(self, code: str) -> str:
        return f"<tool_call>{json.dumps({'name': TOOL_NAME, 'arguments': {'code': code}})}</tool_call>"

    def parse_call(self, turn_text: str) -> Call | None:
        if not self.call_closed(turn_text):
            return None
        start = turn_text.rfind("<tool_call>") + len("<tool_call>")
        payload = turn_text[start:turn_text.index("</tool_call>", start)]
        try:
            call = json.loads(payload)
        except json.JSONDecodeError as exc:
            return MalformedCall(f"the tool call is not valid JSON: {exc.msg}")
        if not isinstance(call, dict):
            return MalformedCall("the tool call must be a JSON object")
        if call.get("name") != TOOL_NAME:
            return MalformedCall(f"unknown tool {call.get('name')!r}; the only tool is {TOOL_NAME!r}")
        arguments = call.get("arguments")
        code = arguments.get("code") if isinstance(arguments, dict) else None
        if not isinstance(code, str) or not code.strip():
            return MalformedCall("arguments.code must be a non-empty string")
        return ToolCall(code)

    def final_program(self, model_text: str) -> str | None:
        block = super().final_program(model_text)
        if block is not None:
            return block
        calls = [self.parse_call(m.group(0)) for m in re.finditer(r"<tool_call>.*?</tool_call>", model_text, re.DOTALL)]
        codes = [c.code for c in calls if isinstance(c, ToolCall)]
        return codes[-1] if codes else None


FORMATS: dict[str, type[ToolFormat]] = {"torl": ToRLFormat, "rstar2": RStar2Format}


def get_format(name: str, instructions: bool = True) -> ToolFormat:
    try:
        return FORMATS[name](instructions)
    except KeyError:
        raise ValueError(f"unknown tool format {name!r}; known: {sorted(FORMATS)}") from None


def response_text(response: pb.ExecuteResponse) -> str:
    """What the model sees of a tool response: stdout, the last expression's value as a
    notebook shows it, and for a failure the one-line error (the traceback's last line)."""
    parts = [response.stdout.rstrip("\n")] if response.stdout else []
    if response.outcome == pb.OK:
        if response.HasField("python") and response.python.value:
            parts.append(response.python.value)
    else:
        parts.append(response.error or pb.Outcome.Name(response.outcome))
    text = "\n".join(p for p in parts if p)
    return text if text else "(no output)"


def malformed_text(call: MalformedCall) -> str:
    return f"Error: the tool call could not be run: {call.reason}"
