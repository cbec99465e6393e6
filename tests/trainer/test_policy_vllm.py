"""The vLLM backend: its import guard and pure helpers everywhere, with plain-Python
stand-ins shaped like vLLM's outputs; a real engine only on a GPU machine (`gpu` marker)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

from trainer import policy_vllm as pv
from trainer.formats import ToRLFormat
from trainer.tokenizer import ByteTokenizer

ROOT = Path(__file__).resolve().parents[2]
TOK = ByteTokenizer()
NEVER = lambda ids: False


# --- stand-ins for vLLM's objects (not vLLM's classes; only the fields the module reads) ---

@dataclass
class StandInLogprob:
    """Shaped like `vllm.sequence.Logprob`."""
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class StandInCompletion:
    """Shaped like `vllm.outputs.CompletionOutput`."""
    token_ids: list[int]
    logprobs: list[dict[int, Any]] | None
    finish_reason: str | None = "length"
    stop_reason: int | str | None = None


def stand_in_completion(ids: list[int], *, finish_reason: str = "length", stop_reason: int | str | None = None,
                        first_lp: float = -1.0) -> StandInCompletion:
    """Logprobs first_lp, first_lp - 1, ... so a test can see which survived a cut."""
    entries = [{tok: StandInLogprob(first_lp - k, rank=1)} for k, tok in enumerate(ids)]
    return StandInCompletion(list(ids), entries, finish_reason, stop_reason)


@dataclass
class StandInEngine:
    """An `EngineCall` that answers from a script, one list of completions per round, and
    records what it was sent."""
    script: list[list[StandInCompletion]]
    sent: list[tuple[list[list[int]], list[int], int]] = field(default_factory=list)

    def __call__(self, prompts, budgets, round_):
        self.sent.append((prompts, budgets, round_))
        return self.script[round_]


# --- import guard ---

def test_module_imports_without_vllm_and_does_not_import_it():
    code = ("import sys; sys.modules['vllm'] = None\n"
            "import trainer.policy_vllm as m\n"
            "assert m.VLLMPolicy and m.load_vllm_policy\n"
            "del sys.modules['vllm']\n"
            "assert 'vllm' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_constructing_without_vllm_raises_import_error_naming_the_gpu_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)   # `import vllm` now raises ImportError
    with pytest.raises(ImportError) as info:
        pv.VLLMPolicy("some/model", torch.nn.Linear(2, 2), eos_id=0, pad_id=0)
    assert "pip install -e '.[gpu]'" in str(info.value)
    assert "CUDA GPU" in str(info.value)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[gpu\]'"):
        pv.load_vllm_policy("some/model", stop_strings=("\n```",), temperature=1.0, seed=0)


# --- engine arguments ---

def test_engine_kwargs_ask_for_tempered_logprobs_and_neutral_defaults():
    cfg = pv.VLLMEngineConfig(gpu_memory_utilization=0.3, dtype="float16", max_model_len=4096,
                              extra={"max_num_seqs": 64})
    kw = pv.engine_kwargs("/m", cfg, seed=7, temperature=0.7,
                          engine_fields={"logprobs_mode", "generation_config", "model"})
    assert kw["model"] == kw["tokenizer"] == "/m"
    assert kw["logprobs_mode"] == "processed_logprobs"
    assert kw["generation_config"] == "vllm"
    assert (kw["gpu_memory_utilization"], kw["dtype"], kw["max_model_len"], kw["seed"]) == (0.3, "float16", 4096, 7)
    assert kw["enable_prefix_caching"] is True and kw["tensor_parallel_size"] == 1
    assert kw["max_num_seqs"] == 64
    assert "max_model_len" not in pv.engine_kwargs("/m", pv.VLLMEngineConfig(), seed=0, temperature=1.0,
                                                   engine_fields={"logprobs_mode"})


def test_engine_kwargs_without_logprobs_mode_only_at_temperature_one():
    kw = pv.engine_kwargs("/m", pv.VLLMEngineConfig(), seed=0, temperature=1.0, engine_fields=set())
    assert "logprobs_mode" not in kw and "generation_config" not in kw
    with pytest.raises(RuntimeError, match="logprobs_mode"):
        pv.engine_kwargs("/m", pv.VLLMEngineConfig(), seed=0, temperature=0.7, engine_fields=set())


# --- sampling arguments ---

def test_sampling_kwargs_one_row_each_with_its_budget_and_seed():
    rows = pv.sampling_kwargs([5, 9], temperature=0.8, stop_strings=("</tool_call>", ""), eos_id=2,
                              seeds=[11, None])
    assert [r["max_tokens"] for r in rows] == [5, 9]
    for r in rows:
        assert r["temperature"] == 0.8 and r["n"] == 1
        assert r["stop"] == ["</tool_call>"]            # empty strings dropped
        assert r["include_stop_str_in_output"] is True
        assert r["logprobs"] == 0                        # the sampled token's logprob only
        assert r["stop_token_ids"] == [2]
        assert not {"top_p", "top_k", "min_p"} & r.keys()
    assert rows[0]["seed"] == 11 and "seed" not in rows[1]
    rows[0]["stop"].append("x")
    assert rows[1]["stop"] == ["</tool_call>"]           # rows do not share a list
    with pytest.raises(ValueError):
        pv.sampling_kwargs([0], temperature=1.0, stop_strings=(), eos_id=None, seeds=[None])


def test_row_seeds_are_reproducible_and_distinct():
    seeds = {pv.row_seed(0, call, rnd, row) for call in range(3) for rnd in range(3) for row in range(16)}
    assert len(seeds) == 3 * 3 * 16
    assert pv.row_seed(1, 2, 0, 3) == pv.row_seed(1, 2, 0, 3) != pv.row_seed(2, 2, 0, 3)
    assert all(0 <= s < 2 ** 56 for s in seeds)


# --- logprobs ---

def test_sampled_logprobs_read_the_sampled_token_of_each_entry():
    entries = [{5: StandInLogprob(-0.5), 9: StandInLogprob(-0.1)}, {7: StandInLogprob(-2.0)}, {3: -0.25}]
    assert pv.sampled_logprobs([5, 7, 3], entries) == [-0.5, -2.0, -0.25]
    assert pv.sampled_logprobs([], []) == []


def test_sampled_logprobs_refuse_missing_entries():
    with pytest.raises(RuntimeError, match="no logprobs"):
        pv.sampled_logprobs([1], None)
    with pytest.raises(RuntimeError, match="entries"):
        pv.sampled_logprobs([1, 2], [{1: StandInLogprob(-1.0)}])
    with pytest.raises(RuntimeError, match="sampled token"):
        pv.sampled_logprobs([1], [{4: StandInLogprob(-1.0)}])


# --- the cut at the stop test ---

def test_first_stop_finds_the_shortest_prefix_that_ends_the_turn():
    after3 = lambda ids: len(ids) >= 3
    assert pv.first_stop([1, 2, 3, 4, 5], after3, eos_id=None) == 3
    assert pv.first_stop([1, 9, 3, 4], after3, eos_id=9) == 2
    assert pv.first_stop([1, 2], after3, eos_id=9) is None
    seen = []
    pv.first_stop([1, 2, 3, 4], lambda ids: seen.append(len(ids)) or False, eos_id=None, start=2)
    assert seen == [3, 4]                                # prefixes up to `start` are not retested


def test_rows_are_cut_where_the_stop_test_first_holds():
    fmt = ToRLFormat()
    stop = fmt.stopper(TOK)
    call = TOK.encode("```python\nprint(1)\n```")
    ids = call + TOK.encode("\nmore text")               # the engine overshot our test
    engine = StandInEngine([[stand_in_completion(ids, finish_reason="length")]])
    (gen,) = pv.generate_rounds(engine, [TOK.encode("Q:")], stop, [100], eos_id=TOK.eos_id, max_len=1000)
    assert gen.tokens == call
    assert gen.logprobs == [-1.0 - k for k in range(len(call))]
    assert len(engine.sent) == 1


def test_a_stop_string_the_test_rejects_is_continued_in_the_next_round():
    fmt = ToRLFormat()
    stop = fmt.stopper(TOK)
    first = TOK.encode("```text\nhi\n```")               # vLLM stops on "\n```"; no python call closed
    second = TOK.encode("\n```python\nprint(2)\n```")
    context = TOK.encode("Q:")
    engine = StandInEngine([
        [stand_in_completion(first, finish_reason="stop", stop_reason="\n```", first_lp=-1.0)],
        [stand_in_completion(second, finish_reason="stop", stop_reason="\n```", first_lp=-100.0)],
    ])
    (gen,) = pv.generate_rounds(engine, [context], stop, [200], eos_id=TOK.eos_id, max_len=1000)
    assert gen.tokens == first + second
    assert gen.logprobs == [-1.0 - k for k in range(len(first))] + [-100.0 - k for k in range(len(second))]
    (prompts0, budgets0, r0), (prompts1, budgets1, r1) = engine.sent
    assert (prompts0, budgets0, r0) == ([context], [200], 0)
    assert (prompts1, budgets1, r1) == ([context + first], [200 - len(first)], 1)


def test_eos_length_and_stop_tokens_end_a_row_without_another_round():
    eos = TOK.eos_id
    engine = StandInEngine([[
        stand_in_completion([65, eos], finish_reason="stop", stop_reason=eos),
        stand_in_completion([66, 67, 68], finish_reason="length"),
        stand_in_completion([69, 70], finish_reason="stop", stop_reason=999),   # a stop token not ours
    ]])
    gens = pv.generate_rounds(engine, [[1], [2], [3]], NEVER, [10, 3, 10], eos_id=eos, max_len=100)
    assert [g.tokens for g in gens] == [[65, eos], [66, 67, 68], [69, 70]]
    assert len(engine.sent) == 1


def test_budgets_skip_empty_rows_clamp_to_max_len_and_bound_the_engine():
    # the stand-in answers 5 tokens to budgets of 4: the budget holds all the same
    engine = StandInEngine([[stand_in_completion([5, 6, 7, 8, 9]) for _ in range(2)]])
    gens = pv.generate_rounds(engine, [[1], [1, 2, 3, 4, 5, 6], [1, 2]], NEVER, [4, 0, 50],
                              eos_id=None, max_len=6)
    (prompts, budgets, _), = engine.sent
    assert prompts == [[1], [1, 2]] and budgets == [4, 4]    # row 1: no budget; row 2: 6 - 2 left
    assert gens[1].tokens == [] and gens[1].logprobs == []
    assert [len(g.tokens) for g in gens] == [4, 0, 4] and [len(g.logprobs) for g in gens] == [4, 0, 4]
    assert pv.generate_rounds(StandInEngine([]), [[1]], NEVER, [0], eos_id=None, max_len=6) == [pv.Generation([], [])]


def test_an_engine_that_answers_too_few_rows_is_an_error():
    engine = StandInEngine([[]])
    with pytest.raises(RuntimeError, match="answered 0 of 1"):
        pv.generate_rounds(engine, [[1]], NEVER, [3], eos_id=None, max_len=10)


# --- a tiny Hugging Face checkpoint (also what the GPU test serves with vLLM) ---

def make_tiny_llama(directory: Path) -> None:
    """A 2-layer Llama over a byte-level tokenizer (ids 0..255 bytes, 256 <eos>), with a
    large-ish output layer so temperature visibly changes its logprobs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    vocab["<eos>"] = 256
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>")
    tokenizer.save_pretrained(directory)
    config = LlamaConfig(vocab_size=257, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=False, bos_token_id=256, eos_token_id=256)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        model.lm_head.weight.normal_(0.0, 0.15)
    model.save_pretrained(directory)


