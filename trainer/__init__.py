"""Multi-turn, tool-integrated RL (GRPO / GRPO-RoC) against the tool server.

One job per module: `config` (every hyperparameter), `tokenizer` (bytes), `formats` (the
ToRL and rStar2 tool protocols over token ids), `answers` (\\boxed{} and equality by
value), `tool_runner` (batched calls on one ExecuteStream, with retry of infrastructure
failures), `rewards` (rewards by name; code tests run on the server), `grpo` and `roc`
(advantages, clipped loss, down-sampling), `rollout` (the multi-turn loop and the
`Policy` interface), `policy` (what the learner needs of a backend), `policy_torch`,
`policy_hf` and `policy_vllm` (the backends), `sampling` (the sampling loop both
in-process backends share), `backends` (the one a config names), `wiring` (the policy,
client, runner and answer checker of a config, for both `train` and `evaluate`),
`learner` (one RL step), `sft` (supervised warm start), `evaluate` (pass@k),
`checkpoint`, `run_log` and `train` (a run with resume), `synthetic` and `demo` (the CPU
demo), `datasets` (CHAMP as JSONL), `local_server` (a server for one run). The trainer
reaches the server only through `toolclient.client` and the generated `toolcontract.v1`
messages (tests/unit/test_trainer_imports.py holds it to that); it never runs the
model's code itself.
"""
