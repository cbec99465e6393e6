"""What a tool whose calls all run alike on a pool of its own zygotes shares with others
of its kind (the cpp and bash tools): whether it serves, its size, the limits it grants."""

from __future__ import annotations

from sandbox.calls import CallLimits
from toolserver.config import CoreSettings
from toolserver.grants import effective_limits
from toolserver.policy import CallerPolicy
from toolserver.registry import Tool
from toolserver.v1 import toolserver_pb2 as pb
from toolserver.zygotes.pool import WorkerPool


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
