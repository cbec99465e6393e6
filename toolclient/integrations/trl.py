"""A tool server fleet as TRL's tools (TRL 1.16): `toolserver_tools(...)` for GRPOTrainer's
`tools=`, `PythonSessions(...)` for its `environment_factory=` (one Python session per rollout).

- **Schemas.** TRL calls a tool by its `__name__` and renders it with transformers'
  `get_json_schema`, which reads a function's name, type hints and Google-style docstring.
  `toolserver_tools` makes each from the tool as ListTools gives it to the caller
  (`calls.ModelTools`): its description and required arguments, so a tool the server
  adds reaches the model with no change here; the description says what only the server
  knows (the caller's import profile, the index names). `PythonSessions`' one method is
  written here, as TRL reads an environment's tools from its class.
- **Async.** The tools are coroutines: TRL awaits them on its own event-loop thread, where
  `FleetCalls` makes its client. GRPOTrainer awaits the calls of one assistant turn together
  and handles its rollouts one after another; TRL's experimental AsyncGRPOTrainer awaits many
  rollouts' calls at once, in a rollout process it pickles the tools and the factory into:
  they hold only a `FleetConfig`, and find that process's `FleetCalls` when called.
- **Failures.** A call the server refused or could not take raises; TRL hands the error to the
  model as the tool's answer and counts it in `tools/failure_frequency`. A failure of the
  model's code is a normal answer (`answer_text`).

Not here: rewards (TRL's `reward_funcs` are the user's), and search or Lean sessions (they
hold no state).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from toolclient.client import NotFound, ToolServerError
from toolclient.integrations.calls import CallStats, FleetConfig, FleetConfigError, ModelTools, fleet_calls
from toolcontract.answer_text import answer_text
from toolcontract.names import TOOL_NAMES

log = logging.getLogger(__name__)


def toolserver_tools(names: Sequence[str] | None = None, **settings: Any) -> list[Callable[..., Awaitable[str]]]:
    """GRPOTrainer's `tools=`: the tools ListTools gives this caller (or those of names), as
    functions of their required arguments, over the fleet that settings (FleetConfig's keys:
    target, token, timeout_s, ...) describe."""
    unknown = sorted(set(names or ()) - set(TOOL_NAMES))
    if unknown:
        raise FleetConfigError(f"unknown tools {unknown}; known: {list(TOOL_NAMES)}")
    config = FleetConfig.from_mapping(settings)
    tools = ModelTools(config, fleet_calls(config).specs().values())
    missing = [name for name in names or () if name not in tools.specs]
    if missing:
        raise FleetConfigError(f"the server at {config.target} offers no {', '.join(missing)} tool to this caller")
    return [getattr(tools, name) for name in (names or tools.specs)]


class PythonSession:
    """One rollout's Python interpreter, for GRPOTrainer's `environment_factory`.

    TRL keeps one instance per rollout it runs at once and calls `reset` before each new
    rollout; every public method is offered to the model as a tool, so this class has one,
    `python`, and its closing is `PythonSessions.close`'s. The session opens at the rollout's
    first call (a rollout that never calls costs no session) and closes at the next `reset`:
    TRL tells an environment nothing when its rollout ends. So a process holds at most one
    session per rollout of its generation batch, and the server's `sessions.idle_timeout_s`
    ends what a stopped trainer leaves open. `stats` counts the rollout's calls; reward
    functions receive the environments as `environments`.
    """

    def __init__(self, config: FleetConfig) -> None:
        self._config = config
        self._session_id = ""
        self._loop: asyncio.AbstractEventLoop | None = None  # where the client that opened it runs
        self.stats = CallStats()

    @property
    def session_id(self) -> str:
        """The open session's id; empty before the rollout's first call."""
        return self._session_id

    def reset(self, **example: Any) -> None:
        """Ends the previous rollout's session; adds nothing to the prompt."""
        self._close()
        self.stats = CallStats()

    async def python(self, code: str) -> str:
        """Run Python 3 in this conversation's own sandboxed interpreter; variables and imports persist between calls.

        Args:
            code: Python 3 source. Print what you want to read; the repr of a last bare expression
                is returned as the value. sympy, numpy and mpmath are pre-imported.

        Returns:
            The code's stdout, stderr and value, with its outcome when it did not finish normally.
        """
        calls = fleet_calls(self._config)
        started = time.monotonic()
        response = None
        try:
            if not self._session_id:
                self._session_id = await calls.open_session()
                self._loop = asyncio.get_running_loop()
            response = await calls.call("python", {"code": code}, session_id=self._session_id)
        except NotFound:
            self._session_id = ""  # the server ended it (its process died, or it idled out): the next call opens one
            raise
        finally:
            self.stats.record(response, started)
        return answer_text(response, self._config.max_output_chars)

    def _close(self) -> None:
        """Closes the session through the client that opened it, on that client's loop. TRL
        calls reset from outside its loop (the trainer's thread, a worker thread), so this
        waits for the close; a close that fails is left to the server's idle timeout."""
        session_id, loop = self._session_id, self._loop
        self._session_id, self._loop = "", None
        if not session_id:
            return
        if loop is None or not loop.is_running():
            log.warning("session %s outlived its event loop; the server's idle timeout will close it", session_id)
            return
        closing = asyncio.run_coroutine_threadsafe(fleet_calls(self._config).close_session(session_id), loop)
        try:
            closing.result(timeout=self._config.timeout_s)
        except NotFound:
            pass  # the server had already ended it
        except (ToolServerError, TimeoutError) as exc:
            log.warning("could not close session %s (%s); the server's idle timeout will", session_id, exc)


class PythonSessions:
    """GRPOTrainer's `environment_factory`: TRL calls it for each environment it needs, and
    `close()` ends the sessions they still hold once training is over.

    Environments made in another process (AsyncGRPOTrainer's rollout worker) are not this
    object's to close: the server's idle timeout is theirs."""

    def __init__(self, **settings: Any) -> None:
        self.config = FleetConfig.from_mapping(settings)
        self.environments: list[PythonSession] = []

    def __call__(self) -> PythonSession:
        environment = PythonSession(self.config)
        self.environments.append(environment)
        return environment

    def close(self) -> None:
        for environment in self.environments:
            environment._close()
