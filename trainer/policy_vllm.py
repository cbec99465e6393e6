"""vLLM generation with a Hugging Face copy to train: `VLLMPolicy` implements
`policy.TrainablePolicy` on one CUDA GPU (the `gpu` extra: vllm==0.32.0, torch 2.13.0).

Two copies of one model share the GPU. A vLLM engine (`vllm.LLM`) samples: each
`generate` is one batched `LLM.generate` over token ids (`TokensPrompt`), one
`SamplingParams` per row (its token budget and its own seed), the tool format's stop
strings (kept in the output), `logprobs=0` so the sampled token's logprob comes back,
and the engine option `logprobs_mode="processed_logprobs"` so that logprob is taken
under softmax(logits / temperature), the distribution sampled from, as in
`policy_torch` and `policy_hf`. A Hugging Face causal LM (`model`) is what the
optimiser updates: `sequence_logprobs` is `policy_hf.HFPolicy.sequence_logprobs`, and
`weights_updated` copies the model's current `state_dict` into the engine's model
(`LLM.apply_model` calling vLLM's `model.load_weights`), then empties the engine's
prefix cache, whose KV was computed with the old weights.

The rollout loop's stop test is the contract: vLLM stops on strings, the loop's test
decides. Each returned row is cut at the first prefix the test (or EOS) ends, and a row
that vLLM stopped on a string the test does not accept is continued in a next round
(prefix caching makes the re-sent context cheap). Ids and logprobs come back, never
text. The engine runs in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0` is set
before it starts): the weight copy hands it the training model's CUDA tensors directly.

It does not shard over several GPUs, sleep or offload the engine between phases,
quantise, serve over HTTP, or load GGUF files (a transformers checkpoint directory
only). vllm is imported only when a policy is built, so this module imports anywhere;
it is exercised only on a GPU machine (the `gpu`-marked test), while the pure helpers
below are tested everywhere with stand-ins for vLLM's outputs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Protocol, Sequence

import torch

from trainer.rollout import Generation, StopFn

if TYPE_CHECKING:
    from trainer.policy_hf import CausalLM, HFTokenizer

GPU_EXTRA_HINT = ("the 'vllm' backend needs vLLM and a CUDA GPU: install the gpu extra with "
                  "`pip install -e '.[gpu]'` (vllm==0.32.0, torch 2.13.0) on a machine with an NVIDIA GPU")
LOGPROBS_MODE = "processed_logprobs"   # logprobs after temperature (and any top-k/top-p, unused here)


def require_vllm() -> Any:
    """The vllm module, or an ImportError that names the gpu extra and the GPU it needs."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"vllm is not importable ({exc}); {GPU_EXTRA_HINT}") from exc
    return vllm


def require_cuda() -> None:
    if not torch.cuda.is_available():
        raise RuntimeError(f"no CUDA device is visible to torch; {GPU_EXTRA_HINT}")


@dataclass(frozen=True)
class VLLMEngineConfig:
    """How the engine is built. The engine is seeded with the policy's seed."""

    gpu_memory_utilization: float = 0.5   # the engine's share of the GPU; training uses the rest
    dtype: str = "bfloat16"               # of the engine's copy; the trained copy keeps its own dtype
    enable_prefix_caching: bool = True    # multi-turn rollouts re-send a growing prefix
    max_model_len: int | None = None      # None: the model's own context length
    enforce_eager: bool = False           # True skips CUDA graph capture (faster start, slower decode)
    seed_requests: bool = True            # each row its own derived seed: reproducible, slower sampling
    extra: Mapping[str, Any] = field(default_factory=dict)  # further `vllm.LLM` keyword arguments


# ---------------------------------------------------------------------------------------
# Pure helpers (no vllm): the engine arguments, the per-row sampling arguments, vLLM's
# logprob entries as floats, the cut at the stop test, and the generation rounds.
# ---------------------------------------------------------------------------------------


