"""A few RL steps of the torch policy against a real tool server."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

from tests.conftest import free_port
from toolclient.client import AsyncToolClient
from trainer.config import ConfigError, TrainerConfig, help_text
from trainer.formats import ToRLFormat
from trainer.learner import Learner, loss_inputs
from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy
from trainer.rewards import AnswerChecker, RewardContext, task_from_row
from trainer.rollout import Rollout
from trainer.tokenizer import ByteTokenizer
from trainer.tool_runner import ToolRunner

TOK = ByteTokenizer()
CFG = TrainerConfig(group_size=2, roc_oversample=2, prompts_per_step=2, max_completion_tokens=48,
                    max_observation_tokens=32, learning_rate=1e-3, kl_coef=0.01, seed=3)
TASKS = [task_from_row({"problem": "1+1", "answer": "2"}),
         task_from_row({"problem": "f(x)=x+1", "tests": ["assert f(1) == 2"]})]


def test_every_field_has_help_and_defaults_validate():
    TrainerConfig().validate()
    assert all(len(text) > 10 for text in help_text().values())
    assert "DAPO" in help_text()["clip_high"] and "rStar2" in help_text()["roc_oversample"]
    assert TrainerConfig().rollouts_per_prompt == 16


@pytest.mark.parametrize("change,field", [({"format": "xml"}, "format"), ({"group_size": 0}, "group_size"),
                                          ({"clip_low": 1.5}, "clip_low"), ({"kl_coef": -1.0}, "kl_coef"),
                                          ({"max_observation_tokens": 2000}, "max_observation_tokens")])
def test_invalid_config_names_the_field(change, field):
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(TrainerConfig(), **change).validate()


async def test_rl_steps_against_the_server(trainer_server):
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(d_model=32, n_layers=1, n_heads=2, max_len=512))
    before = [p.detach().clone() for p in model.parameters()]
    checker = AnswerChecker(timeout_s=30)
    try:
        async with AsyncToolClient(trainer_server.target) as client:
            runner = ToolRunner(client)
            ctx = RewardContext(ToRLFormat(), checker, runner)
            learner = Learner(CFG, torch_policy(model, CFG), TOK, ToRLFormat(), runner, ctx)
            # logprobs recomputed for the loss line up with the sampler's: ratio 1 before an update
            rollouts = await learner.loop.run([TOK.encode("x")] * 2)
            logprobs, old, mask = loss_inputs(learner.policy, model, rollouts, CFG.temperature)
            assert mask.sum() > 0
            assert torch.allclose(logprobs[mask.bool()], old[mask.bool()], atol=1e-4)
            for _ in range(2):
                metrics = await learner.step(TASKS)
                assert metrics["roc/sampled"] == 8 and metrics["roc/kept"] == 4
                assert 0.0 <= metrics["reward_mean"] <= 1.0 and metrics["reward/unscored"] == 0
                assert "train/policy_loss" in metrics and "train/kl" in metrics
    finally:
        checker.close()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def torch_policy(model: TinyTransformer, cfg: TrainerConfig) -> TorchPolicy:
    return TorchPolicy(model, TOK.eos_id, temperature=cfg.temperature, seed=cfg.seed)


def imitate(model: TinyTransformer, prompt: list[int], completion: list[int], steps: int = 150) -> None:
    """Supervised steps on one completion, so the policy reliably calls the tool."""
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    ids = torch.tensor([prompt + completion])
    targets = torch.tensor(completion).unsqueeze(-1)
    for _ in range(steps):
        logits, _ = model(ids, torch.ones_like(ids))
        logprobs = torch.log_softmax(logits[0, len(prompt) - 1:-1], dim=-1)
        loss = -logprobs.gather(-1, targets).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


async def test_rl_steps_with_tool_calls_and_rewards(trainer_server):
    fmt = ToRLFormat()
    task = task_from_row({"problem": "What is 1+1?", "answer": "2"})
    prompt = TOK.encode(fmt.prompt(task.problem))
    completion = (TOK.encode("```python\nprint(1+1)\n```") + fmt.observation_ids("2", TOK, 32)
                  + TOK.encode("\\boxed{2}") + [TOK.eos_id])
    torch.manual_seed(0)
    model = TinyTransformer(TinyConfig(d_model=64, n_layers=2, n_heads=2, max_len=512))
    imitate(model, prompt, completion)
    cfg = dataclasses.replace(CFG, kl_coef=0.0, temperature=0.5, max_completion_tokens=64, learning_rate=1e-4)
    checker = AnswerChecker(timeout_s=30)
    try:
        async with AsyncToolClient(trainer_server.target) as client:
            runner = ToolRunner(client)
            learner = Learner(cfg, torch_policy(model, cfg), TOK, fmt, runner, RewardContext(fmt, checker, runner))
            metrics = [await learner.step([task]) for _ in range(2)]
    finally:
        checker.close()
    assert all(m["tool_calls_per_rollout"] > 0.5 for m in metrics)
    assert all(m["accuracy"] > 0.5 for m in metrics)
    assert runner.stats.outcomes.get("OK", 0) >= 4 and runner.stats.infra_errors == 0


async def test_micro_batches_give_the_same_update_as_one_batch():
    torch.manual_seed(0)
    base = TinyTransformer(TinyConfig(d_model=16, n_layers=1, n_heads=2, max_len=64))
    gen = torch.Generator().manual_seed(1)
    rollouts = []
    for n in (5, 9, 3, 7):
        tokens = torch.randint(0, 256, (n,), generator=gen).tolist()
        mask = [1] * (n - 2) + [0, 1]
        rollouts.append(Rollout(TOK.encode("pp"), tokens=tokens, mask=mask, logprobs=[-5.0] * n))
    advantages = torch.tensor([1.0, -0.5, 0.25, -1.0])
    results = []
    async with AsyncToolClient(f"127.0.0.1:{free_port()}") as client:
        for size in (1, 3, 8):
            model = copy.deepcopy(base)
            cfg = dataclasses.replace(CFG, micro_batch_size=size, kl_coef=0.1, learning_rate=1e-2)
            runner = ToolRunner(client)
            learner = Learner(cfg, torch_policy(model, cfg), TOK, ToRLFormat(), runner, RewardContext(ToRLFormat(), None, runner))
            metrics = learner.update(rollouts, advantages)
            results.append((metrics, [p.detach().clone() for p in model.parameters()]))
    (m1, p1), *others = results
    for metrics, params in others:
        assert metrics["train/policy_loss"] == pytest.approx(m1["train/policy_loss"], rel=1e-5)
        assert metrics["train/kl"] == pytest.approx(m1["train/kl"], rel=1e-5)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(p1, params))
