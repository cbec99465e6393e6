"""verl (0.9.x) on a tool server fleet: tools, a session-closing agent loop, a code reward.

- `ToolServerTool`, a `verl.tools.base_tool.BaseTool` configured per tool in verl's tool
  YAML (`class_name: toolclient.integrations.verl.ToolServerTool`, `config: {type: native,
  target, tool, stateful, images, timeout_s, max_output_chars, max_inflight, token}`).
  Without a `tool_schema` in the YAML it asks the server for the tool's schema (ListTools),
  in the flat shape verl's pydantic schema takes. `images: true` (for a vision model: verl
  refuses images without an image processor) hands what a session's cell displayed as
  images (its figures) to verl as PIL images in `ToolResponse.image`; otherwise the text
  names them.
- Sessions are kept per trajectory, not per call: verl creates and releases a tool around
  every single call, so a stateful python tool keys its session on the trajectory's
  `AgentData` (its id is written to `extra_fields`, which reach the reward function too).
  `ToolServerAgentLoop` (register it through `agent_loop_config_path`) closes the sessions
  its trajectory opened when the trajectory ends, whatever way it ends; the server's idle
  timeout closes those of any other loop.
- verl drops a tool's metrics dict, so each call's counts and latency are added to
  `extra_fields["toolserver_calls"]`, which verl carries to the reward function and the
  batch (`tool_extra_fields`).
- `compute_score`, an async `custom_reward_function` that runs all test cases of a sample
  in one ExecuteStream instead of one HTTP request per case, with verl's result codes.

Stateless `@function_tool` variants for `function_tool_path` are in
`toolclient/integrations/verl_function_tools.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import json
import re
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from toolclient.client import NotFound, ToolServerError, python_request
from toolclient.integrations.calls import (
    CallStats,
    FleetCalls,
    FleetConfig,
    FleetConfigError,
    fleet_calls,
    function_schema,
)
from toolcontract.answer_text import answer_text
from toolcontract.displays import displayed_images
from toolcontract.names import SESSION_TOOL, TOOL_NAMES
from toolcontract.output_match import same_output
from toolcontract.v1 import toolserver_pb2 as pb

SESSION_KEY = "toolserver_session_id"
STATS_KEY = "toolserver_calls"
TOOL_KEYS = ("type", "tool", "stateful", "images")

# The sessions the running trajectory opened, as (calls, session_id); set by ToolServerAgentLoop.
_OPENED: contextvars.ContextVar[list[tuple[FleetCalls, str]] | None] = contextvars.ContextVar(
    "toolserver_opened_sessions", default=None)
_SESSION_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def pil_images(response: pb.ExecuteResponse) -> list[Any]:
    """The images the call displayed, as the PIL images verl's multimodal loop takes."""
    from PIL import Image

    images = []
    for _, data in displayed_images(response):
        with contextlib.suppress(OSError, ValueError):
            image = Image.open(io.BytesIO(data))
            image.load()
            images.append(image.convert("RGB"))
    return images


