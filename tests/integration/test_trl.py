"""The TRL adapter against a real server (real firejail, real sockets): a real GRPOTrainer
step on CPU through each route, `tools=` and `environment_factory=`, and the lifecycle of
the environment's Python session.

The policy is a tiny Qwen2 made here, with a byte-level tokenizer built here and the Qwen2.5
chat template TRL ships (TRL knows how to parse its tool calls). Its weights are set so that
it is a bigram model that always answers with one tool call: after the "\\n" that ends every
generation prompt (`<|im_start|>assistant\\n`) comes the tool call, one added token, then
`<|im_end|>`. Every turn is that call, so with `max_tool_calling_iterations=2` each rollout
runs the tool twice and its completion holds three turns of the model and two tool answers.
Nothing is downloaded.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

pytest.importorskip("trl", reason="trl is not installed")
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.chat_template_utils import qwen2_5_chat_template  # noqa: E402

from tests.chat_tokenizer import END, byte_chat_tokenizer  # noqa: E402
from tests.conftest import RunningServer  # noqa: E402
from tests.integration.test_metrics import scrape  # noqa: E402
from toolclient.client import NotFound  # noqa: E402
from toolclient.integrations.calls import FleetConfig, FleetConfigError, fleet_calls, function_schema  # noqa: E402
from toolclient.integrations.trl import PythonSessions, toolserver_tools  # noqa: E402

COUNTER = 'n = n + 1 if "n" in globals() else 1\nprint(n)'  # 1, 2, ... in a session; always 1 without one
TOOL_CALL = "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": COUNTER}}) + "\n</tool_call>"
PYTHON_OK = 'toolserver_calls_total{outcome="OK",tool="python"}'


@pytest.fixture(scope="module")
def trl_server(tmp_path_factory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("trl"), workers=2, sessions=2)
    yield running
    running.stop()


def settings(server: RunningServer) -> dict[str, Any]:
    return {"target": server.target, "timeout_s": 120}


@pytest.fixture
def loop(trl_server) -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop on a thread of its own, as TRL runs its tools."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    calls = fleet_calls(FleetConfig(**settings(trl_server)))
    asyncio.run_coroutine_threadsafe(calls.close(), loop).result()  # no stale client for a later loop of this id
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def sessions(server: RunningServer) -> PythonSessions:
    return PythonSessions(**settings(server))


def on(loop: asyncio.AbstractEventLoop, call: Coroutine[Any, Any, str]) -> str:
    return asyncio.run_coroutine_threadsafe(call, loop).result(timeout=120)


def open_sessions(server: RunningServer) -> float:
    return scrape(server)["toolserver_sessions_open"]


def test_a_session_opens_at_the_rollouts_first_call_and_serves_all_its_calls(trl_server, loop):
    environment = sessions(trl_server)()
    environment.reset(prompt=[{"role": "user", "content": "hi"}])
    assert environment.session_id == ""
    assert on(loop, environment.python("import sympy\nx = sympy.factorint(360)")) == "(no output)"
    opened = environment.session_id
    assert opened and open_sessions(trl_server) == 1
    assert on(loop, environment.python("x")) == "value: {2: 3, 3: 2, 5: 1}"
    assert environment.session_id == opened and environment.stats.calls == 2 and environment.stats.failed == 0
    environment.reset()
    assert environment.session_id == "" and not trl_server.session_is_open(opened) and open_sessions(trl_server) == 0


def test_the_next_rollout_gets_a_fresh_interpreter(trl_server, loop):
    environment = sessions(trl_server)()
    environment.reset()
    on(loop, environment.python("secret = 7"))
    first = environment.session_id
    environment.reset()
    assert "NameError" in on(loop, environment.python("secret"))
    assert environment.session_id not in ("", first) and environment.stats.errors == 1
    environment.reset()


def test_the_factory_closes_the_sessions_its_environments_hold(trl_server, loop):
    factory = sessions(trl_server)
    held = []
    for environment in (factory(), factory()):
        environment.reset()
        on(loop, environment.python("1"))
        held.append(environment.session_id)
    assert open_sessions(trl_server) == 2
    factory.close()
    assert all(not trl_server.session_is_open(session_id) for session_id in held) and open_sessions(trl_server) == 0
    factory.close()  # nothing left to close


def test_a_session_the_server_ended_is_replaced_at_the_next_call(trl_server, loop):
    environment = sessions(trl_server)()
    environment.reset()
    on(loop, environment.python("1"))
    with trl_server.client() as client:
        client.close_session(environment.session_id)
    with pytest.raises(NotFound):
        on(loop, environment.python("1"))
    assert environment.stats.failed == 1
    assert on(loop, environment.python("2 + 2")) == "value: 4" and environment.session_id
    environment.reset()
    assert open_sessions(trl_server) == 0


def test_the_tools_schemas_are_the_servers_arguments(trl_server):
    with trl_server.client() as client:
        specs = {spec.name: function_schema(spec)["function"]["parameters"]["properties"]
                 for spec in client.list_tools()}
    tools = toolserver_tools(target=trl_server.target) + [PythonSessions(target=trl_server.target)().python]
    for tool in tools:
        schema = get_json_schema(tool)["function"]
        assert schema["parameters"]["required"] == list(schema["parameters"]["properties"])
        for name, prop in schema["parameters"]["properties"].items():
            assert prop["type"] == specs[schema["name"]][name]["type"]
        texts = [schema["description"], schema["return"]["description"]]
        texts += [prop["description"] for prop in schema["parameters"]["properties"].values()]
        assert all(text and "\n" not in text for text in texts)  # one line each in the prompt


def test_tools_and_factory_pickle_for_a_rollout_process(trl_server):
    tools = pickle.loads(pickle.dumps(toolserver_tools(["python", "lean"], target=trl_server.target)))
    assert [tool.__name__ for tool in tools] == ["python", "lean"]
    assert pickle.loads(pickle.dumps(PythonSessions(target=trl_server.target)))().session_id == ""


def test_unknown_tools_and_settings_are_refused():
    with pytest.raises(FleetConfigError, match="shell"):
        toolserver_tools(["python", "shell"])
    with pytest.raises(FleetConfigError, match="adress"):
        PythonSessions(adress="127.0.0.1:1")


def scripted_policy() -> tuple[Qwen2ForCausalLM, PreTrainedTokenizerFast]:
    """The bigram model of the module's docstring and its tokenizer: 256 byte tokens, the
    chat's special tokens and TOOL_CALL as one token."""
    tokenizer = byte_chat_tokenizer(qwen2_5_chat_template, added=(TOOL_CALL,))
    newline, call, end = (tokenizer.convert_tokens_to_ids(token) for token in ("Ċ", TOOL_CALL, END))

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         tie_word_embeddings=False, eos_token_id=end, pad_token_id=tokenizer.pad_token_id)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:  # the layers add nothing: the last norm sees the token's embedding
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embedding, head = model.model.embed_tokens.weight, model.lm_head.weight
        head.zero_()
        for dim, (token, following) in enumerate([(newline, call), (call, end)]):
            embedding[token] = 0.0
            embedding[token, dim] = 1.0
            head[following, dim] = 50.0  # a margin no sampling at temperature 1 crosses
    model.generation_config.eos_token_id = end
    return model, tokenizer


