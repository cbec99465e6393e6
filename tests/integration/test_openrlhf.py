"""The OpenRLHF adapter against a real server, driven through the interface OpenRLHF 0.11.2
documents in openrlhf/utils/agent.py: reset({"observation", "label"}), then step with
observation_text, action_text, label and sampling_params. openrlhf itself does not install
here (flash-attn fails to build), so the adapter runs on its local stand-in base classes;
the last test runs OpenRLHF's own MultiTurnAgentExecutor where openrlhf is importable."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from tests.conftest import RunningServer
from toolclient.integrations import openrlhf as adapter
from toolclient.integrations.calls import FleetConfig, FleetConfigError

PROMPT = "<|im_start|>user\nWhat is 6 * 7? Use python.<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("openrlhf"), workers=2, sessions=2)
    yield running
    running.stop()


@pytest.fixture
def target(fleet, monkeypatch) -> str:
    """The fleet, named as OpenRLHF's Ray actors learn it: in the environment."""
    monkeypatch.setenv("TOOLSERVER_TARGET", fleet.target)
    return fleet.target


def states(action: str, observation: str = PROMPT, label: str = "42") -> dict:
    return {"observation_text": observation, "action_text": action, "label": label,
            "sampling_params": SimpleNamespace(max_tokens=100, logprobs=None)}


def hermes(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def feedback(*texts: str) -> str:
    return adapter.FEEDBACK.format(responses="\n".join(adapter.RESPONSE.format(text=text) for text in texts))


def test_settings_come_from_the_environment():
    environ = {"TOOLSERVER_TARGET": "dns:///toolserver:50051", "TOOLSERVER_TIMEOUT_S": "5",
               "TOOLSERVER_MAX_OUTPUT_CHARS": "100", "TOOLSERVER_TOKEN": "secret", "OTHER": "x"}
    assert FleetConfig.from_environ(environ) == FleetConfig(target="dns:///toolserver:50051", timeout_s=5.0,
                                                               max_output_chars=100, token="secret")
    assert FleetConfig.from_environ({}) == FleetConfig()
    with pytest.raises(FleetConfigError, match="TOOLSERVER_MAX_INFLIGHT must be a number"):
        FleetConfig.from_environ({"TOOLSERVER_MAX_INFLIGHT": "many"})


async def test_an_episode_keeps_one_session_across_hermes_and_fenced_calls(fleet, target):
    agent = adapter.AgentInstance()
    assert agent.calls.config.target == target
    assert await agent.reset({"observation": PROMPT, "label": "42"}) == {"observation": PROMPT}

    first_action = "I will compute it.\n" + hermes("python", code="x = 6 * 7\nx")
    first = await agent.step(states(first_action))
    assert first["done"] is False and first["rewards"].item() == 0.0 and first["scores"] == 0.0
    assert first["environment_feedback"] == feedback("value: 42")
    assert first["environment_feedback"].startswith("\n<|im_start|>user\n<tool_response>\n")
    assert first["sampling_params"].max_tokens == 100
    session_id = agent.session_id
    assert session_id and fleet.session_is_open(session_id)

    text = PROMPT + first_action + first["environment_feedback"]
    second = await agent.step(states("Check it:\n```python\nprint(x + 0)\n```\n", observation=text))
    assert second["environment_feedback"] == feedback("stdout:\n42\n") and agent.session_id == session_id

    final = await agent.step(states("The answer is <answer>42</answer>."))
    assert final["done"] is True and final["rewards"].item() == 1.0 and final["scores"] == 1.0
    assert final["environment_feedback"] == ""
    assert agent.session_id == "" and not fleet.session_is_open(session_id)
    logs = final["extra_logs"]
    assert logs["turns"] == 3 and logs["tool_calls"] == 2 and logs["tool_errors"] == 0
    assert all(isinstance(value, (int, float)) for value in logs.values())  # OpenRLHF makes tensors of them


async def test_errors_come_back_as_tool_text_in_call_order(fleet, target):
    agent = adapter.AgentInstance()
    action = "\n".join([hermes("python", code="1 / 0"), "<tool_call>{not json}</tool_call>",
                        hermes("browser", url="http://example.com"), hermes("search", query="  "),
                        '<tool_call>{"function": {"name": "python", "arguments": "{\\"code\\": \\"print(7)\\"}"}}'
                        "</tool_call>"])
    step = await agent.step(states(action))
    responses = step["environment_feedback"].split("\n</tool_response>")
    assert len(responses) == 6 and step["done"] is False
    assert responses[0].startswith("\n<|im_start|>user\n<tool_response>\noutcome: ERROR: ZeroDivisionError")
    assert responses[1] == "\n<tool_response>\ncould not read the tool call: Expecting property name enclosed in " \
                           "double quotes: line 1 column 2 (char 1)"
    assert responses[2] == ("\n<tool_response>\nno tool named 'browser'; the tools are bash, cpp, lean, program, "
                            "python, search")
    assert responses[3].startswith("\n<tool_response>\nthe tool server refused the call: INVALID_ARGUMENT")
    assert responses[4] == "\n<tool_response>\nstdout:\n7\n"
    assert step["extra_logs"]["tool_errors"] == 1 and step["extra_logs"]["tool_failed"] == 1
    await agent.close()


async def test_search_and_lean_are_stateless_calls(fleet, target):
    agent = adapter.AgentInstance()
    step = await agent.step(states(hermes("search", query="prime factorization of an integer", top_k=3)
                                   + hermes("lean", code="theorem t : 1 + 1 = 2 := rfl")))
    searched, checked = step["environment_feedback"].split("</tool_response>")[:2]
    assert '"id": "sympy.factorint"' in searched
    assert "refused the call: FAILED_PRECONDITION" in checked or "complete: True" in checked
    assert agent.session_id == ""


async def test_a_turn_without_a_call_or_the_last_turn_ends_the_episode(fleet, target):
    wrong = await adapter.AgentInstance().step(states("I think it is <answer>41</answer>."))
    assert wrong["done"] is True and wrong["rewards"].item() == 0.0 and wrong["extra_logs"]["tool_calls"] == 0

    agent = adapter.AgentInstance()
    agent.max_turns = 1
    last = await agent.step(states(hermes("python", code="x = 1") + "<answer>42</answer>"))
    assert last["done"] is True and last["rewards"].item() == 1.0 and last["extra_logs"]["tool_calls"] == 0


async def test_the_executor_closes_the_sessions_of_each_execute(fleet, target, monkeypatch):
    """OpenRLHF's executor drops its instance when the token budget runs out, before the
    episode is done: AgentExecutor closes it after the turns, whatever way they ended."""
    async def budget_runs_out(self, prompt, label, *args, **kwargs):
        agent = self.agent_instance_cls()
        await agent.reset({"observation": prompt, "label": label})
        await agent.step(states(hermes("python", code="y = 1")))
        return {"session_id": agent.session_id}

    monkeypatch.setattr(adapter.MultiTurnAgentExecutor, "execute", budget_runs_out)
    output = await adapter.AgentExecutor().execute(PROMPT, "42", None, 1024, None, None)
    assert output["session_id"] and not fleet.session_is_open(output["session_id"])


class CharTokenizer:
    """One token per character, called as OpenRLHF's executor calls a Hugging Face tokenizer."""

    def __call__(self, text: str, add_special_tokens: bool = False, return_tensors: str = "pt") -> dict:
        return {"input_ids": np.array([[ord(c) for c in text]], dtype=np.int64).reshape(1, -1)}

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ids)


