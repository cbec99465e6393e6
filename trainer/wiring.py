"""The pieces a `TrainerConfig` names, built in one place for `train` and `evaluate_config`.

`run_policy` gives the policy and tokenizer (the caller's, or the backend the config
names); `connect` opens the run's client to the tool server and yields the tool runner
and reward context built on it, with the server limits, format and answer checker of the
config. It starts no server (`local_server` does) and holds no training state.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import AsyncIterator

import torch

from toolclient.client import AsyncToolClient
from trainer.backends import build_policy
from trainer.config import TrainerConfig
from trainer.formats import ToolFormat, get_format
from trainer.policy import TrainablePolicy
from trainer.rewards import AnswerChecker, RewardContext
from trainer.tokenizer import Tokenizer
from trainer.tool_runner import ToolRunner


@dataclass(frozen=True)
class Wiring:
    """What rollouts and rewards use of the server: the format, the runner, the rewards' context."""

    fmt: ToolFormat
    runner: ToolRunner
    reward_ctx: RewardContext


def run_policy(cfg: TrainerConfig, policy: TrainablePolicy | None = None, tokenizer: Tokenizer | None = None
               ) -> tuple[TrainablePolicy, Tokenizer]:
    """The caller's policy (e.g. after a supervised warm start) or the one `cfg` names,
    with torch at `cfg.torch_threads` either way."""
    torch.set_num_threads(cfg.torch_threads)
    if policy is None or tokenizer is None:
        return build_policy(cfg)
    return policy, tokenizer


@contextlib.asynccontextmanager
async def connect(cfg: TrainerConfig) -> AsyncIterator[Wiring]:
    """A client to `cfg.server` (bearer token from $TOOLSERVER_TOKEN), the tool runner on
    it and the reward context; closes the client and the answer checker's worker after."""
    fmt = get_format(cfg.format, cfg.instructions)
    checker = AnswerChecker(cfg.reward_timeout_s)
    try:
        async with AsyncToolClient(cfg.server, timeout_s=cfg.rpc_timeout_s,
                                   token=os.environ.get("TOOLSERVER_TOKEN")) as client:
            runner = ToolRunner(client, timeout_ms=cfg.tool_timeout_ms, memory_mb=cfg.tool_memory_mb,
                                rpc_timeout_s=cfg.rpc_timeout_s)
            yield Wiring(fmt, runner, RewardContext(fmt, checker, runner, cfg.partial_credit))
    finally:
        checker.close()
