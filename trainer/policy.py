"""What the learner needs of a policy backend, beyond sampling (`rollout.Policy`).

A backend samples (`generate`: token ids in, token ids and logprobs out), exposes the
torch module the optimiser updates (`model`), scores given sequences under a module of
the same architecture with gradients (`sequence_logprobs`: the live model for the loss,
a frozen copy for the KL term), and hears about each optimiser step
(`weights_updated`: a vLLM backend copies the new weights into its engine there).
Backends: `policy_torch` (in-process, the CPU default), `policy_hf` (Hugging Face causal
LMs) and `policy_vllm` (vLLM on a GPU).
"""

from __future__ import annotations

from typing import Protocol, Sequence

import torch

from trainer.rollout import Policy


class TrainablePolicy(Policy, Protocol):
    max_len: int   # longest prompt plus completion the model takes

    @property
    def model(self) -> torch.nn.Module:
        """The module the optimiser updates (read-only here: a backend may hold a subclass)."""
        ...

    def sequence_logprobs(self, model: torch.nn.Module, seqs: Sequence[Sequence[int]], temperature: float,
                          last: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logprob of every token given the ones before it under `model`, [B, L-1] for
        the sequences left-padded to width L, and the real-token mask of the same shape;
        with `last`, only the last `last` positions ([B, min(last, L-1)]: a loss that
        covers completions only needs no more)."""
        ...

    def weights_updated(self) -> None: ...
