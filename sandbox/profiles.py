"""What the in-jail guard (sandbox/guard.py) refuses to a call, by import profile: data a
zygote's config carries into the jail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GuardProfile:
    """What sandbox/guard.py refuses to a call of one profile; the default, nothing."""

    allowed: tuple[str, ...] | None = None  # top-level modules the call's own code may import; None: all
    denied: tuple[str, ...] = ()            # modules nothing in the call may load
    refuse_actions: bool = False            # network, new processes, signals to others, hand-built code, ...

    def refuses_nothing(self) -> bool:
        return self.allowed is None and not self.denied and not self.refuse_actions

    def config(self) -> dict[str, Any]:
        return {"allowed": None if self.allowed is None else list(self.allowed), "denied": list(self.denied),
                "refuse_actions": self.refuse_actions}


@dataclass(frozen=True)
class GuardPolicy:
    """The guard profiles by name; each call names its profile."""

    profiles: dict[str, GuardProfile]

    def config(self) -> dict[str, Any]:
        """The guard's part of an in-jail program's config."""
        return {"profiles": {name: profile.config() for name, profile in self.profiles.items()}}