def engine_kwargs(model_dir: str | Path, cfg: VLLMEngineConfig, *, seed: int, temperature: float,
                  engine_fields: Collection[str]) -> dict[str, Any]:
    """Keyword arguments of `vllm.LLM`. `engine_fields` are the names `vllm.EngineArgs`
    takes: `logprobs_mode` is set where the version has it (and required unless the
    temperature is 1, where raw and processed logprobs are the same distribution), and
    `generation_config="vllm"` keeps the checkpoint's sampling defaults (top_p, top_k...)
    out of the distribution the logprobs are taken under."""
    kwargs: dict[str, Any] = {
        "model": str(model_dir),
        "tokenizer": str(model_dir),
        "dtype": cfg.dtype,
        "gpu_memory_utilization": cfg.gpu_memory_utilization,
        "enable_prefix_caching": cfg.enable_prefix_caching,
        "enforce_eager": cfg.enforce_eager,
        "seed": seed,
        "tensor_parallel_size": 1,
    }
    if cfg.max_model_len is not None:
        kwargs["max_model_len"] = cfg.max_model_len
    if "logprobs_mode" in engine_fields:
        kwargs["logprobs_mode"] = LOGPROBS_MODE
    elif temperature != 1.0:
        raise RuntimeError(f"this vLLM has no `logprobs_mode` engine option, so its logprobs ignore the "
                           f"temperature ({temperature}); use temperature 1.0 or vllm==0.32.0")
    if "generation_config" in engine_fields:
        kwargs["generation_config"] = "vllm"
    kwargs.update(cfg.extra)
    return kwargs


def row_seed(seed: int, call: int, round_: int, row: int) -> int:
    """A distinct, reproducible 56-bit seed per (policy seed, generate call, round, row):
    a GRPO group sends one prompt G times, and one seed for all would sample it G times alike."""
    digest = hashlib.blake2b(f"{seed}:{call}:{round_}:{row}".encode(), digest_size=7).digest()
    return int.from_bytes(digest, "big")


def sampling_kwargs(budgets: Sequence[int], *, temperature: float, stop_strings: Sequence[str],
                    eos_id: int | None, seeds: Sequence[int | None]) -> list[dict[str, Any]]:
    """Keyword arguments of one `vllm.SamplingParams` per row. top_p, top_k, min_p and
    penalties are left at vLLM's neutral defaults: the sampled distribution is
    softmax(logits / temperature), the one `sequence_logprobs` scores."""
    stops = [s for s in stop_strings if s]
    rows = []
    for budget, seed in zip(budgets, seeds, strict=True):
        if budget < 1:
            raise ValueError(f"a row sent to the engine needs a budget of at least 1 token, not {budget}")
        kw: dict[str, Any] = {
            "n": 1,
            "temperature": temperature,
            "max_tokens": int(budget),
            "stop": list(stops),
            "include_stop_str_in_output": True,
            "logprobs": 0,   # 0: only the sampled token's logprob
        }
        if eos_id is not None:
            kw["stop_token_ids"] = [eos_id]
        if seed is not None:
            kw["seed"] = seed
        rows.append(kw)
    return rows


def sampled_logprobs(token_ids: Sequence[int], logprobs: Sequence[Mapping[int, Any]] | None) -> list[float]:
    """The sampled token's logprob at each position, from vLLM's per-position entries
    (a mapping of token id to a `Logprob` with a `.logprob`, or to a float)."""
    if logprobs is None:
        raise RuntimeError("vLLM returned no logprobs: SamplingParams.logprobs must be set (0 for the sampled token)")
    if len(logprobs) < len(token_ids):
        raise RuntimeError(f"vLLM returned {len(logprobs)} logprob entries for {len(token_ids)} tokens")
    out = []
    for pos, token in enumerate(token_ids):
        entry = logprobs[pos]
        if token not in entry:
            raise RuntimeError(f"vLLM's logprobs at position {pos} lack the sampled token {token}")
        value = entry[token]
        out.append(float(getattr(value, "logprob", value)))
    return out


def first_stop(ids: Sequence[int], stop: StopFn, eos_id: int | None, start: int = 0) -> int | None:
    """The length k > start of the shortest prefix ids[:k] that ends the turn (its last
    token is EOS, or stop(ids[:k]) is true), or None. Prefixes up to `start` are taken
    as already tested."""
    for k in range(start + 1, len(ids) + 1):
        if (eos_id is not None and ids[k - 1] == eos_id) or stop(ids[:k]):
            return k
    return None


