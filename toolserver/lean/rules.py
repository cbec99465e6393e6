"""A caller's Lean rules, from its table in the policy file (toolserver/policy.py):

    lean_headers = ["import Mathlib"]  # headers it may use; absent: all
    max_lean_timeout_ms = 120000       # Lean calls' wall time; absent or 0: lean.max_timeout_ms
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from toolserver.config import CoreSettings
from toolserver.errors import ConfigError, PermissionDenied
from toolserver.lean.header import HeaderError, parse_header
from toolserver.lean.settings import LeanSettings
from toolserver.policy import count, names


@dataclass(frozen=True)
class LeanRules:
    KEYS: ClassVar[tuple[str, ...]] = ("lean_headers", "max_lean_timeout_ms")

    headers: frozenset[str] | None = None   # header keys (toolserver.lean.header); None: every header
    max_timeout_ms: int = 0                 # 0: the server's lean.max_timeout_ms

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str, granted: bool) -> LeanRules:
        max_timeout_ms = count(table, "max_lean_timeout_ms", where)
        if max_timeout_ms and not granted:
            raise ConfigError(f"{where}.max_lean_timeout_ms is set but the lean tool is not granted")
        return cls(headers=header_keys(table, where), max_timeout_ms=max_timeout_ms)

    def validate_with(self, settings: CoreSettings, where: str) -> None:
        cap = settings.section(LeanSettings).max_timeout_ms
        if self.max_timeout_ms > cap:
            raise ConfigError(f"{where}.max_lean_timeout_ms ({self.max_timeout_ms}) exceeds "
                              f"the server's lean.max_timeout_ms ({cap})")

    def require_header(self, key: str, caller: str) -> None:
        """key: a parsed header's key, the form headers holds."""
        if self.headers is not None and key not in self.headers:
            raise PermissionDenied(f"lean header {key or '(no imports)'!r} is not allowed for caller {caller!r}")

    def timeout_ms(self, asked: int, default_ms: int, caller: str) -> int:
        """A Lean call's wall time: what it asked for, else the server's default, never
        above this caller's Lean maximum (proofs need far longer than Python calls, so
        Lean has a cap of its own)."""
        cap = self.max_timeout_ms
        if cap and asked > cap:
            raise PermissionDenied(f"limits.timeout_ms {asked} exceeds caller {caller!r}'s Lean maximum of {cap} "
                                   "(max_lean_timeout_ms)")
        return asked or min(default_ms, cap or default_ms)


def header_keys(table: dict[str, Any], where: str) -> frozenset[str] | None:
    """The Lean headers a caller may use, as the keys calls are compared by."""
    headers = names(table, "lean_headers", where)
    if headers is None:
        return None
    try:
        return frozenset(parse_header(header).key for header in headers)
    except HeaderError as exc:
        raise ConfigError(f"{where}.lean_headers: {exc}") from exc
