"""The SkyRL-Gym adapter against a real server: its tool groups, and the environment made
by `skyrl_gym.make` as SkyRL's generator makes it (env_config, extras with reward_spec and
max_turns), stepped on worker threads as the generator steps it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import RunningServer
from toolclient.integrations.calls import FleetConfig, FleetConfigError

skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed (extra skyrl)")
from toolclient.integrations import skyrl  # noqa: E402


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("skyrl"), workers=2, sessions=2)
    skyrl.register(target=running.target)
    yield running
    skyrl_gym.envs.deregister(skyrl.ENV_ID)
    running.stop()


@pytest.fixture(scope="module")
def config(fleet) -> FleetConfig:
    return FleetConfig(target=fleet.target)


def make_env(ground_truth: str = "42", max_turns: int = 5, **env_config) -> skyrl.ToolServerEnv:
    extras = {"reward_spec": {"method": "rule", "ground_truth": ground_truth}, "max_turns": max_turns}
    return skyrl_gym.make(skyrl.ENV_ID, env_config=env_config, extras=extras)


def hermes(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_tool_groups_answer_text_and_python_is_stateless_without_a_session(config):
    python = skyrl.ToolServerPythonToolGroup(config)
    assert python.get_tool_names() == ["python"] and python.get_tool_to_group_mapping() == {
        "python": "ToolServerPythonToolGroup"}
    assert python.execute_tool("python", "print(6 * 7)\nx = 1\nx + 1") == "stdout:\n42\n\nvalue: 2"
    assert python.python("x").startswith("outcome: ERROR: NameError")
    assert python.python("print(input()[::-1])", "abc\n") == "stdout:\ncba\n"
    assert python.stats.calls == 3 and python.stats.errors == 1 and python.session_id == ""

    search = skyrl.ToolServerSearchToolGroup(config)
    assert '"id": "sympy.factorint"' in search.execute_tool("search", "prime factorization of an integer", 5)
    assert search.search("   ").startswith("the tool server refused the call: INVALID_ARGUMENT")

    lean = skyrl.ToolServerLeanToolGroup(config)
    answer = lean.lean("theorem t : 1 + 1 = 2 := rfl")
    assert answer.startswith(("the tool server refused the call: FAILED_PRECONDITION", "complete: True"))


def test_an_episode_keeps_one_session_and_close_ends_it(fleet):
    env = make_env()
    assert isinstance(env, skyrl.ToolServerEnv) and env.spec.id == skyrl.ENV_ID
    prompt = [{"role": "user", "content": "What is 6 * 7? Use python."}]
    assert env.init(prompt) == (prompt, {})

    first = env.step("I will compute it.\n" + hermes("python", code="x = 6 * 7\nx"))
    assert first["done"] is False and first["reward"] == 0.0
    assert first["observations"] == [{"role": "user", "content": "<tool_response>\nvalue: 42\n</tool_response>"}]
    assert first["metadata"] == {"tool_calls": ["python"]}
    session_id = env.python.session_id
    assert session_id and fleet.session_is_open(session_id)

    second = env.step("Check: <tool><python>print(x + 0)</python></tool>")
    assert second["observations"][0]["content"] == "<tool_response>\nstdout:\n42\n\n</tool_response>"
    assert env.python.session_id == session_id
    assert env._execute_tool("ToolServerPythonToolGroup", "python", ["print(x)"]) == "stdout:\n42\n"  # SkyRL's own path

    final = env.step("The answer is <answer>42</answer>.")
    assert final == {"observations": [], "reward": 1.0, "done": True, "metadata": {"tool_calls": []}}
    metrics = env.get_metrics()
    assert metrics["turns"] == 3 and metrics["calls"] == 3 and metrics["errors"] == 0

    env.close()
    assert env.python.session_id == "" and not fleet.session_is_open(session_id)
    env.close()  # a second close does nothing


def test_errors_come_back_as_tool_text_in_call_order(fleet):
    env = make_env()
    action = "\n".join([hermes("python", code="1 / 0"), "<tool_call>{not json}</tool_call>",
                        hermes("browser", url="http://example.com"), hermes("search", query="  "),
                        hermes("python", code="print('still here')")])
    step = env.step(action)
    blocks = step["observations"][0]["content"].split("\n</tool_response>")
    assert len(blocks) == 6 and blocks[-1] == ""
    assert blocks[0].startswith("<tool_response>\noutcome: ERROR: ZeroDivisionError")
    assert blocks[1].startswith("\n<tool_response>\ncould not read the tool call: Expecting property name")
    assert blocks[2] == ("\n<tool_response>\nno tool named 'browser'; the tools are bash, cpp, lean, program, "
                         "python, search")
    assert "the tool server refused the call: INVALID_ARGUMENT" in blocks[3]
    assert blocks[4] == "\n<tool_response>\nstdout:\nstill here\n"
    assert step["done"] is False and step["metadata"]["tool_calls"] == ["python", "", "browser", "search", "python"]
    assert env.get_metrics()["errors"] == 1 and env.get_metrics()["failed"] == 1
    env.close()


def test_the_last_turn_ends_the_episode_without_running_its_calls(fleet):
    env = make_env(max_turns=1)
    step = env.step(hermes("python", code="open('/tmp/x', 'w')") + "<answer>41</answer>")
    assert step["done"] is True and step["observations"] == [] and step["reward"] == 0.0
    assert env.get_metrics()["calls"] == 0 and env.python.session_id == ""
    env.close()


def test_rewards_match_search_r1_normalization():
    assert skyrl.answer_matches("<answer>The Eiffel Tower!</answer>", "eiffel tower") == 1.0
    assert skyrl.answer_matches("<answer>1</answer> then <answer>2</answer>", {"target": ["2", "two"]}) == 1.0
    assert skyrl.answer_matches("no answer tags: 42", "42") == 0.0
    assert skyrl.answer_matches("<answer>42</answer>", None) == 0.0


def test_episodes_on_worker_threads_keep_sessions_apart_and_give_them_back(fleet):
    def episode(value: int) -> str:
        env = make_env(ground_truth=str(value))
        env.step(hermes("python", code=f"kept = {value}"))
        text = env.step(hermes("python", code="kept"))["observations"][0]["content"]
        env.close()
        return text

    with ThreadPoolExecutor(4) as workers:  # the server holds 2 sessions: only closed ones free a place
        answers = list(workers.map(episode, [1, 2]))
        answers += list(workers.map(episode, [3, 4]))
    assert answers == [f"<tool_response>\nvalue: {n}\n</tool_response>" for n in (1, 2, 3, 4)]


def test_env_config_overrides_the_registered_fleet(fleet):
    env = make_env(target="127.0.0.1:1", timeout_s=2)
    assert env.step(hermes("python", code="1"))["observations"][0]["content"].startswith(
        "<tool_response>\nthe tool server refused the call: UNAVAILABLE")
    env.close()
    with pytest.raises(FleetConfigError, match="unknown tool server settings"):
        make_env(targets="somewhere")
