"""OpenRLHF adapter (extra `openrlhf`): this file is an agent for `--train.agent_func_path`,
whose environment is a tool server fleet.

OpenRLHF (0.11.2, `openrlhf/utils/agent.py` and `trainer/ray/vllm_engine.py`) loads the
file's `AgentExecutor` and makes it without arguments; its MultiTurnAgentExecutor makes one
`AgentInstance()` per sample, awaits `reset({"observation": prompt, "label": label})`, then
after each generation `step(states)` with `observation_text` (all text so far),
`action_text` (the new generation), `label` and `sampling_params`. `step` answers
`rewards` (OpenRLHF calls `.item()` on it), `scores`, `environment_feedback` (text added to
the token stream as it is, so it carries the chat template's turn markers), `done`,
`sampling_params` and `extra_logs` (numbers it makes tensors of). The executor never closes
an instance: `AgentExecutor` here closes those its `execute` made, whatever way it ends.

- A turn's calls are Hermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
  blocks, or else its fenced ```python blocks (run as python calls); all python calls of an
  episode run in one session, opened at the first and closed when the episode ends.
  Their answers come back as one ChatML user turn of `<tool_response>` blocks (the turn
  Qwen's template makes of tool messages); another template needs `FEEDBACK` changed.
- A turn without a call, or turn `max_turns`, ends the episode with `score()`: 1.0 when
  the turn's last <answer>...</answer> equals the label, else 0.0. Only that turn is read:
  a tool's output earlier in the text could carry an <answer> of its own.
- Settings come from the environment (`TOOLSERVER_TARGET`, `TOOLSERVER_TOKEN`, ...: one
  per FleetConfig field), as OpenRLHF makes the agent inside its vLLM Ray actors without
  arguments.

Where openrlhf cannot be imported (it does not install where flash-attn cannot be built),
`AgentInstanceBase` and `MultiTurnAgentExecutor` are local stand-ins with the interface
above, so that this module imports and its agent runs without it; only OpenRLHF's own
executor runs the turns.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Any, TypedDict

import numpy as np

from toolclient.client import ToolServerError
from toolclient.integrations.calls import CallStats, FleetConfig, fleet_calls
from toolclient.integrations.model_calls import ToolCall, fenced_calls, hermes_calls
from toolcontract.answer_text import answer_text
from toolcontract.names import SESSION_TOOL, TOOL_NAMES

try:
    from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
except ImportError:
    class AgentInstanceBase(ABC):  # type: ignore[no-redef]
        """Stand-in for openrlhf.utils.agent.AgentInstanceBase."""

        @abstractmethod
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            return states

        @abstractmethod
        async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]: ...

    class MultiTurnAgentExecutor:  # type: ignore[no-redef]
        """Stand-in for openrlhf.utils.agent.MultiTurnAgentExecutor, which runs the turns."""

        def __init__(self, agent_instance_cls: type) -> None:
            self.agent_instance_cls = agent_instance_cls

        async def execute(self, prompt: Any, label: Any, sampling_params: Any, max_length: int, hf_tokenizer: Any,
                          llm_engine: Any, images: Any = None) -> dict[str, Any]:
            raise NotImplementedError("OpenRLHF's MultiTurnAgentExecutor runs the turns: install openrlhf")


ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
RESPONSE = "<tool_response>\n{text}\n</tool_response>"
FEEDBACK = "\n<|im_start|>user\n{responses}<|im_end|>\n<|im_start|>assistant\n"  # after the model's <|im_end|>

class AgentStep(TypedDict):
    """What `AgentInstance.step` answers OpenRLHF (the keys its executor reads)."""

    rewards: np.float64              # OpenRLHF calls .item() on it
    scores: float
    environment_feedback: str        # added to the token stream as it is
    done: bool
    sampling_params: Any             # the states' own, handed back
    extra_logs: dict[str, Any]       # numbers, made tensors of


_EPISODES: ContextVar[list["AgentInstance"]] = ContextVar("toolserver_openrlhf_episodes")


def tool_calls(action: str) -> list[ToolCall]:
    """The turn's calls in order: its Hermes `<tool_call>` blocks, or else its fenced
    python blocks."""
    return hermes_calls(action) or fenced_calls(action)


class AgentInstance(AgentInstanceBase):  # type: ignore[misc]  # openrlhf, where installed, is untyped
    """One sample's episode."""

    max_turns = 8

    def __init__(self, config: FleetConfig | None = None) -> None:
        self.calls = fleet_calls(config or FleetConfig.from_environ())
        self.stats = CallStats()
        self.session_id = ""
        self.turns = 0
        episodes = _EPISODES.get(None)
        if episodes is not None:
            episodes.append(self)

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {"observation": states["observation"]}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> AgentStep:
        self.turns += 1
        action = states["action_text"]
        calls = tool_calls(action)
        done = not calls or self.turns >= self.max_turns
        if done:
            reward, feedback = self.score(action, states.get("label")), ""
            await self.close()
        else:
            answers = [call.error or await self._answer(call.name, call.arguments) for call in calls]
            reward, feedback = 0.0, FEEDBACK.format(responses="\n".join(RESPONSE.format(text=a) for a in answers))
        logs = {f"tool_{name}": value for name, value in self.stats.as_dict().items() if name != "outcomes"}
        return {"rewards": np.float64(reward), "scores": reward, "environment_feedback": feedback, "done": done,
                "sampling_params": states.get("sampling_params"), "extra_logs": {"turns": self.turns, **logs}}

    def score(self, action: str, label: Any) -> float:
        """The reward of the episode's last turn; override for another rule."""
        answers = ANSWER.findall(action)
        if not answers or label is None:
            return 0.0
        return float(answers[-1].strip() == str(label).strip())

    async def _answer(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in TOOL_NAMES:
            return f"no tool named {name!r}; the tools are {', '.join(sorted(TOOL_NAMES))}"
        started = time.monotonic()
        arguments = {key: value for key, value in arguments.items() if key != "session_id"}
        try:
            if name == SESSION_TOOL and not self.session_id:
                self.session_id = await self.calls.open_session()
            response = await self.calls.call(name, arguments, session_id=self.session_id if name == SESSION_TOOL else "")
        except ToolServerError as exc:
            self.stats.record(None, started)
            return f"the tool server refused the call: {exc}"
        self.stats.record(response, started)
        return answer_text(response, self.calls.config.max_output_chars)

    async def close(self) -> None:
        """Closes the episode's session; one the server already dropped is no error."""
        session_id, self.session_id = self.session_id, ""
        if session_id:
            try:
                await self.calls.close_session(session_id)
            except ToolServerError:
                pass


class AgentExecutor(MultiTurnAgentExecutor):  # type: ignore[misc]  # openrlhf, where installed, is untyped
    """OpenRLHF's multi-turn executor over `AgentInstance`, closing the instances each
    `execute` made (OpenRLHF drops them, sessions and all, when the token budget runs out)."""

    def __init__(self, agent_instance_cls: type[AgentInstance] = AgentInstance) -> None:
        super().__init__(agent_instance_cls)

    async def execute(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        episodes: list[AgentInstance] = []
        token = _EPISODES.set(episodes)
        try:
            result: dict[str, Any] = await super().execute(*args, **kwargs)
            return result
        finally:
            _EPISODES.reset(token)
            for episode in episodes:
                await episode.close()