def train_one_step(tmp_path, **route: Any) -> tuple[GRPOTrainer, dict[str, torch.Tensor], PreTrainedTokenizerFast]:
    """One GRPO step of two rollouts of one prompt; the batch its loss saw."""
    torch.set_num_threads(2)
    model, tokenizer = scripted_policy()
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=512, max_tool_calling_iterations=2, learning_rate=1e-3,
                      logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=0)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": "What is 6 * 7? Use python."}]]})

    def tool_turns(completions: list[list[dict[str, Any]]], **kwargs: Any) -> list[float]:
        return [float(sum(message["role"] == "tool" for message in completion)) for completion in completions]

    trainer = GRPOTrainer(model=model, reward_funcs=tool_turns, args=args, train_dataset=dataset,
                          processing_class=tokenizer, **route)
    batches = []
    compute_loss = trainer.compute_loss

    def seen(model: Any, inputs: dict[str, torch.Tensor], *args: Any, **kwargs: Any) -> torch.Tensor:
        batches.append(inputs)
        return compute_loss(model, inputs, *args, **kwargs)

    trainer.compute_loss = seen
    trainer.train()
    assert len(batches) == 1
    return trainer, batches[0], tokenizer


def split_by_mask(batch: dict[str, torch.Tensor], tokenizer: PreTrainedTokenizerFast) -> list[tuple[str, str]]:
    """Each rollout's completion as (what the loss trains on, what TRL masked as the tool's)."""
    rows = []
    for ids, completion, tool in zip(batch["completion_ids"], batch["completion_mask"], batch["tool_mask"],
                                     strict=True):
        trained = ids[(completion * tool).bool()]
        masked = ids[(completion * (1 - tool)).bool()]
        rows.append((tokenizer.decode(trained), tokenizer.decode(masked)))
    return rows


def assert_tool_answers_masked(trainer: GRPOTrainer, batch: dict[str, torch.Tensor],
                               tokenizer: PreTrainedTokenizerFast, answers: list[str]) -> None:
    for trained, masked in split_by_mask(batch, tokenizer):
        assert trained == (TOOL_CALL + END) * 3  # the model's three turns, nothing of the tool's
        responses = [part.split("\n</tool_response>")[0] for part in masked.split("<tool_response>\n")[1:]]
        assert responses == answers
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == 2.0 and logged["tools/failure_frequency"] == 0.0


def test_a_grpo_step_runs_the_stateless_tool_and_masks_its_answers(trl_server, tmp_path):
    before = scrape(trl_server).get(PYTHON_OK, 0)
    trainer, batch, tokenizer = train_one_step(tmp_path, tools=toolserver_tools(target=trl_server.target))
    assert scrape(trl_server)[PYTHON_OK] - before == 4  # two rollouts, two calls each
    assert_tool_answers_masked(trainer, batch, tokenizer, ["stdout:\n1\n", "stdout:\n1\n"])  # nothing persists


def test_a_grpo_step_keeps_one_session_per_rollout(trl_server, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    factory = sessions(trl_server)
    before = scrape(trl_server).get(PYTHON_OK, 0)
    trainer, batch, tokenizer = train_one_step(tmp_path, environment_factory=factory)
    assert scrape(trl_server)[PYTHON_OK] - before == 4
    assert_tool_answers_masked(trainer, batch, tokenizer, ["stdout:\n1\n", "stdout:\n2\n"])  # the session's state
    held = [environment.session_id for environment in factory.environments]
    assert len(held) == 2 and all(held) and open_sessions(trl_server) == 2
    assert [environment.stats.calls for environment in factory.environments] == [2, 2]
    factory.close()
    assert open_sessions(trl_server) == 0
