"""One Python session per rollout at the size of a real generation batch: 64 rollouts
against a server whose sessions are capped at 64, through each engine's own batch path,
TRL's GRPOTrainer (`environment_factory=PythonSessions`) and verl's agent loop worker
(`toolserver_tool_agent` with a `stateful: true` python tool).

Each rollout's model calls the python tool twice with the same counter, so its answers
are "1" then "2" only if its two calls ran in one session that no other rollout touched.
What is checked for each engine: 64 distinct session ids, all 64 open at once, as many
opened on the server (its `toolserver_sessions_opened` counter, read as a difference from
before the batch so that the server's self-test session does not count), all of them
closed by the adapter (`_closed` grows as much, none evicted by the idle timeout), none
left open and none still answering a call. verl's loop closes a trajectory's session when
the trajectory ends; TRL tells an environment nothing then, so PythonSessions closes a
session at its environment's next reset or at `factory.close()` after training, which is
when this test checks.

The server is made for the batch: one warm worker, no slim or scientific workers, 64
session slots, so 66 slot users in all (of the 128 CI may have), and only 16 sessions
made ahead, so that most of the batch's are made while it opens them. Models and
tokenizers are made here (nothing is downloaded): TRL's is the scripted tiny Qwen2 of
test_trl.py, verl's the scripted LLM client of test_verl_agent_loop.py. About 40 s in all
on 2 cores (server start 5 s, TRL 20 s, verl 10 s), so not marked slow.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunningServer
from tests.integration.test_metrics import scrape
from toolclient.client import NotFound

ROLLOUTS = 64
COUNTER = 'n = n + 1 if "n" in globals() else 1\nprint(n)'  # 1, 2, ... in one session
SESSION_METRICS = ("open", "opened", "closed", "evicted")


@pytest.fixture(scope="module")
def batch_server(tmp_path_factory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("batch-sessions"), workers=1, slim_workers=0,
                            scientific_workers=0, sessions=ROLLOUTS, config="[sessions]\nready = 16\n")
    yield running
    running.stop()


def session_counts(server: RunningServer) -> dict[str, float]:
    samples = scrape(server)
    return {name: samples[f"toolserver_sessions_{name}"] for name in SESSION_METRICS}


def assert_one_session_per_rollout_all_closed(server: RunningServer, before: dict[str, float],
                                              session_ids: list[str]) -> None:
    after = session_counts(server)
    assert len(session_ids) == ROLLOUTS and all(session_ids)
    assert len(set(session_ids)) == ROLLOUTS, "two rollouts shared a session"
    assert after["opened"] - before["opened"] == ROLLOUTS  # no rollout opened a second one
    assert after["closed"] - before["closed"] == ROLLOUTS  # ... and each was closed
    assert after["evicted"] == before["evicted"]  # by the adapter, not the idle timeout
    assert after["open"] == 0
    assert not any(still_open(server, session_ids))


def still_open(server: RunningServer, session_ids: list[str]) -> list[str]:
    """Those of session_ids in which a call still runs (NOT_FOUND once closed)."""
    found = []
    with server.client() as client:
        for session_id in session_ids:
            try:
                client.run_python("1", session_id=session_id)
            except NotFound:
                continue
            found.append(session_id)
    return found


# ---- TRL


def test_a_grpo_step_of_64_rollouts_gets_64_sessions_and_closes_them(batch_server, tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="trl is not installed")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tests.integration.test_trl import scripted_policy, split_by_mask
    from toolclient.integrations.trl import PythonSessions

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    torch.set_num_threads(2)
    before = session_counts(batch_server)
    assert before["open"] == 0
    model, tokenizer = scripted_policy()
    prompts, generations = 8, ROLLOUTS // 8
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=ROLLOUTS, num_generations=generations,
                      max_steps=1, max_completion_length=512, max_tool_calling_iterations=2, learning_rate=1e-3,
                      logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=0)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"What is {i} * 7? Use python."}]
                                            for i in range(prompts)]})
    factory = PythonSessions(target=batch_server.target, timeout_s=120)

    def no_reward(completions: list, **kwargs: Any) -> list[float]:
        return [0.0] * len(completions)

    trainer = GRPOTrainer(model=model, reward_funcs=no_reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer, environment_factory=factory)
    batches = []
    compute_loss = trainer.compute_loss

    def seen(model: Any, inputs: dict, *more: Any, **kwargs: Any):
        batches.append(inputs)
        return compute_loss(model, inputs, *more, **kwargs)

    trainer.compute_loss = seen
    try:
        trainer.train()
        session_ids = [env.session_id for env in factory.environments]
        # TRL tells an environment nothing when its rollout ends: each session stays open
        # until its environment's next reset, or the factory's close once training is over.
        assert session_counts(batch_server)["open"] == ROLLOUTS
    finally:
        factory.close()  # whatever failed, the next test starts with no session open
    assert all(env.session_id == "" for env in factory.environments)
    assert_one_session_per_rollout_all_closed(batch_server, before, session_ids)
    assert len(batches) == 1 and len(batches[0]["completion_ids"]) == ROLLOUTS
    for _, masked in split_by_mask(batches[0], tokenizer):  # each rollout's own counter: its own session
        answers = [part.split("\n</tool_response>")[0] for part in masked.split("<tool_response>\n")[1:]]
        assert answers == ["stdout:\n1\n", "stdout:\n2\n"]
    assert len(factory.environments) == ROLLOUTS  # TRL's pool: one environment per rollout of the batch
    assert [(env.stats.calls, env.stats.failed) for env in factory.environments] == [(2, 0)] * ROLLOUTS


# ---- verl


def verl_worker(server: RunningServer, tmp_path: Path):
    """verl's AgentLoopWorker as a rollout worker makes it, over a model directory (a tiny
    Qwen2 config and the byte-level tokenizer) and the example configs' keys."""
    import verl.trainer.config
    from omegaconf import OmegaConf
    from transformers import Qwen2Config
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from tests.chat_tokenizer import END, byte_chat_tokenizer

    qwen2_5_chat_template = pytest.importorskip("trl.chat_template_utils").qwen2_5_chat_template
    model_dir = tmp_path / "model"
    tokenizer = byte_chat_tokenizer(qwen2_5_chat_template)
    tokenizer.save_pretrained(model_dir)
    Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, eos_token_id=tokenizer.convert_tokens_to_ids(END),
                pad_token_id=tokenizer.pad_token_id, architectures=["Qwen2ForCausalLM"]).save_pretrained(model_dir)
    tools = tmp_path / "tools.yaml"
    tools.write_text(textwrap.dedent(f"""\
        tools:
          - class_name: toolclient.integrations.verl.ToolServerTool
            config: {{type: native, target: "{server.target}", tool: python, stateful: true, timeout_s: 120}}
        """))
    loops = tmp_path / "agent_loop.yaml"
    loops.write_text("- name: toolserver_tool_agent\n  _target_: toolclient.integrations.verl.ToolServerAgentLoop\n")
    config = OmegaConf.load(Path(verl.trainer.config.__file__).parent / "_generated_ppo_trainer.yaml")
    config.actor_rollout_ref.model.path = str(model_dir)
    rollout = config.actor_rollout_ref.rollout
    rollout.name = "vllm"  # only named: the scripted client below stands for the engine
    rollout.prompt_length, rollout.response_length = 2048, 2048
    rollout.multi_turn.update(enable=True, format="hermes", max_assistant_turns=4, max_tool_response_length=2000,
                              tool_config_path=str(tools))
    rollout.agent.update(agent_loop_config_path=str(loops), default_agent_loop="toolserver_tool_agent")
    return AgentLoopWorker(config, ScriptedLLM(tokenizer, server))


