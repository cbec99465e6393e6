"""SkyRL-Gym adapter (extra `skyrl`): tool groups that call a tool server fleet, and an
environment that runs the model's tool calls on them.

- `ToolServerPythonToolGroup`, `ToolServerSearchToolGroup`, `ToolServerLeanToolGroup`:
  SkyRL tools `python(code, stdin)`, `search(query, top_k, index)` and `lean(code, header,
  statement)`. Each answers the text the model reads; a call the server refuses or cannot
  take is text too, never an exception in the trainer.
- `ToolServerEnv`, registered by `register()` (id "toolserver"): one episode; all its
  python calls run in one session, opened at the first and closed by
  `close()`.

SkyRL's tools, `step` and `close` are synchronous; its generator runs them on env worker
threads, or on its own event loop when `max_env_workers` is 0 (a call then holds that loop
until it is answered). Their calls go through one event loop of the process on a daemon
thread, so every environment of the process shares one gRPC client and one cap on calls in
flight (`FleetCalls`), and no loop is made per call.

Not here: the tools' schemas in the prompt (the dataset's system prompt describes them).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from skyrl_gym.envs.search.utils import em_check, extract_solution
from skyrl_gym.tools.core import ToolGroup, tool

from toolclient.client import ToolServerError
from toolclient.integrations.calls import CallStats, FleetConfig, fleet_calls
from toolclient.integrations.model_calls import ToolCall, hermes_calls, tagged_calls
from toolcontract.answer_text import answer_text
from toolcontract.names import TOOL_NAMES

ENV_ID = "toolserver"
DEFAULT_MAX_TURNS = 5

T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def in_background(coro: Coroutine[Any, Any, T]) -> T:
    """coro's result, run on the process's one background event loop."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="toolserver-skyrl", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _loop).result()


class FleetToolGroup(ToolGroup):  # type: ignore[misc]  # skyrl_gym ships no type information
    """A tool group whose tools are calls to the fleet, counted in `stats`."""

    def __init__(self, name: str, config: FleetConfig, stats: CallStats | None = None) -> None:
        self.calls = fleet_calls(config)
        self.stats = stats if stats is not None else CallStats()
        super().__init__(name=name)

    def answer(self, tool_name: str, arguments: Mapping[str, Any]) -> str:
        """What the model reads of one call with its arguments, which the server checks."""
        return in_background(self._answer(tool_name, {k: v for k, v in arguments.items() if k != "session_id"}))

    async def _answer(self, tool_name: str, arguments: dict[str, Any]) -> str:
        started = time.monotonic()
        try:
            response = await self.calls.call(tool_name, arguments, session_id=await self._session_id())
        except ToolServerError as exc:
            self.stats.record(None, started)
            return f"the tool server refused the call: {exc}"
        self.stats.record(response, started)
        return answer_text(response, self.calls.config.max_output_chars)

    async def _session_id(self) -> str:
        return ""

    def close(self) -> None:
        """Frees what the group holds on the server; a stateless group holds nothing."""


class ToolServerPythonToolGroup(FleetToolGroup):
    """`python(code, stdin="")`. With session=True every call of the group runs in one
    session, opened at the first call and closed by `close()`; without, each call starts
    from a fresh interpreter."""

    def __init__(self, config: FleetConfig = FleetConfig(), stats: CallStats | None = None,
                 session: bool = False) -> None:
        self.keeps_session = session
        self.session_id = ""
        super().__init__("ToolServerPythonToolGroup", config, stats)

    @tool  # type: ignore[untyped-decorator]  # skyrl_gym's tool: a descriptor that binds like a method
    def python(self, code: str, stdin: str = "") -> str:
        return self.answer("python", {"code": code, "stdin": stdin})

    async def _session_id(self) -> str:
        if self.keeps_session and not self.session_id:
            self.session_id = await self.calls.open_session()
        return self.session_id

    def close(self) -> None:
        """Closes the session; one the server already dropped (idle timeout) is no error."""
        session_id, self.session_id = self.session_id, ""
        if session_id:
            try:
                in_background(self.calls.close_session(session_id))
            except ToolServerError:
                pass


class ToolServerSearchToolGroup(FleetToolGroup):
    """`search(query, top_k=0, index="")`: 0 and "" leave the server's defaults."""

    def __init__(self, config: FleetConfig = FleetConfig(), stats: CallStats | None = None) -> None:
        super().__init__("ToolServerSearchToolGroup", config, stats)

    @tool  # type: ignore[untyped-decorator]  # skyrl_gym's tool: a descriptor that binds like a method
    def search(self, query: str, top_k: int = 0, index: str = "") -> str:
        arguments = {"query": query, "top_k": top_k, "index": index}
        return self.answer("search", {name: value for name, value in arguments.items() if value})


