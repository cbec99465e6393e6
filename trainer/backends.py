"""Builds the policy backend and tokenizer a `TrainerConfig` names.

`torch` is the in-process byte-level transformer: fresh weights ('tiny') or the weights
of a checkpoint this trainer wrote (its architecture is read from the checkpoint's
`tiny_config` note). `hf` loads a Hugging Face causal LM from a local directory or GGUF
file; `vllm` generates in vLLM on a GPU. The optional backends are imported only when
asked for, so the trainer runs where transformers or vllm are absent.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from trainer.checkpoint import load_checkpoint, read_metadata
from trainer.config import TrainerConfig
from trainer.formats import get_format
from trainer.policy import TrainablePolicy
from trainer.policy_torch import TinyConfig, TinyTransformer, TorchPolicy
from trainer.tokenizer import ByteTokenizer, Tokenizer

TINY_NOTE = "tiny_config"


def tiny_notes(model: TinyTransformer) -> dict[str, str]:
    """Checkpoint metadata from which `build_policy` rebuilds the architecture."""
    return {TINY_NOTE: json.dumps(dataclasses.asdict(model.cfg))}


def load_tiny(path: str | Path) -> TinyTransformer:
    if not Path(path).is_file():
        raise FileNotFoundError(f"model: no checkpoint at {path}")
    metadata = read_metadata(path)
    if TINY_NOTE not in metadata:
        raise ValueError(f"model: {path} is not a checkpoint of the torch backend's model (no {TINY_NOTE!r} note)")
    model = TinyTransformer(TinyConfig(**json.loads(metadata[TINY_NOTE])))
    load_checkpoint(path, model)
    return model


def model_path(name: str) -> Path:
    if name == "smollm2":
        from trainer.policy_hf import packaged_smollm2
        return packaged_smollm2()
    return Path(name)


def build_policy(cfg: TrainerConfig) -> tuple[TrainablePolicy, Tokenizer]:
    if cfg.backend == "torch":
        tokenizer = ByteTokenizer()
        if cfg.model == "tiny":
            from trainer.policy_torch import default_model
            model = default_model(tokenizer.vocab_size, cfg.seed)
        else:
            model = load_tiny(cfg.model)
        policy = TorchPolicy(model, tokenizer.eos_id, temperature=cfg.temperature,
                             threads=cfg.torch_threads, seed=cfg.seed)
        return policy, tokenizer
    if cfg.backend == "hf":
        from trainer.policy_hf import load_hf_policy
        return load_hf_policy(model_path(cfg.model), device=cfg.device, temperature=cfg.temperature,
                              threads=cfg.torch_threads, seed=cfg.seed, chat_template=cfg.chat_template,
                              lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha,
                              prefix_cache_tokens=cfg.prefix_cache_tokens)
    from trainer.policy_vllm import load_vllm_policy
    return load_vllm_policy(model_path(cfg.model), stop_strings=get_format(cfg.format).stop_strings,
                            temperature=cfg.temperature, seed=cfg.seed, chat_template=cfg.chat_template)


def checkpoint_notes(policy: TrainablePolicy) -> dict[str, str]:
    return tiny_notes(policy.model) if isinstance(policy.model, TinyTransformer) else {}
