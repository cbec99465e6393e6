"""Stateless verl function tools for `actor_rollout_ref.rollout.multi_turn.function_tool_path`.

Point `function_tool_path` at this file (`python -c "import importlib.util as u;
print(u.find_spec('toolclient.integrations.verl_function_tools').origin)"`); the tools call
the fleet named by TOOLSERVER_TARGET (default 127.0.0.1:50051) with TOOLSERVER_TOKEN as
bearer token (and TOOLSERVER_TIMEOUT_S, TOOLSERVER_MAX_OUTPUT_CHARS, ...: one variable per
`FleetConfig` field). Each call is a fresh interpreter; use `ToolServerTool` with
`stateful: true` for a session per trajectory.
"""

from __future__ import annotations

from typing import Any

from verl.tools.function_tool import function_tool

from toolclient.client import ToolServerError
from toolclient.integrations.calls import FleetConfig, fleet_calls
from toolcontract.answer_text import answer_text


async def call(tool: str, arguments: dict[str, Any]) -> str:
    config = FleetConfig.from_environ()
    try:
        return answer_text(await fleet_calls(config).call(tool, arguments), config.max_output_chars)
    except ToolServerError as exc:
        return f"tool server error ({exc.code.name}): {exc}"


@function_tool
async def python(code: str) -> str:
    """Run Python 3 code in an isolated sandbox; nothing persists between calls.

    Args:
        code: Python source. Print what you want to see; the value of a last bare expression is returned too.
    """
    return await call("python", {"code": code})


@function_tool
async def search(query: str) -> str:
    """Search the server's document index.

    Args:
        query: What to look for.
    """
    return await call("search", {"query": query})


@function_tool
async def lean(code: str) -> str:
    """Check Lean 4 code (after the server's default header, e.g. import Mathlib).

    Args:
        code: Lean 4 source: theorems and their proofs.
    """
    return await call("lean", {"code": code})