class Completion(Protocol):
    """What one row of `LLM.generate` gives back (`RequestOutput.outputs[0]`, a
    `vllm.outputs.CompletionOutput`): the fields this module reads."""

    token_ids: Sequence[int]
    logprobs: Sequence[Mapping[int, Any]] | None
    finish_reason: str | None      # "stop", "length", "abort"
    stop_reason: int | str | None  # the stop string or stop token id that finished it


# prompts (context plus what is generated so far), token budgets, round -> one completion per prompt
EngineCall = Callable[[list[list[int]], list[int], int], Sequence[Completion]]


def stopped_on_string(completion: Completion) -> bool:
    return completion.finish_reason == "stop" and isinstance(completion.stop_reason, str)


def generate_rounds(engine: EngineCall, contexts: Sequence[Sequence[int]], stop: StopFn,
                    max_new_tokens: Sequence[int], *, eos_id: int | None, max_len: int) -> list[Generation]:
    """`rollout.Policy.generate` over an engine that stops on strings: each round sends
    every live row in one call; a row ends at EOS, at the first prefix `stop` accepts,
    or at its budget (`max_new_tokens`, and the room left under `max_len`). A row the
    engine stopped on a string that `stop` does not accept is continued next round."""
    out = [Generation([], []) for _ in contexts]
    budget = [max(0, min(int(n), max_len - len(c))) for c, n in zip(contexts, max_new_tokens, strict=True)]
    live = [i for i, b in enumerate(budget) if b > 0]
    round_ = 0
    while live:
        completions = engine([list(contexts[i]) + out[i].tokens for i in live],
                             [budget[i] - len(out[i].tokens) for i in live], round_)
        if len(completions) != len(live):
            raise RuntimeError(f"the engine answered {len(completions)} of {len(live)} prompts")
        again = []
        for i, completion in zip(live, completions):
            gen = out[i]
            ids = [int(t) for t in completion.token_ids]
            start = len(gen.tokens)
            gen.tokens.extend(ids)
            gen.logprobs.extend(sampled_logprobs(ids, completion.logprobs))
            end = first_stop(gen.tokens, stop, eos_id, start)
            if end is None and len(gen.tokens) >= budget[i]:
                end = budget[i]
            if end is not None:
                del gen.tokens[end:], gen.logprobs[end:]
            elif ids and stopped_on_string(completion):
                again.append(i)
        live = again
        round_ += 1
    return out


# ---------------------------------------------------------------------------------------
# The policy (needs vllm and a CUDA GPU)
# ---------------------------------------------------------------------------------------


