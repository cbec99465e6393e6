"""The server's settings: the sections every server has, and how a tool's own join them.

The defaults are the embedded config `toolserver serve` runs on; a TOML file passed
with `--config` overrides any of them (unknown keys are an error, not a typo silently
ignored). Every limit is one field with its default and the reason for it.

A tool's sections (its package's settings.py) are frozen dataclasses with safe defaults
that derive from `ToolSection`, whose hooks the server calls on every section (each asks
nothing unless the section overrides it); `compose_settings` adds them to `CoreSettings`
as fields (toolserver/settings.py does, for the tools in toolserver/tools.py).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, TypeVar

from toolserver.errors import ConfigError

__all__ = ["ConfigError", "CoreSettings", "ToolSection", "compose_settings", "load_settings", "read_toml",
           "require_positive"]

JAIL_HIDES = ("/root", "/tmp")  # what a jail does not show of the host (sandbox/jail.py)

# The host values that bind loopback only, and those that bind every interface.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "[::1]", "localhost"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


@dataclass(frozen=True)
class LimitCaps:
    """The server's caps on one call ([limits]). Callers may ask for less (Limits in the
    request), never more; what one call gets is sandbox.calls.CallLimits."""

    timeout_ms: int = 10_000          # wall time; CPU time is capped at the same plus 1 s
    memory_mb: int = 1024             # address space on top of the warm interpreter
    max_output_bytes: int = 16 << 20  # per stream (stdout, stderr), sized for judges: a program that
                                      # prints more is stopped there (outcome OUTPUT_LIMIT)
    max_processes: int = 32           # RLIMIT_NPROC for the call (threads count too)
    max_file_mb: int = 16             # RLIMIT_FSIZE: largest file a call may write
    max_open_files: int = 128         # RLIMIT_NOFILE
    max_scratch_mb: int = 256         # scratch (a RAM-backed tmpfs) a call or a session may fill:
                                      # the home tmpfs is this large; a call that fills it is killed
    max_scratch_files: int = 16384    # files (inodes) a call's or a session's home may hold


@dataclass(frozen=True)
class DefaultLimits:
    """What a call gets when its request leaves a limit at 0."""

    timeout_ms: int = 5_000
    memory_mb: int = 512
    max_output_bytes: int = 16 << 20


@dataclass(frozen=True)
class SandboxSettings:
    firejail: str = "firejail"
    user_prefix: str = "tsbox"        # slot users tsbox0..; made by `toolserver setup-sandbox`
    slots: int = 320                  # slot users this server uses: workers + self-test + sessions,
                                      # then up to lean.max_repls Lean REPLs from what is left
    first_slot: int = 0               # index of its first slot user: servers sharing a host
                                      # must use disjoint ranges (each kills its slots' processes)
    scratch_root: str = "/var/lib/toolserver/scratch"
    memory_cgroup: str = "auto"       # a memory cgroup per slot caps all of a call's or a session's
                                      # processes together: "auto" (when the host allows it: root and
                                      # cgroup v1 memory or cgroup v2 with memory delegated),
                                      # "required" (refuse to serve without), "off"
    jail_max_processes: int = 64      # firejail --rlimit-nproc, per slot uid
    jail_memory_mb: int = 0           # firejail --rlimit-as for a whole worker; 0: per call only
    hidden_paths: tuple[str, ...] = ()  # extra paths blacklisted inside every jail
    jail_paths: tuple[str, ...] = ()  # host paths (or globs) every jail shows, read-only, besides the
                                      # system's (sandbox/root.py BASE_ROOT) and what the tools declare
    interpreter: str = "/opt/toolserver/runtime/bin/python"  # what the self-test proves the jail with
                                      # (its probes run on it); each tool names its own jails' (python.,
                                      # cpp., bash.interpreter)
    insecure_no_sandbox: bool = False  # run without firejail; only with the explicit CLI flag
    self_test: bool = True             # run the jail probe at start-up (fail closed)


# Where scripts/setup.sh and the image build the calls' runtime (sandbox/runtime/): the
# interpreter jailed processes start on unless a section names another.
RUNTIME_INTERPRETER = SandboxSettings.interpreter


@dataclass(frozen=True)
class SlotClaim:
    """What a tool's settings section takes of the sandbox slots (each jailed process
    runs as a slot user); tools take theirs in the order toolserver/tools.py lists them."""

    needed: int = 0   # without these the server does not serve (start-up refuses)
    held: int = 0     # set aside for the whole run: sandbox.slots must cover them with the needed ones
    wanted: int = 0   # taken of what is left, if any; fewer are served


class ToolSection:
    """What the server asks of a tool's settings section (a frozen dataclass deriving from
    this); each hook's default asks nothing."""

    def slots(self) -> SlotClaim:
        """What its tool takes of the sandbox slots."""
        return SlotClaim()

    def jail_paths(self) -> tuple[str, ...]:
        """Host paths its jailed processes need that the system's part of a jail's root
        (sandbox/root.py BASE_ROOT) lacks: every jail shows them, read-only."""
        return ()

    def validate(self) -> None:
        """Checks the section's own values; raises ConfigError."""

    def validate_with(self, settings: CoreSettings) -> None:
        """Checks the section against the other sections; raises ConfigError."""


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 50051
    advertise_address: str = ""                # "host:port" other machines reach this replica at
                                               # (sessions are pinned to it); empty: host:port, or
                                               # this machine's address when host is 0.0.0.0
    max_message_bytes: int = 4 * 1024 * 1024   # larger requests get RESOURCE_EXHAUSTED
    max_stream_inflight: int = 256             # calls of one ExecuteStream running at once
    drain_timeout_s: float = 30.0              # SIGTERM: how long in-flight calls may finish
    log_level: str = "INFO"                    # DEBUG adds a line per answered call
    log_format: str = "text"                   # "json": one object a line, with request ids
    tls_cert: str = ""                         # PEM certificate chain; with tls_key: serve TLS only
    tls_key: str = ""                          # PEM private key of tls_cert
    tls_client_ca: str = ""                    # PEM CA bundle: clients must present a certificate
                                               # it signed (mutual TLS)