class ToolServerLeanToolGroup(FleetToolGroup):
    """`lean(code, header="", statement="")`: Lean's messages, sorries and completeness."""

    def __init__(self, config: FleetConfig = FleetConfig(), stats: CallStats | None = None) -> None:
        super().__init__("ToolServerLeanToolGroup", config, stats)

    @tool  # type: ignore[untyped-decorator]  # skyrl_gym's tool: a descriptor that binds like a method
    def lean(self, code: str, header: str = "", statement: str = "") -> str:
        arguments = {"code": code, "header": header, "statement": statement}
        return self.answer("lean", {name: value for name, value in arguments.items() if value})


def tool_calls(action: str) -> list[ToolCall]:
    """The calls of one turn, in order: Hermes `<tool_call>` blocks, or else SkyRL's
    `<tool><name>text</name></tool>`."""
    return hermes_calls(action) or tagged_calls(action)


def answer_matches(action: str, ground_truth: Any) -> float:
    """1.0 when the turn's last <answer>...</answer> equals a target after Search-R1's
    normalization; ground_truth is a target, a list of them, or {"target": ...}."""
    answer = extract_solution(action)
    if answer is None or ground_truth is None:
        return 0.0
    target = ground_truth.get("target") if isinstance(ground_truth, Mapping) else ground_truth
    if target is None:  # {"target": None} or a mapping without one: nothing to match
        return 0.0
    targets = [str(target)] if isinstance(target, (str, int, float)) else [str(t) for t in target]
    return float(em_check(answer, targets))


class ToolServerEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl_gym ships no type information
    """One episode of a model that calls the server's tools (python, search and lean through
    the groups above, any other tool of the contract statelessly). A turn's calls are Hermes
    `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (any number) or
    `<tool><python>...</python></tool>`; their answers come back as one user message of
    `<tool_response>` blocks. A turn without a call, or turn `max_turns` (extras, which
    SkyRL's generator sets), ends the episode; the reward is then `reward()` of that turn
    (`answer_matches` against extras["reward_spec"]["ground_truth"]), 0.0 before. Only the last
    turn is read: a tool's output in the history could carry an <answer> of its own."""

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None,
                 fleet: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        config = FleetConfig.from_mapping({**(fleet or {}), **dict(env_config or {})})
        self.ground_truth = (extras.get("reward_spec") or {}).get("ground_truth")
        self.max_turns = int(extras.get("max_turns", DEFAULT_MAX_TURNS))
        self.stats = CallStats()
        self.python = ToolServerPythonToolGroup(config, self.stats, session=True)
        self.init_tool_groups([self.python, ToolServerSearchToolGroup(config, self.stats),
                               ToolServerLeanToolGroup(config, self.stats)])
        self.others = FleetToolGroup("ToolServerToolGroup", config, self.stats)  # the server's other tools

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        calls = tool_calls(action)
        if not calls or self.turns >= self.max_turns:
            return BaseTextEnvStepOutput(observations=[], reward=self.reward(action), done=True,
                                         metadata={"tool_calls": []})
        content = "\n".join(f"<tool_response>\n{self._run(call)}\n</tool_response>" for call in calls)
        return BaseTextEnvStepOutput(observations=[{"role": "user", "content": content}], reward=0.0, done=False,
                                     metadata={"tool_calls": [call.name for call in calls]})

    def reward(self, action: str) -> float:
        """The reward of the episode's last turn; override for another rule."""
        return answer_matches(action, self.ground_truth)

    def _run(self, call: ToolCall) -> str:
        if call.error:
            return call.error
        group_name = self.tool_to_toolgroup.get(call.name)
        if group_name is None:
            if call.name not in TOOL_NAMES:
                return f"no tool named {call.name!r}; the tools are {', '.join(sorted(TOOL_NAMES))}"
            return self.others.answer(call.name, call.arguments)
        group: FleetToolGroup = next(group for group in self.tool_groups if group.name == group_name)
        return group.answer(call.name, call.arguments)

    def close(self) -> None:
        for group in self.tool_groups:
            group.close()

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns, **self.stats.as_dict()}


def register(env_id: str = ENV_ID, **settings: Any) -> None:
    """Registers ToolServerEnv as env_id (replacing an earlier registration) with the fleet
    settings of FleetConfig; an environment's own `env_config` keys override them. Call it
    where SkyRL makes environments: in the entrypoint's Ray task."""
    FleetConfig(**settings)
    if env_id in skyrl_gym.registry:
        skyrl_gym.envs.deregister(env_id)
    skyrl_gym.register(id=env_id, entry_point=f"{__name__}:ToolServerEnv", kwargs={"fleet": dict(settings)})