def test_the_tiny_checkpoint_loads_with_the_hf_backend(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    policy_hf = pytest.importorskip("trainer.policy_hf")
    make_tiny_llama(tmp_path)
    policy, tokenizer = policy_hf.load_hf_policy(tmp_path, device="cpu")
    assert tokenizer.eos_id == 256
    text = "x = 1\n```python\nprint(x)\n```"
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.encode("ab") == tokenizer.encode("a") + tokenizer.encode("b")   # one id per byte
    logprobs, mask = policy.sequence_logprobs(policy.model, [tokenizer.encode("hello")], 0.7)
    assert logprobs.shape == mask.shape == (1, 4)


# --- the policy's wiring, over a stand-in `vllm` module (CPU) ---

class StandInVLLMModel:
    """Stands in for the engine's model: records what `load_weights` was given."""

    def __init__(self) -> None:
        self.loads: list[list[str]] = []

    def load_weights(self, weights):
        names = [name for name, _ in weights]
        self.loads.append(names)
        return set(names)


class StandInLLM:
    """Stands in for `vllm.LLM`: records its arguments and calls, answers every prompt
    with the token ids 65, 66 (logprobs -0.5, -1.5), finished on length."""

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs
        self.model = StandInVLLMModel()
        self.calls: list[str] = []
        self.generated: list[tuple[list, list]] = []
        max_model_len = kwargs.get("max_model_len", 2048)
        self.llm_engine = type("Engine", (), {"model_config": type("MC", (), {"max_model_len": max_model_len})})

    def apply_model(self, fn):
        self.calls.append("apply_model")
        return [fn(self.model)]

    def reset_prefix_cache(self):
        self.calls.append("reset_prefix_cache")
        return True

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True):
        self.calls.append("generate")
        self.generated.append((prompts, sampling_params))
        completion = StandInCompletion([65, 66], [{65: StandInLogprob(-0.5)}, {66: StandInLogprob(-1.5)}])
        return [type("RequestOutput", (), {"outputs": [completion]}) for _ in prompts]