@dataclass(frozen=True)
class HttpSettings:
    """The HTTP fronts' listener and what it takes from a client (docs/security.md, "HTTP fronts")."""

    port: int = 0                     # the HTTP fronts (SandboxFusion's /run_code); 0: off
    host: str = "127.0.0.1"           # beyond loopback: tokens or --allow-open-bind, as for gRPC
    max_connections: int = 1024       # open at once; past it a new one is answered 503 and closed.
                                      # The descriptors they need are budgeted apart from gRPC's
    header_timeout_s: float = 10.0    # a request's line and headers arrive within this (else 408)
    idle_timeout_s: float = 5.0       # a kept-alive connection with no request in it is closed after this
    body_timeout_s: float = 60.0      # a request's body arrives within this of its headers (else 408)
    send_timeout_s: float = 60.0      # a client that reads none of its answer for this long is dropped
    max_header_kb: int = 64           # request line and headers together (else 431)
    max_body_mb: int = 8              # one call's request (twice server.max_message_bytes' default,
                                      # for JSON escapes and base64 files); else 413
    max_batch_body_mb: int = 64       # a code-judge batch: 1,024 items of 64 KiB of code
    max_bodies_mb: int = 512          # all bodies being read or parsed at once; past it 503
    max_json_values: int = 200_000    # values in one body (a batch of 4,096 items uses ~30,000)
    max_json_depth: int = 64          # nesting of one body's arrays and objects
    allowed_origins: tuple[str, ...] = ()  # browser origins (scheme://host[:port]) whose requests are
                                      # served; empty: none (a request with an Origin header is 403)
    allowed_hosts: tuple[str, ...] = ()    # Host names served besides loopback's and the bound one;
                                      # "*": any (a server bound beyond loopback with tokens needs
                                      # none: a rebound page has no token)


@dataclass(frozen=True)
class MetricsSettings:
    enabled: bool = True              # Prometheus metrics over HTTP (toolserver/metrics.py)
    host: str = "127.0.0.1"           # scrapers beyond loopback: set the pod or host address
    port: int = 9464                  # the port registered for Prometheus exporters' use


@dataclass(frozen=True)
class AuthSettings:
    policy_file: str = ""             # TOML of [callers.NAME] policies (toolserver/policy.py);
                                      # empty: no tokens, one open policy, loopback only
    allow_open_bind: bool = False     # listen beyond loopback without tokens or mutual TLS
                                      # (the CLI flag --allow-open-bind); anyone reaching the
                                      # port may then run code


SectionType = TypeVar("SectionType", bound=ToolSection)


