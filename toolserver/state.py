"""Whether this server serves calls: its self-test's checks, insecure mode, draining."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sandbox.selftest import Check
from toolserver.errors import Unavailable

log = logging.getLogger("toolserver")


@dataclass
class ServerState:
    """What decides whether calls are served: the self-test, insecure mode, draining."""

    serving: bool = False
    reason: str = "starting"
    insecure: bool = False
    draining: bool = False
    sandbox_verified: bool = False
    checks: list[Check] = field(default_factory=list)
    inflight: int = 0

    def admit(self) -> None:
        if self.draining:
            raise Unavailable("server is draining for shutdown")
        if not self.serving:
            raise Unavailable(f"server is not serving: {self.reason}")

    def refuse(self, reason: str) -> None:
        """Stops serving for reason (a failed check), saying so in the log."""
        self.serving = False
        self.reason = reason
        log.error("refusing to run code: %s", reason)