@dataclass
class StandInSamplingParams:
    kwargs: dict

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs


def stand_in_vllm_modules():
    import types
    from dataclasses import make_dataclass

    vllm = types.ModuleType("vllm")
    vllm.LLM = StandInLLM
    vllm.SamplingParams = StandInSamplingParams
    vllm.EngineArgs = make_dataclass("EngineArgs", [("model", str), ("logprobs_mode", str), ("generation_config", str)])
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = lambda **kw: dict(kw)
    vllm.inputs = inputs
    return {"vllm": vllm, "vllm.inputs": inputs}


def test_policy_wiring_over_a_stand_in_vllm(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    policy_hf = pytest.importorskip("trainer.policy_hf")
    for name, module in stand_in_vllm_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    make_tiny_llama(tmp_path)
    hf, tok = policy_hf.load_hf_policy(tmp_path, device="cpu")
    engine = pv.VLLMEngineConfig(gpu_memory_utilization=0.25, max_model_len=300)
    policy = pv.VLLMPolicy(tmp_path, hf.model, eos_id=tok.eos_id, pad_id=tok.pad_id, stop_strings=("\n```",),
                           temperature=0.7, seed=3, engine=engine, device="cpu")
    llm = policy.llm
    import os
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert llm.kwargs["logprobs_mode"] == "processed_logprobs" and llm.kwargs["seed"] == 3
    assert llm.kwargs["gpu_memory_utilization"] == 0.25 and llm.kwargs["model"] == str(tmp_path)
    assert policy.max_len == 300 and policy.model is hf.model
    # built: the in-process check, then a first weight copy and a prefix-cache reset
    assert llm.calls == ["apply_model", "apply_model", "reset_prefix_cache"]
    assert llm.model.loads == [list(hf.model.state_dict())]
    assert "model.layers.0.self_attn.q_proj.weight" in llm.model.loads[0]
    policy.weights_updated()
    assert llm.calls[-2:] == ["apply_model", "reset_prefix_cache"] and len(llm.model.loads) == 2

    gens = policy.generate([[1, 2], [1, 2], [3]], NEVER, [5, 5, 0])
    assert [g.tokens for g in gens] == [[65, 66], [65, 66], []]
    assert gens[0].logprobs == [-0.5, -1.5]
    (prompts, params), = llm.generated
    assert prompts == [{"prompt_token_ids": [1, 2]}, {"prompt_token_ids": [1, 2]}]
    assert [p.kwargs["max_tokens"] for p in params] == [5, 5]
    assert all(p.kwargs["stop"] == ["\n```"] and p.kwargs["temperature"] == 0.7 for p in params)
    assert params[0].kwargs["seed"] != params[1].kwargs["seed"]
    policy.generate([[1, 2]], NEVER, [5])
    assert llm.generated[1][1][0].kwargs["seed"] not in {p.kwargs["seed"] for p in params}   # a new call, new seeds

    seqs = [[1, 2, 3], [4, 5]]
    got, mask = policy.sequence_logprobs(policy.model, seqs, 0.7)
    want, want_mask = hf.sequence_logprobs(hf.model, seqs, 0.7)
    assert torch.allclose(got, want) and torch.equal(mask, want_mask)
    policy.close()
    assert not hasattr(policy, "llm")


# --- the real engine (GPU machine with the gpu extra) ---

@pytest.mark.gpu
def test_vllm_generates_scores_and_syncs_weights(tmp_path):
    pytest.importorskip("vllm", reason="needs the gpu extra: pip install -e '.[gpu]'")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    make_tiny_llama(tmp_path)
    temperature = 0.7
    policy, tok = pv.load_vllm_policy(tmp_path, stop_strings=ToRLFormat.stop_strings, temperature=temperature,
                                      seed=0, gpu_memory_utilization=0.2, max_model_len=256)
    try:
        assert policy.max_len == 256
        assert next(policy.model.parameters()).is_cuda
        contexts = [tok.encode("hello"), tok.encode("hello"), tok.encode("a longer prompt")]
        budgets = [24, 24, 8]
        gens = policy.generate(contexts, NEVER, budgets)
        for gen, budget in zip(gens, budgets):
            assert 1 <= len(gen.tokens) <= budget and len(gen.logprobs) == len(gen.tokens)
            assert len(gen.tokens) == budget or gen.tokens[-1] == tok.eos_id
        assert gens[0].tokens != gens[1].tokens          # one prompt twice: two seeds, two samples
        # the engine's logprobs are those of softmax(logits / T) under the trained copy
        errors = {}
        for t in (temperature, 1.0):
            diffs = []
            for context, gen in zip(contexts, gens):
                with torch.no_grad():
                    lp, _ = policy.sequence_logprobs(policy.model, [context + gen.tokens], t)
                diffs += (lp[0, len(context) - 1:].float().cpu() - torch.tensor(gen.logprobs)).abs().tolist()
            errors[t] = sum(diffs) / len(diffs)
        assert errors[temperature] < 0.1, errors
        assert errors[temperature] < errors[1.0], errors
        # the stop test cuts
        (gen,) = policy.generate(contexts[:1], lambda ids: len(ids) >= 3, [24])
        assert len(gen.tokens) <= 3
        # weight sync: a zero final norm makes every next token equally likely
        with torch.no_grad():
            policy.model.model.norm.weight.zero_()
        policy.weights_updated()
        gens = policy.generate(contexts, NEVER, [8, 8, 8])
        uniform = -math.log(257)
        assert all(abs(lp - uniform) < 1e-2 for gen in gens for lp in gen.logprobs), gens
    finally:
        policy.close()