class ScriptedEngine:
    """Answers each generate with the next scripted action, as vLLM's output."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = list(actions)

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        text = self.actions.pop(0)
        return SimpleNamespace(outputs=[SimpleNamespace(text=text, token_ids=[ord(c) for c in text], logprobs=None,
                                                        finish_reason="stop")])


async def test_openrlhf_runs_the_agent_loaded_from_this_file(fleet, target):
    pytest.importorskip("openrlhf.utils.agent", reason="openrlhf is not installed")
    import importlib.util

    spec = importlib.util.spec_from_file_location("agent_module", adapter.__file__)  # as OpenRLHF loads it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from openrlhf.utils.agent import AgentExecutorBase
    executor = module.AgentExecutor()
    assert isinstance(executor, AgentExecutorBase)

    actions = [hermes("python", code="x = 6 * 7\nx"), "So <answer>42</answer>."]
    output = await executor.execute(PROMPT, "42", SimpleNamespace(max_tokens=None, logprobs=None), 100_000,
                                    CharTokenizer(), ScriptedEngine(actions))
    text = "".join(chr(i) for i in output["observation_tokens"])
    assert text == PROMPT + actions[0] + feedback("value: 42") + actions[1]
    assert output["reward"] == 1.0 and output["scores"] == 1.0 and len(output["action_ranges"]) == 2
    assert output["extra_logs"]["tool_calls"] == 1
