"""The verl adapter against a real server: tools loaded through verl's own
`initialize_tools_from_config`, executed with real `AgentData`, its function tools through
verl's registry, and the code reward loaded the way verl loads a custom reward function."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import textwrap

import pytest

from tests.conftest import RunningServer, free_port
from toolclient.client import ToolClient

pytest.importorskip("verl.experimental.agent_loop", reason="the verl extra: pip install -e '.[verl]'")
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.tool_agent_loop import AgentData  # noqa: E402
from verl.tools.function_tool import load_function_tools_from_path  # noqa: E402
from verl.tools.tool_registry import initialize_tools_from_config  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402

from toolclient.integrations import verl as adapter  # noqa: E402

# The file verl's function_tool_path names; verl loads it itself (importing it here first
# would register its tools twice).
FUNCTION_TOOLS = importlib.util.find_spec("toolclient.integrations.verl_function_tools").origin


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("verl-tools"), workers=2, sessions=3)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def target(server) -> str:
    return server.target


@pytest.fixture
def tools(target, tmp_path):
    config = tmp_path / "tools.yaml"
    config.write_text(textwrap.dedent(f"""\
        tools:
          - class_name: toolclient.integrations.verl.ToolServerTool
            config: {{type: native, target: "{target}", tool: python, stateful: true, max_output_chars: 300}}
          - class_name: toolclient.integrations.verl.ToolServerTool
            config: {{type: native, target: "{target}", tool: search}}
          - class_name: toolclient.integrations.verl.ToolServerTool
            config: {{type: native, target: "{target}", tool: python}}
            tool_schema:
              type: function
              function:
                name: code_interpreter
                description: Run Python; nothing persists.
                parameters: {{type: object, properties: {{code: {{type: string, description: source}}}}, required: [code]}}
        """))
    return {tool.name: tool for tool in initialize_tools_from_config(str(config))}


def agent_data() -> AgentData:
    return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id="r", tools_kwargs={})


async def call(tool, parameters: dict, data: AgentData | None = None) -> str:
    """One call the way verl's ToolAgentLoop makes it: create, execute, release."""
    instance_id, _ = await tool.create(create_kwargs={})
    try:
        response, _, _ = await tool.execute(instance_id, parameters, agent_data=data)
    finally:
        await tool.release(instance_id)
    return response.text


def test_the_schemas_come_from_the_server_in_verls_flat_shape(tools):
    python = tools["python"].tool_schema.function
    assert "code" in python.parameters.properties and "session_id" not in python.parameters.properties
    assert python.parameters.required == ["code"] and "sandbox" in python.description
    assert "query" in tools["search"].tool_schema.function.parameters.properties
    assert tools["code_interpreter"].tool == "python"


async def test_a_trajectory_keeps_one_session_across_calls_and_closes_it(server, tools):
    data = agent_data()
    async with adapter.trajectory_sessions() as opened:
        assert "outcome" not in await call(tools["python"], {"code": "x = 20"}, data)
        turn = await asyncio.gather(*(call(tools["python"], {"code": "x + 22"}, data) for _ in range(3)))
        assert turn == ["value: 42"] * 3  # parallel calls of one turn share the one session
        session_id = data.extra_fields[adapter.SESSION_KEY]
        assert len(opened) == 1 and server.session_is_open(session_id)
    assert not server.session_is_open(session_id)
    assert data.extra_fields[adapter.STATS_KEY]["calls"] == 4
    assert data.extra_fields[adapter.STATS_KEY]["outcomes"] == {"OK": 4}


async def test_two_trajectories_do_not_share_variables(tools):
    first, second = agent_data(), agent_data()
    async with adapter.trajectory_sessions():
        await call(tools["python"], {"code": "secret = 1"}, first)
        text = await call(tools["python"], {"code": "secret"}, second)
    assert "NameError" in text and first.extra_fields[adapter.SESSION_KEY] != second.extra_fields[adapter.SESSION_KEY]


async def test_a_lost_session_is_replaced_and_said(tools, target):
    data = agent_data()
    async with adapter.trajectory_sessions():
        await call(tools["python"], {"code": "x = 1"}, data)
        with ToolClient(target) as client:
            client.close_session(data.extra_fields[adapter.SESSION_KEY])
        text = await call(tools["python"], {"code": "print('again')"}, data)
    assert text.startswith("(the previous python session was lost") and "again" in text