class ScriptedLLM:
    """verl's LLM server client for every trajectory at once: a turn after fewer than two
    tool answers calls the counter; the next one waits until every trajectory of the batch
    has reached it (so all their sessions are open at once, counted in open_at_once), then
    ends the trajectory."""

    def __init__(self, tokenizer, server: RunningServer) -> None:
        from tests.chat_tokenizer import END

        self.tokenizer = tokenizer
        self.server = server
        call = "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": COUNTER}}) + "\n</tool_call>"
        self.call, self.done = call + END, "Done." + END
        self.all_called = asyncio.Barrier(ROLLOUTS)
        self.open_at_once = 0.0

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        answers = self.tokenizer.decode(prompt_ids).count("<tool_response>")
        if answers >= 2:
            if await asyncio.wait_for(self.all_called.wait(), 120) == 0:
                self.open_at_once = session_counts(self.server)["open"]
        text = self.call if answers < 2 else self.done
        return TokenOutput(token_ids=self.tokenizer.encode(text, add_special_tokens=False))


async def test_a_verl_batch_of_64_trajectories_gets_64_sessions_and_closes_them(batch_server, tmp_path):
    pytest.importorskip("verl.experimental.agent_loop", reason="the verl extra: pip install -e '.[verl]'")
    import numpy as np
    from verl import DataProto

    from toolclient.integrations.verl import SESSION_KEY, STATS_KEY

    before = session_counts(batch_server)
    assert before["open"] == 0
    worker = verl_worker(batch_server, tmp_path)
    tokenizer, model = worker.tokenizer, worker.llm_client
    prompts = [[{"role": "user", "content": f"What is {i} * 7? Use python."}] for i in range(8)]
    raw = np.empty(ROLLOUTS, dtype=object)
    raw[:] = [prompt for prompt in prompts for _ in range(ROLLOUTS // len(prompts))]  # n = 8 per prompt
    batch = DataProto.from_dict(non_tensors={"raw_prompt": raw,
                                             "index": np.repeat(np.arange(len(prompts)), ROLLOUTS // len(prompts))})
    output = await worker.generate_sequences(batch)  # every trajectory at once, as verl runs them
    assert len(output) == ROLLOUTS and model.open_at_once == ROLLOUTS  # all 64 held at once
    for responses, mask in zip(output.batch["responses"], output.batch["response_mask"], strict=True):
        answers = tokenizer.decode(responses[(mask == 0) & (responses != tokenizer.pad_token_id)])
        assert answers.count("stdout:\n1\n") == 1 and answers.count("stdout:\n2\n") == 1, answers
    stats = list(output.non_tensor_batch[STATS_KEY])
    assert all(s["calls"] == 2 and s["outcomes"] == {"OK": 2} for s in stats)
    assert_one_session_per_rollout_all_closed(batch_server, before, list(output.non_tensor_batch[SESSION_KEY]))