class ToolServerTool(BaseTool):
    """One of the server's tools (python, search, lean) as a verl tool."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        self.tool = str(config.get("tool", SESSION_TOOL))
        if self.tool not in TOOL_NAMES:
            raise FleetConfigError(f"tool must be one of {list(TOOL_NAMES)}, not {self.tool!r}")
        self.stateful = bool(config.get("stateful", False))
        self.images = bool(config.get("images", False))
        if self.stateful and self.tool != SESSION_TOOL:
            raise FleetConfigError(f"only the {SESSION_TOOL} tool keeps a session (stateful: true)")
        self.fleet = FleetConfig.from_mapping(config, ignore=TOOL_KEYS)
        self.calls = fleet_calls(self.fleet)
        self._instance_sessions: dict[str, str] = {}  # for callers that pass no agent_data
        if tool_schema is None:
            spec = self.calls.specs().get(self.tool)
            if spec is None:
                raise FleetConfigError(f"the server at {self.fleet.target} offers no {self.tool!r} tool to this caller")
            tool_schema = OpenAIFunctionToolSchema.model_validate(function_schema(spec))
        super().__init__(config, tool_schema)

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
                      ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """Runs the call; every failure is text for the model, never an exception."""
        agent_data = kwargs.get("agent_data")
        started = time.monotonic()
        response: pb.ExecuteResponse | None = None
        try:
            response, note = await self._run(instance_id, parameters, agent_data)
            text = note + answer_text(response, self.fleet.max_output_chars)
        except ToolServerError as exc:
            text = f"tool server error ({exc.code.name}): {exc}"
        stats = record(agent_data, response, started)
        images = pil_images(response) if self.images and response is not None else []
        if images:  # verl refuses image=None: the key is left out
            return ToolResponse(text=text, image=images), 0.0, stats
        return ToolResponse(text=text), 0.0, stats

    async def _run(self, instance_id: str, parameters: dict[str, Any], agent_data: Any
                   ) -> tuple[pb.ExecuteResponse, str]:
        if not self.stateful:
            return await self.calls.call(self.tool, parameters), ""
        session_id = await self._session(instance_id, agent_data)
        try:
            return await self.calls.call(self.tool, parameters, session_id), ""
        except NotFound:  # expired or its process died: the trajectory goes on in a fresh one
            self._forget(instance_id, agent_data)
            session_id = await self._session(instance_id, agent_data)
            note = "(the previous python session was lost; this call ran in a new one, without its variables)\n"
            return await self.calls.call(self.tool, parameters, session_id), note

    async def _session(self, instance_id: str, agent_data: Any) -> str:
        if agent_data is None:
            if instance_id not in self._instance_sessions:
                self._instance_sessions[instance_id] = await self.calls.open_session()
            return self._instance_sessions[instance_id]
        lock = _SESSION_LOCKS.setdefault(agent_data, asyncio.Lock())
        async with lock:  # a turn's parallel calls open one session, not one each
            session_id: str | None = agent_data.extra_fields.get(SESSION_KEY)
            if not session_id:
                session_id = await self.calls.open_session()
                agent_data.extra_fields[SESSION_KEY] = session_id
                opened = _OPENED.get()
                if opened is not None:
                    opened.append((self.calls, session_id))
            return session_id

    def _forget(self, instance_id: str, agent_data: Any) -> None:
        if agent_data is None:
            self._instance_sessions.pop(instance_id, None)
        else:
            agent_data.extra_fields.pop(SESSION_KEY, None)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """A trajectory's session outlives the call; only a session of a call without
        agent_data ends here."""
        session_id = self._instance_sessions.pop(instance_id, None)
        if session_id:
            await close_quietly(self.calls, session_id)


def record(agent_data: Any, response: pb.ExecuteResponse | None, started: float) -> dict[str, Any]:
    """Adds the call to the trajectory's counts in extra_fields; returns them."""
    fields = getattr(agent_data, "extra_fields", None)
    stats = CallStats(**fields.get(STATS_KEY, {})) if fields is not None else CallStats()
    stats.record(response, started)
    summary = stats.as_dict()
    if fields is not None:
        fields[STATS_KEY] = summary
    return summary


async def close_quietly(calls: FleetCalls, session_id: str) -> None:
    try:
        await calls.close_session(session_id)
    except ToolServerError:
        pass  # already closed by its idle timeout, or its replica is gone


@contextlib.asynccontextmanager
async def trajectory_sessions() -> AsyncIterator[list[tuple[FleetCalls, str]]]:
    """The python sessions opened inside (by tools of this task and the tasks it starts),
    all closed on the way out, whether the trajectory ended or raised."""
    opened: list[tuple[FleetCalls, str]] = []
    token = _OPENED.set(opened)
    try:
        yield opened
    finally:
        _OPENED.reset(token)
        await asyncio.gather(*(close_quietly(calls, session_id) for calls, session_id in opened))


@register("toolserver_tool_agent")
class ToolServerAgentLoop(ToolAgentLoop):
    """verl's tool agent loop that closes the python sessions its trajectory opened."""

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        async with trajectory_sessions():
            return await super().run(sampling_params, **kwargs)


