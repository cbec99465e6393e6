from __future__ import annotations

import torch

from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy, default_model, token_logprobs
from trainer.tokenizer import ByteTokenizer

TOK = ByteTokenizer()
NEVER = lambda ids: False


def small() -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer(TinyConfig(d_model=32, n_layers=2, n_heads=2, max_len=128))


def test_sampled_logprobs_match_a_full_forward_pass():
    model = small()
    policy = TorchPolicy(model, TOK.eos_id, temperature=0.7, seed=1)
    contexts = [TOK.encode("hello"), TOK.encode("a much longer prompt here")]
    gens = policy.generate(contexts, NEVER, [12, 7])
    assert [len(g.tokens) for g in gens] == [12, 7]
    for context, gen in zip(contexts, gens):
        full, _ = token_logprobs(model, [context + gen.tokens], temperature=0.7)
        recomputed = full[0, len(context) - 1:]
        assert torch.allclose(recomputed, torch.tensor(gen.logprobs), atol=1e-4)


def test_batched_padding_does_not_change_logprobs():
    model = small()
    a, b = TOK.encode("xy"), TOK.encode("a longer one")
    alone, _ = token_logprobs(model, [a])
    padded, mask = token_logprobs(model, [a, b])
    width = padded.shape[1]
    assert torch.allclose(padded[0, width - (len(a) - 1):], alone[0], atol=1e-5)
    assert int(mask[0].sum()) == len(a) - 1


def test_stop_and_eos_end_generation():
    model = small()
    with torch.no_grad():
        model.head.bias = None
        model.head.weight.zero_()
    stop_after_3 = lambda ids: len(ids) >= 3
    policy = TorchPolicy(model, TOK.eos_id, seed=0)
    (gen,) = policy.generate([TOK.encode("p")], stop_after_3, [50])
    assert len(gen.tokens) == 3
    with torch.no_grad():
        model.ln.weight.zero_()
        model.ln.bias.fill_(1.0)
        model.head.weight[TOK.eos_id] = 100.0
    (gen,) = policy.generate([TOK.encode("p")], NEVER, [50])
    assert gen.tokens == [TOK.eos_id]


def test_default_model_is_seeded_and_uses_set_threads():
    a, b = default_model(TOK.vocab_size, seed=5), default_model(TOK.vocab_size, seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    TorchPolicy(a, TOK.eos_id, threads=1)
    assert torch.get_num_threads() == 1
