"""Caller policies: who may call, which tools, how much.

A caller presents a bearer token in the `authorization` metadata; its SHA-256 picks a
`CallerPolicy` from the policy file. Tokens are never stored or logged, only their
hashes (`toolserver token new` makes a token and prints the line for the file). With no
policy file the server has one open policy for everyone, and `toolserver.server` then
refuses to listen anywhere but loopback unless the operator says otherwise.

The policy file (TOML), one table per caller:

    [callers.trainer]
    token_sha256 = "<64 hex digits>"
    tools = ["python", "search"]     # the tools it may call (ListTools names them)
    max_timeout_ms = 10000           # absent or 0: the server's [limits]
    max_memory_mb = 1024
    max_output_bytes = 65536
    max_inflight = 256               # calls in flight at once, streams included

and the keys of each tool's rules (its package's rules.py: a search caller's indexes, a
Lean caller's headers, ...). A tool's rules are a frozen dataclass with defaults that
grant what the server serves, and:
    KEYS: tuple[str, ...]                              # its keys in a caller's table
    from_table(table, where, granted) -> rules         # raises ConfigError
    validate_with(settings, where) -> None             # optional: against the server's settings

This module decides; it does not count calls (`toolserver.dispatch` does, per caller).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Protocol, Sequence, TypeVar

from toolcontract.names import TOOL_NAMES as TOOLS
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings, read_toml
from toolserver.errors import ConfigError, PermissionDenied, Unauthenticated

HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
POLICY_KEYS = ("token_sha256", "tools", "max_timeout_ms", "max_memory_mb", "max_output_bytes", "max_inflight")
Rules = TypeVar("Rules")


class ToolRules(Protocol):
    """A tool's rules class, as the policy file reads it (above)."""

    KEYS: ClassVar[tuple[str, ...]]

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str, granted: bool) -> Any: ...


@dataclass(frozen=True)
class CallerPolicy:
    name: str
    tools: frozenset[str]
    max_timeout_ms: int = 0                      # 0: the server's cap
    max_memory_mb: int = 0
    max_output_bytes: int = 0
    max_inflight: int = 0                        # 0: no cap of its own
    rules: tuple[Any, ...] = ()                  # the tools' own rules; a tool's absent: its defaults

    def require_tool(self, tool: str) -> None:
        if tool not in self.tools:
            raise PermissionDenied(f"caller {self.name!r} may not use the {tool} tool")

    def rules_of(self, kind: type[Rules]) -> Rules:
        """This caller's rules of one tool (kind: its rules class)."""
        for rules in self.rules:
            if isinstance(rules, kind):
                return rules
        return kind()

    def caps(self) -> dict[str, int]:
        """The policy's maxima by the name of the request limit they cap (the fields of
        the contract's Limits; 0: the server's cap applies)."""
        return {"timeout_ms": self.max_timeout_ms, "memory_mb": self.max_memory_mb,
                "max_output_bytes": self.max_output_bytes}

    def check_limits(self, asked: pb.Limits) -> None:
        """Refuses a request that explicitly asks for more than this caller's policy grants."""
        for name, cap in self.caps().items():
            value = getattr(asked, name)
            if cap and value > cap:
                raise PermissionDenied(f"limits.{name} {value} exceeds caller {self.name!r}'s maximum of {cap}")


OPEN_POLICY = CallerPolicy(name="anonymous", tools=frozenset(TOOLS))


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Policies:
    """Every caller's policy, looked up by the hash of its token."""

    def __init__(self, by_hash: dict[str, CallerPolicy]) -> None:
        self.by_hash = by_hash

    @property
    def open(self) -> bool:
        """No tokens configured: every caller gets OPEN_POLICY."""
        return not self.by_hash

    def authenticate(self, metadata: Iterable[tuple[str, Any]] | None) -> CallerPolicy:
        """The policy of the caller presenting metadata; raises Unauthenticated."""
        if self.open:
            return OPEN_POLICY
        header = ""
        for key, value in metadata or ():
            if key.lower() == "authorization":
                header = value.decode() if isinstance(value, bytes) else str(value)
                break
        if not header:
            raise Unauthenticated("missing bearer token: send metadata 'authorization: Bearer <token>'")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("malformed authorization metadata: expected 'Bearer <token>'")
        digest = token_hash(token.strip())
        for known, policy in self.by_hash.items():
            if hmac.compare_digest(known, digest):
                return policy
        raise Unauthenticated("unknown bearer token")