FENCED = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
# verl's per-case result codes besides True (passed) and False (wrong answer)
SANDBOX_ERROR, RUNTIME_ERROR, TIMEOUT = -1, -2, -3
CALL_WRAPPER = """
import json as _json, sys as _sys
_args = [_json.loads(line) for line in _sys.stdin.read().splitlines() if line.strip()]
_target = globals().get({name!r}) or getattr(globals()["Solution"](), {name!r})
_result = _target(*_args)
print(_json.dumps(_result) if isinstance(_result, (dict, list, tuple, bool)) or _result is None else _result)
"""


def solution_code(completion: str) -> str | None:
    """The last fenced Python block of a completion, or None where it has none."""
    blocks = FENCED.findall(completion)
    return blocks[-1] if blocks else None


def case_result(response: pb.ExecuteResponse, expected: str) -> bool | int:
    if response.outcome == pb.OK:
        return same_output(response.stdout, expected)
    if response.outcome == pb.TIMEOUT:
        return TIMEOUT
    if response.outcome in (pb.ERROR, pb.MEMORY_LIMIT, pb.DENIED):
        return RUNTIME_ERROR
    return SANDBOX_ERROR


def test_cases(ground_truth: Any) -> dict[str, Any]:
    """verl's test-case shape ({"inputs": [...], "outputs": [...], "fn_name"?}), from a
    dict, a JSON string, or a dict holding either under "test_cases"."""
    cases = json.loads(ground_truth) if isinstance(ground_truth, str) else ground_truth
    if isinstance(cases, dict) and "test_cases" in cases:
        return test_cases(cases["test_cases"])
    if not isinstance(cases, dict) or len(cases.get("inputs", ())) != len(cases.get("outputs", ())):
        raise ValueError("test cases must be {'inputs': [...], 'outputs': [...]} of one length")
    return cases


async def case_results(code: str, cases: dict[str, Any], calls: FleetCalls, timeout_s: float = 10.0,
                       memory_mb: int = 0) -> list[bool | int]:
    """Each case's verl result code, all cases over one ExecuteStream."""
    if cases.get("fn_name"):
        code = code + "\n" + CALL_WRAPPER.format(name=str(cases["fn_name"]))
    requests = [python_request(code, stdin=str(stdin), timeout_ms=int(timeout_s * 1000), memory_mb=memory_mb,
                               request_id=str(index)) for index, stdin in enumerate(cases["inputs"])]
    if not requests:
        return []
    try:
        responses = await calls.run_many(requests)
    except ToolServerError:
        return [SANDBOX_ERROR] * len(requests)
    return [case_result(response, str(expected)) for response, expected in zip(responses, cases["outputs"])]


async def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                        extra_info: dict[str, Any] | None = None,
                        *, target: str = "127.0.0.1:50051", token: str | None = None, timeout_s: float = 10.0,
                        memory_mb: int = 0, **_: Any) -> dict[str, Any]:
    """verl's `custom_reward_function` for code with test cases: score 1.0 when every case
    passes, else 0.0; also the pass rate and how the first failing case ended (verl's code:
    0 wrong answer, -1 sandbox error or no code, -2 runtime error, -3 timeout; 1 when none
    failed). The keys of `reward_kwargs` in verl's config (target, token, timeout_s,
    memory_mb) reach it here."""
    code = solution_code(solution_str)
    cases = test_cases(ground_truth)
    total = len(cases["inputs"])
    if code is None or not total:
        return {"score": 0.0, "pass_rate": 0.0, "passed": 0, "total": total, "first_failure": SANDBOX_ERROR}
    results = await case_results(code, cases, fleet_calls(FleetConfig(target=target, token=token)),
                                 timeout_s, memory_mb)
    passed = sum(result is True for result in results)
    first_failure = next((int(result) for result in results if result is not True), 1)
    return {"score": float(passed == total), "pass_rate": passed / total, "passed": passed, "total": total,
            "first_failure": first_failure}