async def test_errors_timeouts_and_truncation_are_text_for_the_model(tools):
    data = agent_data()
    async with adapter.trajectory_sessions():
        error = await call(tools["python"], {"code": "1 / 0"}, data)
        long = await call(tools["python"], {"code": "print('y' * 5000)"}, data)
    assert error.startswith("outcome: ERROR: ZeroDivisionError")
    assert len(long) <= 300 and "truncated" in long
    stateless = await call(tools["code_interpreter"], {"code": "import time\ntime.sleep(30)"})
    assert "outcome: TIMEOUT" in stateless
    assert (await call(tools["code_interpreter"], {})).startswith("tool server error (INVALID_ARGUMENT)")
    stats = data.extra_fields[adapter.STATS_KEY]
    assert stats["errors"] == 1 and stats["calls"] == 2 and stats["latency_s"] > 0


async def test_search_runs_statelessly(tools):
    text = await call(tools["search"], {"query": "list comprehension"}, agent_data())
    assert text.startswith("[") and '"title"' in text and "outcome" not in text


async def test_an_unreachable_server_is_tool_text_not_an_exception():
    tool = adapter.ToolServerTool({"type": "native", "target": f"127.0.0.1:{free_port()}", "timeout_s": 2},
                                  tools_schema_stub())
    assert (await call(tool, {"code": "1"}, agent_data())).startswith("tool server error (UNAVAILABLE)")


def tools_schema_stub():
    from verl.tools.schemas import OpenAIFunctionToolSchema

    return OpenAIFunctionToolSchema.model_validate(
        {"type": "function", "function": {"name": "python", "description": "Run Python.",
                                          "parameters": {"type": "object", "properties": {}, "required": []}}})


def test_bad_configs_are_refused(target):
    with pytest.raises(ValueError, match="unknown tool server settings"):
        adapter.ToolServerTool({"type": "native", "target": target, "targte": "x"}, tools_schema_stub())
    with pytest.raises(ValueError, match="only the python tool"):
        adapter.ToolServerTool({"type": "native", "target": target, "tool": "search", "stateful": True})


async def test_function_tools_load_through_verls_registry(target, monkeypatch):
    monkeypatch.setenv("TOOLSERVER_TARGET", target)
    tools = {tool.name: tool for tool in load_function_tools_from_path(FUNCTION_TOOLS)}
    assert set(tools) == {"python", "search", "lean"}
    assert await tools["python"].call({"code": "print(6 * 7)"}) == "stdout:\n42\n"


SQUARE = {"inputs": ["3\n", "4\n", "12\n"], "outputs": ["9\n", "16\n", "144\n"]}


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\nDone."


@pytest.fixture
def reward_fn(target):
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": adapter.__file__, "name": "compute_score", "reward_kwargs": {"target": target, "timeout_s": 2}}}})
    return get_custom_reward_fn(config)


@pytest.mark.parametrize("completion, score, first_failure", [
    (fenced("n = int(input())\nprint(n * n)"), 1.0, 1),
    (fenced("n = int(input())\nprint(n + n)"), 0.0, 0),
    (fenced("raise ValueError('no')"), 0.0, -2),
    (fenced("while True:\n    pass"), 0.0, -3),
    ("no code at all", 0.0, -1),
])
async def test_the_reward_runs_every_case_in_one_stream(reward_fn, completion, score, first_failure):
    result = await reward_fn(data_source="codecontests", solution_str=completion, ground_truth=json.dumps(SQUARE))
    assert result["score"] == score and result["first_failure"] == first_failure and result["total"] == 3


async def test_the_reward_scores_a_call_based_problem_and_partial_passes(reward_fn):
    cases = {"fn_name": "add", "inputs": ["1\n2", "[1]\n[2]", "0\n0"], "outputs": ["3", "[1, 2]", "1"]}
    result = await reward_fn(data_source="leetcode", solution_str=fenced("def add(a, b):\n    return a + b"),
                             ground_truth={"test_cases": cases})
    assert result["passed"] == 2 and result["pass_rate"] == pytest.approx(2 / 3) and result["score"] == 0.0


async def test_a_figure_reaches_a_vision_models_loop_as_a_pil_image_where_asked(target):
    seeing = adapter.ToolServerTool({"type": "native", "target": target, "stateful": True, "images": True})
    reading = adapter.ToolServerTool({"type": "native", "target": target, "stateful": True})
    figure = ("import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2), dpi=100)\nplt.plot([1, 3, 2])\n"
              "plt.show()\n")
    answers = []
    for tool in (seeing, reading):
        async with adapter.trajectory_sessions():
            instance_id, _ = await tool.create(create_kwargs={})
            response, _, _ = await tool.execute(instance_id, {"code": figure}, agent_data=agent_data())
            await tool.release(instance_id)
        answers.append(response)
    seen, read = answers
    (image,) = seen.image
    assert image.mode == "RGB" and 200 <= image.size[0] <= 300 and 130 <= image.size[1] <= 200
    assert "display: image/png" in seen.text
    assert read.image is None and "display: image/png" in read.text