def load_policies(path: str | Path | None, rules: Sequence[tuple[str, type[ToolRules]]]) -> Policies:
    """Reads and validates the policy file with the tools' rules ((tool name, rules class)
    pairs); no path: the open policy. Raises ConfigError."""
    if not path:
        return Policies({})
    data = read_toml(path, "policy file")
    unknown = sorted(set(data) - {"callers"})
    if unknown:
        raise ConfigError(f"policy file {path}: unknown table(s) {', '.join(unknown)}; callers go in [callers.NAME]")
    callers = data.get("callers", {})
    if not isinstance(callers, dict) or not callers:
        raise ConfigError(f"policy file {path} defines no [callers.NAME] table")
    by_hash: dict[str, CallerPolicy] = {}
    for name, table in callers.items():
        policy, digest = _policy(name, table, rules)
        if digest in by_hash:
            raise ConfigError(f"callers.{name}: the same token_sha256 as callers.{by_hash[digest].name}")
        by_hash[digest] = policy
    return Policies(by_hash)


def _policy(name: str, table: Any, rules: Sequence[tuple[str, type[ToolRules]]]) -> tuple[CallerPolicy, str]:
    where = f"callers.{name}"
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table")
    unknown = sorted(set(table) - set(POLICY_KEYS) - {key for _, kind in rules for key in kind.KEYS})
    if unknown:
        raise ConfigError(f"[{where}]: unknown key(s) {', '.join(unknown)}")
    digest = table.get("token_sha256")
    if not isinstance(digest, str) or not HEX_SHA256.match(digest):
        raise ConfigError(f"{where}.token_sha256 must be 64 lowercase hex digits (`toolserver token new` makes one)")
    tools = names(table, "tools", where)
    if tools is None or not tools:
        raise ConfigError(f"{where}.tools must list at least one of {', '.join(TOOLS)}")
    if tools - set(TOOLS):
        raise ConfigError(f"{where}.tools: unknown tool(s) {', '.join(sorted(tools - set(TOOLS)))}")
    numbers = {}
    for key in ("max_timeout_ms", "max_memory_mb", "max_output_bytes", "max_inflight"):
        numbers[key] = count(table, key, where)
    own = tuple(kind.from_table(table, where, tool in tools) for tool, kind in rules)
    return CallerPolicy(name=name, tools=frozenset(tools), rules=own, **numbers), digest


def count(table: dict[str, Any], key: str, where: str) -> int:
    """A policy key that counts (a maximum, where 0 is none); absent: 0."""
    value = table.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}.{key} must be a non-negative integer")
    return value


def names(table: dict[str, Any], key: str, where: str) -> frozenset[str] | None:
    """A policy key that lists names; absent: None."""
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}.{key} must be a list of strings")
    return frozenset(value)


def validate_against_settings(policies: Policies, settings: CoreSettings) -> None:
    """Refuses policies whose maxima exceed what the server itself allows, or whose tool
    rules do not fit the tools' settings."""
    for policy in policies.by_hash.values():
        where = f"callers.{policy.name}"
        for rules in policy.rules:
            if hasattr(rules, "validate_with"):
                rules.validate_with(settings, where)
        for name, cap in policy.caps().items():
            limit = getattr(settings.limits, name)
            if cap > limit:
                raise ConfigError(f"{where}.max_{name.removeprefix('max_')} ({cap}) exceeds "
                                  f"the server's limits.{name} ({limit})")
