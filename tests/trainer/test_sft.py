from __future__ import annotations

import pytest
import torch

from trainer.formats import get_format
from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy
from trainer.sft import learning_rate_at, supervised_train
from trainer.synthetic import Trace, problems, tool_trace
from trainer.tokenizer import ByteTokenizer

TOK = ByteTokenizer()


def test_schedule_warms_up_then_decays_to_zero():
    assert learning_rate_at(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert learning_rate_at(9, 100, 1.0, 10) == pytest.approx(1.0)
    assert learning_rate_at(55, 100, 1.0, 10) == pytest.approx(0.5)
    assert learning_rate_at(100, 100, 1.0, 10) == pytest.approx(0.0)


def test_loss_falls_and_observations_are_not_learned():
    torch.manual_seed(0)
    fmt = get_format("torl", instructions=False)
    traces = [tool_trace(p, fmt, TOK, 32) for p in problems(4, seed=0)]
    policy = TorchPolicy(TinyTransformer(TinyConfig(d_model=32, n_layers=1, n_heads=2, max_len=128)), TOK.eos_id)
    losses = supervised_train(policy, traces, steps=60, batch_size=4, learning_rate=3e-3, warmup=5)
    assert len(losses) == 60 and losses[-1] < 0.6 * losses[0]

    # a trace whose only mask-1 token is EOS: the loss is that token's alone
    prompt, tokens = TOK.encode("p"), TOK.encode("observed") + [TOK.eos_id]
    only_eos = Trace(prompt, tokens, [0] * (len(tokens) - 1) + [1])
    model = policy.model
    with torch.no_grad():
        logprobs, _ = policy.sequence_logprobs(model, [prompt + tokens], 1.0)
    expected = -float(logprobs[0, -1])
    first = supervised_train(policy, [only_eos], steps=1, batch_size=1, learning_rate=1e-9, warmup=1)[0]
    assert first == pytest.approx(expected, rel=1e-4)
