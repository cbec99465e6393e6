"""verl's own tool agent loop, as `toolserver_tool_agent`, against a real server: the loop
renders the prompt with the tools' schemas, parses the model's Hermes tool calls, runs
them through `ToolServerTool` in one session per trajectory, masks the tool answers out
of the response, and closes the session when the trajectory ends.

The model is scripted: each generation answers the next text of a list, tokenized by a
byte-level tokenizer with the Qwen2.5 chat template (made here, nothing downloaded). What
is under test is everything after the tokens: verl's loop and the adapter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.chat_tokenizer import END, byte_chat_tokenizer

pytest.importorskip("verl.experimental.agent_loop", reason="the verl extra: pip install -e '.[verl]'")
import verl.trainer.config  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from toolclient.integrations.verl import SESSION_KEY, STATS_KEY, ToolServerAgentLoop, ToolServerTool  # noqa: E402

QWEN_TEMPLATE = pytest.importorskip("trl.chat_template_utils").qwen2_5_chat_template


@pytest.fixture(scope="module")
def target(server) -> str:
    return server.target


def tool_call(code: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": code}}) + "\n</tool_call>" + END


class ScriptedModel:
    """verl's LLM server client, answering each generation with the next scripted text."""

    def __init__(self, tokenizer, turns: list[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **kwargs) -> TokenOutput:
        return TokenOutput(token_ids=self.tokenizer.encode(self.turns.pop(0), add_special_tokens=False))


def trainer_config():
    config = OmegaConf.load(Path(verl.trainer.config.__file__).parent / "_generated_ppo_trainer.yaml")
    rollout = config.actor_rollout_ref.rollout
    rollout.prompt_length, rollout.response_length = 4096, 4096
    rollout.multi_turn.update(enable=True, format="hermes", max_assistant_turns=4, max_tool_response_length=2000)
    return config


async def trajectory(target: str, turns: list[str]):
    tokenizer = byte_chat_tokenizer(QWEN_TEMPLATE)
    config = trainer_config()
    tool = ToolServerTool({"type": "native", "target": target, "tool": "python", "stateful": True})
    loop = ToolServerAgentLoop(trainer_config=DictConfigWrap(config), server_manager=ScriptedModel(tokenizer, turns),
                               tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
                               data_config=DictConfigWrap(config.data), tools=ToolListWrap([tool]))
    output = await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": "What is 6 * 7?"}])
    answers = tokenizer.decode([t for t, kept in zip(output.response_ids, output.response_mask) if not kept])
    model = tokenizer.decode([t for t, kept in zip(output.response_ids, output.response_mask) if kept])
    return output, answers, model


async def test_a_trajectory_runs_its_calls_in_one_session_and_masks_their_answers(server):
    turns = [tool_call("x = 6 * 7"), tool_call("print(x)"), "The answer is 42." + END]
    output, answers, model = await trajectory(server.target, turns)
    assert model == "".join(turns)  # the loss sees the model's tokens, all of them
    assert "stdout:\n42\n" in answers and "NameError" not in answers  # the second call saw the first's x
    assert output.extra_fields[STATS_KEY]["calls"] == 2 and output.extra_fields[STATS_KEY]["outcomes"] == {"OK": 2}
    assert not server.session_is_open(output.extra_fields[SESSION_KEY])  # closed when the trajectory ended


async def test_the_models_errors_reach_it_as_tool_answers(target):
    turns = [tool_call("1 / 0"), "I made a mistake." + END]
    output, answers, _ = await trajectory(target, turns)
    assert "outcome: ERROR: ZeroDivisionError" in answers
    assert output.extra_fields[STATS_KEY]["errors"] == 1
