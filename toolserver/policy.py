"""Caller policies: who may call, which tools, indexes and Lean headers, how much.

A caller presents a bearer token in the `authorization` metadata; its SHA-256 picks a
`CallerPolicy` from the policy file. Tokens are never stored or logged, only their
hashes (`toolserver token new` makes a token and prints the line for the file). With no
policy file the server has one open policy for everyone, and `toolserver.server` then
refuses to listen anywhere but loopback unless the operator says otherwise.

The policy file (TOML), one table per caller:

    [callers.trainer]
    token_sha256 = "<64 hex digits>"
    tools = ["python", "search"]     # of python, search, lean; sessions come with python
    indexes = ["python-docs"]        # search indexes; absent: all the server serves
    lean_headers = ["import Mathlib"]  # absent: all
    max_timeout_ms = 10000           # absent or 0: the server's [limits]
    max_memory_mb = 1024
    max_output_bytes = 65536
    max_inflight = 256               # calls in flight at once, streams included
    max_sessions = 2                 # open Python sessions
    import_profile = "strict"        # of the server's python.import_profiles; absent: its default

This module decides; it does not count calls (`toolserver.service` does, per caller).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from toolserver.config import read_toml
from toolserver.contract import TOOL_NAMES as TOOLS
from toolserver.errors import ConfigError, PermissionDenied, Unauthenticated
from toolserver.lean.header import HeaderError, parse_header
from toolserver.v1 import toolserver_pb2 as pb
HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
POLICY_KEYS = {"token_sha256", "tools", "indexes", "lean_headers", "max_timeout_ms", "max_lean_timeout_ms", "max_memory_mb",
               "max_output_bytes", "max_inflight", "max_sessions", "import_profile"}


@dataclass(frozen=True)
class CallerPolicy:
    name: str
    tools: frozenset[str]
    indexes: frozenset[str] | None = None        # None: every index the server serves
    lean_headers: frozenset[str] | None = None   # header keys (toolserver.lean.header); None: every header
    max_timeout_ms: int = 0                      # 0: the server's cap
    max_lean_timeout_ms: int = 0                 # Lean calls; 0: the server's lean.max_timeout_ms
    max_memory_mb: int = 0
    max_output_bytes: int = 0
    max_inflight: int = 0                        # 0: no cap of its own
    max_sessions: int = 0                        # 0: no cap of its own
    import_profile: str = ""                     # the guard's import profile; "": the server's default

    def require_tool(self, tool: str) -> None:
        if tool not in self.tools:
            raise PermissionDenied(f"caller {self.name!r} may not use the {tool} tool")

    def require_index(self, index: str) -> None:
        if self.indexes is not None and index not in self.indexes:
            raise PermissionDenied(f"search index {index!r} is not allowed for caller {self.name!r}")

    def require_header(self, key: str) -> None:
        """key: a parsed header's key, the form lean_headers holds."""
        if self.lean_headers is not None and key not in self.lean_headers:
            raise PermissionDenied(f"lean header {key or '(no imports)'!r} is not allowed for caller {self.name!r}")

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


    def lean_timeout_ms(self, asked: int, default_ms: int) -> int:
        """A Lean call's wall time: what it asked for, else the server's default, never
        above this caller's Lean maximum (proofs need far longer than Python calls, so
        Lean has a cap of its own)."""
        cap = self.max_lean_timeout_ms
        if cap and asked > cap:
            raise PermissionDenied(f"limits.timeout_ms {asked} exceeds caller {self.name!r}'s Lean maximum of {cap} "
                                   "(max_lean_timeout_ms)")
        return asked or min(default_ms, cap or default_ms)


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


def load_policies(path: str | Path | None) -> Policies:
    """Reads and validates the policy file; no path: the open policy. Raises ConfigError."""
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
        policy, digest = _policy(name, table)
        if digest in by_hash:
            raise ConfigError(f"callers.{name}: the same token_sha256 as callers.{by_hash[digest].name}")
        by_hash[digest] = policy
    return Policies(by_hash)


def _policy(name: str, table: Any) -> tuple[CallerPolicy, str]:
    where = f"callers.{name}"
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table")
    unknown = sorted(set(table) - POLICY_KEYS)
    if unknown:
        raise ConfigError(f"[{where}]: unknown key(s) {', '.join(unknown)}")
    digest = table.get("token_sha256")
    if not isinstance(digest, str) or not HEX_SHA256.match(digest):
        raise ConfigError(f"{where}.token_sha256 must be 64 lowercase hex digits (`toolserver token new` makes one)")
    tools = _names(table, "tools", where)
    if tools is None or not tools:
        raise ConfigError(f"{where}.tools must list at least one of {', '.join(TOOLS)}")
    if tools - set(TOOLS):
        raise ConfigError(f"{where}.tools: unknown tool(s) {', '.join(sorted(tools - set(TOOLS)))}")
    numbers = {}
    for key in ("max_timeout_ms", "max_lean_timeout_ms", "max_memory_mb", "max_output_bytes", "max_inflight",
                "max_sessions"):
        value = table.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}.{key} must be a non-negative integer")
        numbers[key] = value
    if numbers["max_sessions"] and "python" not in tools:
        raise ConfigError(f"{where}.max_sessions is set but the python tool is not granted")
    if numbers["max_lean_timeout_ms"] and "lean" not in tools:
        raise ConfigError(f"{where}.max_lean_timeout_ms is set but the lean tool is not granted")
    profile = table.get("import_profile", "")
    if not isinstance(profile, str):
        raise ConfigError(f"{where}.import_profile must be a string")
    policy = CallerPolicy(name=name, tools=frozenset(tools), indexes=_names(table, "indexes", where),
                          lean_headers=_header_keys(table, where), import_profile=profile, **numbers)
    return policy, digest


def _names(table: dict[str, Any], key: str, where: str) -> frozenset[str] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}.{key} must be a list of strings")
    return frozenset(value)


def _header_keys(table: dict[str, Any], where: str) -> frozenset[str] | None:
    """The Lean headers a caller may use, as the keys calls are compared by."""
    headers = _names(table, "lean_headers", where)
    if headers is None:
        return None
    try:
        return frozenset(parse_header(header).key for header in headers)
    except HeaderError as exc:
        raise ConfigError(f"{where}.lean_headers: {exc}") from exc


def validate_against_settings(policies: Policies, caps: dict[str, int], lean_max_timeout_ms: int,
                              import_profiles: Iterable[str] = ()) -> None:
    """Refuses policies whose maxima exceed what the server itself allows, or that name an
    import profile it does not define."""
    profiles = set(import_profiles)
    for policy in policies.by_hash.values():
        if policy.import_profile and policy.import_profile not in profiles:
            raise ConfigError(f"callers.{policy.name}.import_profile {policy.import_profile!r} is not one of the "
                              f"server's python.import_profiles ({', '.join(sorted(profiles))})")
        if policy.max_lean_timeout_ms > lean_max_timeout_ms:
            raise ConfigError(f"callers.{policy.name}.max_lean_timeout_ms ({policy.max_lean_timeout_ms}) exceeds "
                              f"the server's lean.max_timeout_ms ({lean_max_timeout_ms})")
        for name, cap in policy.caps().items():
            if cap > caps[name]:
                raise ConfigError(f"callers.{policy.name}.max_{name.removeprefix('max_')} ({cap}) exceeds "
                                  f"the server's limits.{name} ({caps[name]})")