@dataclass(frozen=True)
class CoreSettings:
    """The sections every server has; tools' sections are added by compose_settings."""

    server: ServerSettings = field(default_factory=ServerSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    limits: LimitCaps = field(default_factory=LimitCaps)
    defaults: DefaultLimits = field(default_factory=DefaultLimits)

    def section(self, kind: type[SectionType]) -> SectionType:
        """The tool section of type kind: how a tool reads its own, typed (a type checker sees
        its fields, where an attribute of the composed class is invisible to it)."""
        for _, section in self.tool_sections():
            if type(section) is kind:
                return section
        raise KeyError(f"these settings have no {kind.__name__} section")

    def tool_sections(self) -> Iterator[tuple[str, ToolSection]]:
        """The tools' sections by name, in the order their tools take slots."""
        core = {f.name for f in dataclasses.fields(CoreSettings)}
        for section in dataclasses.fields(self):
            if section.name not in core:
                yield section.name, getattr(self, section.name)

    def slot_claims(self) -> dict[str, SlotClaim]:
        """What each section that takes slots claims, by section name."""
        return {name: claim for name, section in self.tool_sections() if (claim := section.slots()) != SlotClaim()}

    def needed_slots(self) -> int:
        """The slots the server needs to serve: the self-test's and each tool's needed ones."""
        return 1 + sum(claim.needed for claim in self.slot_claims().values())

    def free_slots(self) -> int:
        """The slots no tool claims (needed, held or wanted)."""
        claims = self.slot_claims().values()
        return (self.sandbox.slots - self.needed_slots() - sum(claim.held for claim in claims)
                - sum(claim.wanted for claim in claims))

    def validate(self) -> "CoreSettings":
        """Checks values and their consistency; returns self or raises ConfigError."""
        positive = {
            "server.port": self.server.port, "server.max_message_bytes": self.server.max_message_bytes,
            "server.max_stream_inflight": self.server.max_stream_inflight,
            "sandbox.slots": self.sandbox.slots,
            "sandbox.jail_max_processes": self.sandbox.jail_max_processes,
            "limits.timeout_ms": self.limits.timeout_ms, "limits.memory_mb": self.limits.memory_mb,
            "limits.max_output_bytes": self.limits.max_output_bytes,
            "limits.max_processes": self.limits.max_processes, "limits.max_file_mb": self.limits.max_file_mb,
            "limits.max_open_files": self.limits.max_open_files,
            "limits.max_scratch_mb": self.limits.max_scratch_mb,
            "limits.max_scratch_files": self.limits.max_scratch_files,
            "defaults.timeout_ms": self.defaults.timeout_ms, "defaults.memory_mb": self.defaults.memory_mb,
            "defaults.max_output_bytes": self.defaults.max_output_bytes,
        }
        for name, value in positive.items():
            if value <= 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        if not 0 <= self.metrics.port <= 65535:
            raise ConfigError(f"metrics.port must be 0-65535 (0: any free port), got {self.metrics.port}")
        if not 0 <= self.http.port <= 65535:
            raise ConfigError(f"http.port must be 0-65535 (0: no HTTP fronts), got {self.http.port}")
        require_positive("http", self.http, ("max_connections", "header_timeout_s", "idle_timeout_s", "body_timeout_s",
                                             "send_timeout_s", "max_header_kb", "max_body_mb", "max_batch_body_mb",
                                             "max_bodies_mb", "max_json_values", "max_json_depth"))
        if max(self.http.max_body_mb, self.http.max_batch_body_mb) > self.http.max_bodies_mb:
            raise ConfigError("http.max_bodies_mb must hold at least one body of the largest size (http.max_body_mb, "
                              "http.max_batch_body_mb)")
        if self.server.port > 65535:
            raise ConfigError(f"server.port must be at most 65535, got {self.server.port}")
        if self.sandbox.first_slot < 0:
            raise ConfigError("sandbox.first_slot must not be negative")
        if loose := [path for path in self.sandbox.jail_paths if not os.path.isabs(path)]:
            raise ConfigError(f"sandbox.jail_paths must be absolute paths, got {loose}")
        for name in ("timeout_ms", "memory_mb", "max_output_bytes"):
            if getattr(self.defaults, name) > getattr(self.limits, name):
                raise ConfigError(f"defaults.{name} ({getattr(self.defaults, name)}) exceeds "
                                  f"limits.{name} ({getattr(self.limits, name)})")
        if self.limits.max_processes > self.sandbox.jail_max_processes:
            raise ConfigError("limits.max_processes exceeds sandbox.jail_max_processes")
        if not os.path.isabs(self.sandbox.scratch_root):
            raise ConfigError("sandbox.scratch_root must be an absolute path")
        if self.sandbox.memory_cgroup not in ("auto", "required", "off"):
            raise ConfigError(f"sandbox.memory_cgroup must be auto, required or off, got {self.sandbox.memory_cgroup!r}")
        if bool(self.server.tls_cert) != bool(self.server.tls_key):
            raise ConfigError("server.tls_cert and server.tls_key go together")
        if self.server.tls_client_ca and not self.server.tls_cert:
            raise ConfigError("server.tls_client_ca needs server.tls_cert and server.tls_key")
        if self.server.log_format not in ("text", "json"):
            raise ConfigError(f"server.log_format must be text or json, got {self.server.log_format!r}")
        if self.server.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ConfigError("server.log_level must be DEBUG, INFO, WARNING or ERROR")
        check_interpreter("sandbox.interpreter", self.sandbox.interpreter, self)
        for _, section in self.tool_sections():
            section.validate()
            section.validate_with(self)
        claims = self.slot_claims()
        needed = self.needed_slots() + sum(claim.held for claim in claims.values())
        if self.sandbox.slots < needed:
            detail = ", ".join(f"{name} {claim.needed + claim.held}" for name, claim in claims.items())
            raise ConfigError(f"sandbox.slots ({self.sandbox.slots}) must cover 1 for the self-test and the slots "
                              f"the tools need and hold ({needed}: {detail})")
        return self


def require_positive(section: str, values: Any, names: Iterable[str]) -> None:
    """Refuses a setting of section (values: its dataclass) among names that is not above 0."""
    for name in names:
        if getattr(values, name) <= 0:
            raise ConfigError(f"{section}.{name} must be positive, got {getattr(values, name)}")


def hidden_by_the_jail(path: str) -> str | None:
    """The host directory the jail hides that path lies in, if any."""
    resolved = os.path.realpath(path)
    return next((top for top in JAIL_HIDES if resolved == top or resolved.startswith(top + "/")), None)


def check_interpreter(name: str, path: str, settings: CoreSettings) -> None:
    """Refuses an interpreter a jail cannot see."""
    if not os.path.isabs(path):
        raise ConfigError(f"{name} must be an absolute path (the jail has no PATH), got {path!r}")
    hidden = hidden_by_the_jail(path)
    if hidden and not settings.sandbox.insecure_no_sandbox:
        raise ConfigError(f"{name} {path} lies under {hidden}, which the jail hides: use a virtual "
                          "environment elsewhere (scripts/setup.sh makes one)")


def compose_settings(sections: Mapping[str, type[ToolSection]], module: str) -> type[CoreSettings]:
    """The settings class `Settings` of module for a server whose tools own sections (by
    name, in slot order)."""
    clash = sorted(set(sections) & {f.name for f in dataclasses.fields(CoreSettings)})
    if clash:
        raise ValueError(f"tool settings section(s) {', '.join(clash)} clash with the server's own")
    loose = sorted(name for name, kind in sections.items() if not issubclass(kind, ToolSection))
    if loose:
        raise ValueError(f"tool settings section(s) {', '.join(loose)} do not derive from ToolSection")
    fields = [(name, kind, field(default_factory=kind)) for name, kind in sections.items()]
    return dataclasses.make_dataclass("Settings", fields, bases=(CoreSettings,), frozen=True,
                                      namespace={"__module__": module})


def _build(cls: type, values: dict[str, Any], path: str) -> Any:
    """Builds dataclass cls from a TOML table, rejecting unknown keys and wrong types."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown setting{'s' if len(unknown) > 1 else ''} in [{path}]: {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    defaults = cls()
    for name, value in values.items():
        default = getattr(defaults, name)
        where = f"{path}.{name}" if path else name
        if dataclasses.is_dataclass(default):
            if not isinstance(value, dict):
                raise ConfigError(f"[{where}] must be a table")
            kwargs[name] = _build(type(default), value, where)
            continue
        if isinstance(default, dict):  # named tables, added to (or replacing) the defaults by name
            kind = type(next(iter(default.values())))
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"[{where}] must hold tables ([{where}.NAME])")
            value = {**default, **{key: _build(kind, v, f"{where}.{key}") for key, v in value.items()}}
        elif isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where} must be a list of strings")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{where} must be a number")
            value = float(value)
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where} must be an integer")
        elif isinstance(default, str) and not isinstance(value, str):
            raise ConfigError(f"{where} must be a string")
        kwargs[name] = value
    return cls(**kwargs)


def read_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The TOML file at path; raises ConfigError naming what it is."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {path} is not valid TOML: {exc}") from exc


SettingsType = TypeVar("SettingsType", bound=CoreSettings)


def load_settings(kind: type[SettingsType], path: str | os.PathLike[str] | None = None,
                  **overrides: Any) -> SettingsType:
    """kind's embedded defaults, overridden by the TOML file at path, then by overrides.

    overrides are dotted names, e.g. {"server.port": 0}; they come from CLI flags.
    """
    values = read_toml(path, "config") if path is not None else {}
    for dotted, value in overrides.items():
        section, _, name = dotted.partition(".")
        values.setdefault(section, {})[name] = value
    settings: SettingsType = _build(kind, values, "")
    settings.validate()
    return settings
