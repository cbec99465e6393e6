#!/usr/bin/env bash
# GRPO on verl (Ray) with tool calls served by a fleet of tool servers: the keys that
# matter for tools; the rest (data, model, batch sizes, GPUs) as in any verl recipe.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="${TOOLSERVER_TARGET:-dns:///toolserver.toolserver.svc.cluster.local:50051}"
python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="${TRAIN_FILES:?parquet with prompts, agent_name and reward ground truth}" \
  data.val_files="${VAL_FILES:?}" \
  data.return_raw_chat=True \
  actor_rollout_ref.model.path="${MODEL:?}" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=8 \
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4096 \
  actor_rollout_ref.rollout.multi_turn.tool_config_path="$HERE/tool_config.yaml" \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agent_loop.yaml" \
  actor_rollout_ref.rollout.agent.default_agent_loop=toolserver_tool_agent \
  reward.custom_reward_function.path="$(python3 -c 'import importlib.util as u; print(u.find_spec("toolclient.integrations.verl").origin)')" \
  reward.custom_reward_function.name=compute_score \
  +reward.custom_reward_function.reward_kwargs.target="$TARGET" \
  "$@"
