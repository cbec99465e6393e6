"""What a tool whose calls all run alike on a pool of its own zygotes shares with others
of its kind (the cpp and bash tools): starting the pool, or saying why there is none;
whether it serves, its size, the limits it grants."""

from __future__ import annotations

import dataclasses
from contextlib import AsyncExitStack

from sandbox.calls import CallLimits
from sandbox.cgroups import SlotCgroups
from sandbox.jail import Slot
from sandbox.worker import WorkerLost
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.grants import effective_limits
from toolserver.jails import Runtime, sandbox_spec
from toolserver.policy import CallerPolicy
from toolserver.registry import BuildContext, Tool
from toolserver.zygotes.pool import WorkerPool
from toolserver.zygotes.scheduler import Scheduler


class NoPool(Exception):
    """Why a tool has no pool: it then serves nothing and says why."""


def no_slots(tool: str) -> str:
    return f"no sandbox slots are left for {tool} workers (raise [sandbox] slots)"


async def start_tool_pool(tool: str, context: BuildContext, slots: list[Slot], stack: AsyncExitStack, *,
                          runtime: Runtime, max_queue: int, grace_s: float, recycle_after: int,
                          preload: tuple[str, ...] = (), kept_files_mb: int = 0,
                          longest_idle_first: bool = False) -> WorkerPool:
    """A started pool of one class of zygotes on the sandbox's own spec and the runtime its
    tool names, for a tool whose calls all run alike (its scheduler of its own, named for
    the tool); preload: the modules its calls' launchers import, imported once by each
    zygote; kept_files_mb: what each keeps of its calls' kept files; longest_idle_first: as
    WorkerPool's. Its teardown goes on
    stack. Raises NoPool when it has no slots, the sandbox is not proven, or no worker
    could start."""
    if not slots:
        raise NoPool(no_slots(tool))
    if not context.state.serving:
        raise NoPool(context.state.reason)
    slot_cgroups = SlotCgroups(context.cgroups, context.settings.sandbox.jail_max_processes)
    stack.callback(slot_cgroups.remove_all)
    spec = dataclasses.replace(sandbox_spec(context.settings, runtime), preload=preload, kept_files_mb=kept_files_mb)
    pool = WorkerPool(spec, slots, max_queue=max_queue, grace_s=grace_s,
                      recycle_after=recycle_after, name=tool, slot_cgroups=slot_cgroups,
                      scheduler=Scheduler(max_queue=max_queue, tool=tool), longest_idle_first=longest_idle_first)
    stack.push_async_callback(pool.close)
    try:
        await pool.start()
    except WorkerLost as exc:
        raise NoPool(f"no {tool} worker could start: {exc}") from exc
    return pool


class PooledTool(Tool):
    def __init__(self, settings: CoreSettings, pool: WorkerPool | None, reason: str = "") -> None:
        """pool None: calls are refused for reason."""
        self.settings = settings
        self.pool = pool
        self.reason = reason

    @property
    def available(self) -> bool:
        return self.pool is not None

    @property
    def workers(self) -> int:
        return len(self.pool.slots) if self.pool is not None else 0

    def pool_status(self) -> str:
        """The pool's state for status(), or why there is none."""
        if self.pool is None:
            return self.reason
        stats = self.pool.stats()
        return f"{stats.size} workers ({stats.size - stats.idle} busy, {stats.waiting} waiting)"

    def grant(self, limits: pb.Limits, caller: CallerPolicy) -> CallLimits:
        return effective_limits(limits, self.settings, caller)