class VLLMPolicy:
    """`policy.TrainablePolicy`: samples in a vLLM engine built from `model_dir`, trains
    `model` (the Hugging Face causal LM of the same checkpoint, moved to `device`), and
    copies `model`'s weights into the engine at construction and on `weights_updated`."""

    def __init__(self, model_dir: str | Path, model: CausalLM, *, eos_id: int, pad_id: int,
                 stop_strings: Sequence[str] = (), temperature: float = 1.0, seed: int = 0,
                 engine: VLLMEngineConfig = VLLMEngineConfig(), device: str = "cuda") -> None:
        vllm = require_vllm()
        require_cuda()
        from vllm.inputs import TokensPrompt

        from trainer.policy_hf import HFPolicy, on_device

        self._sampling_params = vllm.SamplingParams
        self._tokens_prompt = TokensPrompt
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.stop_strings = tuple(stop_strings)
        self.temperature = temperature
        self.seed = seed
        self.engine_config = engine
        self._calls = 0
        # In-process engine core: `weights_updated` passes CUDA tensors to the worker by reference.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        fields = {f.name for f in dataclasses.fields(vllm.EngineArgs)}
        self.llm = vllm.LLM(**engine_kwargs(model_dir, engine, seed=seed, temperature=temperature,
                                            engine_fields=fields))
        self._check_in_process()
        self.model = on_device(model, device)
        self._hf = HFPolicy(self.model, eos_id, pad_id, temperature=temperature,
                            threads=torch.get_num_threads(), seed=seed)
        self.max_len = min(int(self.llm.llm_engine.model_config.max_model_len), self._hf.max_len)
        self.weights_updated()

    def _check_in_process(self) -> None:
        try:
            pids = self.llm.apply_model(lambda _model: os.getpid())
        except Exception as exc:  # a multiprocess engine cannot take the callable
            raise RuntimeError("the vLLM engine does not run in this process (is VLLM_ENABLE_V1_MULTIPROCESSING "
                               "read before this policy set it to 0?); the weight copy needs it in-process") from exc
        if any(pid != os.getpid() for pid in pids):
            raise RuntimeError(f"the vLLM engine's worker runs in process {pids}, not this one ({os.getpid()}): "
                               "the weight copy needs it in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0)")

    def sequence_logprobs(self, model: torch.nn.Module, seqs: Sequence[Sequence[int]], temperature: float,
                          last: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return self._hf.sequence_logprobs(model, seqs, temperature, last)

    @torch.no_grad()
    def weights_updated(self) -> None:
        """Copies the trained model's current weights into the engine's model (vLLM's
        `load_weights` maps Hugging Face names onto its fused layers and casts to the
        engine's dtype), then drops the prefix cache computed with the old weights."""
        weights = list(self.model.state_dict().items())   # detached views, no copy
        loaded = self.llm.apply_model(lambda vllm_model: vllm_model.load_weights(weights))
        if any(isinstance(names, (set, frozenset)) and not names for names in loaded):
            raise RuntimeError("vLLM's load_weights took none of the model's weights: the Hugging Face "
                               "parameter names do not match the engine's model")
        if any(t.is_cuda for _, t in weights[:1]):
            torch.cuda.synchronize()   # the copies are done before the next generate reads them
        self.llm.reset_prefix_cache()

    def generate(self, contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int]) -> list[Generation]:
        self._calls += 1
        call = self._calls

        def engine(prompts: list[list[int]], budgets: list[int], round_: int) -> list[Completion]:
            seeds = ([row_seed(self.seed, call, round_, j) for j in range(len(prompts))]
                     if self.engine_config.seed_requests else [None] * len(prompts))
            params = [self._sampling_params(**kw) for kw in
                      sampling_kwargs(budgets, temperature=self.temperature, stop_strings=self.stop_strings,
                                      eos_id=self.eos_id, seeds=seeds)]
            results = self.llm.generate([self._tokens_prompt(prompt_token_ids=p) for p in prompts],
                                        sampling_params=params, use_tqdm=False)
            return [r.outputs[0] for r in results]

        return generate_rounds(engine, contexts, stop, max_new_tokens, eos_id=self.eos_id, max_len=self.max_len)

    def close(self) -> None:
        """Releases the engine and its GPU memory (the trained model stays)."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            del llm
            import gc
            gc.collect()
            torch.cuda.empty_cache()


def load_vllm_policy(path: str | Path, *, stop_strings: Sequence[str], temperature: float = 1.0, seed: int = 0,
                     gpu_memory_utilization: float = 0.5, dtype: str = "bfloat16",
                     max_model_len: int | None = None, enable_prefix_caching: bool = True,
                     train_dtype: str = "float32", chat_template: bool = False) -> tuple[VLLMPolicy, HFTokenizer]:
    """A `VLLMPolicy` and its `policy_hf.HFTokenizer` from a local transformers checkpoint
    directory: the engine's copy in `dtype`, the trained copy in `train_dtype` (float32
    by default: at the usual learning rates of 1e-6 a bfloat16 weight barely moves)."""
    require_vllm()
    require_cuda()
    path = Path(path)
    if path.suffix == ".gguf":
        raise ValueError(f"{path}: the vllm backend loads a transformers checkpoint directory, not a GGUF file")
    from trainer.policy_hf import load_hf_policy

    # Loaded on the CPU: the engine claims its share of the GPU first, then the model moves there.
    hf, tokenizer = load_hf_policy(path, device="cpu", dtype=train_dtype, temperature=temperature,
                                   threads=torch.get_num_threads(), seed=seed, chat_template=chat_template)
    engine = VLLMEngineConfig(gpu_memory_utilization=gpu_memory_utilization, dtype=dtype,
                              enable_prefix_caching=enable_prefix_caching, max_model_len=max_model_len)
    policy = VLLMPolicy(path, hf.model, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                        stop_strings=stop_strings, temperature=temperature, seed=seed, engine=engine)
    return policy, tokenizer
