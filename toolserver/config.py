"""One validated settings object for the whole server, with safe defaults.

The defaults are the embedded config `toolserver serve` runs on; a TOML file passed
with `--config` overrides any of them (unknown keys are an error, not a typo silently
ignored). Every limit is one field with its default and the reason for it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolserver.lean.settings import LeanSettings
from toolserver.search.settings import SearchSettings


class ConfigError(ValueError):
    """The settings are invalid; the message names the field."""


@dataclass(frozen=True)
class CallLimits:
    """Limits of one call. Callers may ask for less (Limits in the request), never more."""

    timeout_ms: int = 10_000          # wall time; CPU time is capped at the same plus 1 s
    memory_mb: int = 1024             # address space on top of the warm interpreter
    max_output_bytes: int = 65_536    # per stream (stdout, stderr); the rest is dropped
    max_processes: int = 32           # RLIMIT_NPROC for the call (threads count too)
    max_file_mb: int = 16             # RLIMIT_FSIZE: largest file a call may write
    max_open_files: int = 128         # RLIMIT_NOFILE
    max_scratch_mb: int = 256         # scratch (a RAM-backed tmpfs) a call may fill; the
                                      # zygote kills the call past it


@dataclass(frozen=True)
class DefaultLimits:
    """What a call gets when its request leaves a limit at 0."""

    timeout_ms: int = 5_000
    memory_mb: int = 512
    max_output_bytes: int = 16_384


@dataclass(frozen=True)
class SandboxSettings:
    firejail: str = "firejail"
    user_prefix: str = "tsbox"        # slot users tsbox0..; made by `toolserver setup-sandbox`
    slots: int = 64                   # slot users this server uses: workers + self-test + sessions,
                                      # then up to lean.max_repls Lean REPLs from what is left
    first_slot: int = 0               # index of its first slot user: servers sharing a host
                                      # must use disjoint ranges (each kills its slots' processes)
    scratch_root: str = "/var/lib/toolserver/scratch"
    ipc_root: str = "/var/lib/toolserver/ipc"  # kernels' ZeroMQ sockets, one directory per slot
    jail_max_processes: int = 64      # firejail --rlimit-nproc, per slot uid
    jail_memory_mb: int = 0           # firejail --rlimit-as for a whole worker; 0: per call only
    hidden_paths: tuple[str, ...] = ()  # extra paths blacklisted inside every jail
    insecure_no_sandbox: bool = False  # run without firejail; only with the explicit CLI flag
    self_test: bool = True             # run the jail probe at start-up (fail closed)


ALLOWED_IMPORTS = (
    # numbers and mathematics
    "math", "cmath", "decimal", "fractions", "numbers", "random", "statistics", "sympy", "numpy", "mpmath",
    "gmpy2", "scipy", "networkx",
    # data structures and algorithms
    "itertools", "functools", "operator", "collections", "heapq", "bisect", "array", "copy", "graphlib",
    "dataclasses", "enum", "typing", "abc", "contextlib", "types", "weakref", "queue",
    # text and data
    "string", "re", "textwrap", "unicodedata", "difflib", "json", "csv", "base64", "binascii", "struct",
    "hashlib", "hmac", "secrets", "zlib", "pprint", "reprlib", "io", "codecs",
    # time, the interpreter, files in the call's scratch directory
    "datetime", "calendar", "time", "timeit", "sys", "os", "pathlib", "tempfile", "warnings", "traceback",
    "threading", "__future__",
)
DENIED_IMPORTS = (
    # the network
    "socket", "_socket", "ssl", "_ssl",
    # other processes
    "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing", "pty",
    # native code and raw memory
    "ctypes", "_ctypes", "cffi", "_cffi_backend", "fcntl", "termios",
)


@dataclass(frozen=True)
class PythonSettings:
    workers: int = 4                  # warm jailed zygotes
    interpreter: str = sys.executable  # must be visible inside the jail (not under /root)
    preload: tuple[str, ...] = ("sympy", "numpy", "mpmath", "fractions", "itertools", "math",
                                "collections", "functools", "re", "json", "decimal", "statistics")
    import_guard: bool = True         # the Python-level policy of sandbox/guard.py (the jail
                                      # holds without it; it makes refusals clear: DENIED)
    allowed_imports: tuple[str, ...] = ALLOWED_IMPORTS  # top-level modules a call's code may import
    denied_imports: tuple[str, ...] = DENIED_IMPORTS    # modules nobody in a call may import
    huge_pages: bool = True           # collapse the warm heap into 2 MB pages (Linux 6.1+):
                                      # each fork and exit costs ~1.5 ms less
    max_queue: int = 1024             # calls waiting for a worker; past it RESOURCE_EXHAUSTED
    worker_grace_s: float = 5.0       # a worker that overruns the call's timeout by this is hung
    start_timeout_s: float = 60.0     # to start one zygote (imports included)
    recycle_after: int = 5000         # calls before a worker is replaced by a fresh one


@dataclass(frozen=True)
class SessionSettings:
    max_sessions: int = 4             # open Jupyter kernels; past it RESOURCE_EXHAUSTED
    idle_timeout_s: int = 600         # a session unused this long is closed
    start_timeout_s: float = 60.0     # for a kernel to answer kernel_info
    memory_mb: int = 2048             # firejail --rlimit-as of each kernel (address space; a kernel
                                      # with sympy and numpy loaded maps about 370 MB); 0: none


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


@dataclass(frozen=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    lean: LeanSettings = field(default_factory=LeanSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    python: PythonSettings = field(default_factory=PythonSettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    limits: CallLimits = field(default_factory=CallLimits)
    defaults: DefaultLimits = field(default_factory=DefaultLimits)

    def validate(self) -> "Settings":
        """Checks values and their consistency; returns self or raises ConfigError."""
        positive = {
            "server.port": self.server.port, "server.max_message_bytes": self.server.max_message_bytes,
            "server.max_stream_inflight": self.server.max_stream_inflight,
            "sandbox.slots": self.sandbox.slots,
            "sandbox.jail_max_processes": self.sandbox.jail_max_processes,
            "python.workers": self.python.workers, "python.max_queue": self.python.max_queue,
            "python.recycle_after": self.python.recycle_after,
            "sessions.idle_timeout_s": self.sessions.idle_timeout_s,
            "limits.timeout_ms": self.limits.timeout_ms, "limits.memory_mb": self.limits.memory_mb,
            "limits.max_output_bytes": self.limits.max_output_bytes,
            "limits.max_processes": self.limits.max_processes, "limits.max_file_mb": self.limits.max_file_mb,
            "limits.max_open_files": self.limits.max_open_files,
            "limits.max_scratch_mb": self.limits.max_scratch_mb,
            "defaults.timeout_ms": self.defaults.timeout_ms, "defaults.memory_mb": self.defaults.memory_mb,
            "defaults.max_output_bytes": self.defaults.max_output_bytes,
        }
        for name, value in positive.items():
            if value <= 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        if not 0 <= self.metrics.port <= 65535:
            raise ConfigError(f"metrics.port must be 0-65535 (0: any free port), got {self.metrics.port}")
        if self.server.port > 65535:
            raise ConfigError(f"server.port must be at most 65535, got {self.server.port}")
        if self.sessions.max_sessions < 0:
            raise ConfigError("sessions.max_sessions must not be negative")
        if self.sandbox.first_slot < 0:
            raise ConfigError("sandbox.first_slot must not be negative")
        for name in ("timeout_ms", "memory_mb", "max_output_bytes"):
            if getattr(self.defaults, name) > getattr(self.limits, name):
                raise ConfigError(f"defaults.{name} ({getattr(self.defaults, name)}) exceeds "
                                  f"limits.{name} ({getattr(self.limits, name)})")
        if self.limits.max_processes > self.sandbox.jail_max_processes:
            raise ConfigError("limits.max_processes exceeds sandbox.jail_max_processes")
        needed = self.python.workers + 1 + self.sessions.max_sessions
        if self.sandbox.slots < needed:
            raise ConfigError(f"sandbox.slots ({self.sandbox.slots}) must cover python.workers + 1 for the "
                              f"self-test + sessions.max_sessions ({needed})")
        if self.limits.max_output_bytes * 4 > self.server.max_message_bytes:
            raise ConfigError("limits.max_output_bytes is too large for server.max_message_bytes")
        for name in ("scratch_root", "ipc_root"):
            if not os.path.isabs(getattr(self.sandbox, name)):
                raise ConfigError(f"sandbox.{name} must be an absolute path")
        if Path(self.python.interpreter).resolve().is_relative_to("/root") and not self.sandbox.insecure_no_sandbox:
            raise ConfigError(f"python.interpreter {self.python.interpreter} lies under /root, which the "
                              "jail hides: use a virtual environment elsewhere (scripts/setup.sh makes one)")
        if bool(self.server.tls_cert) != bool(self.server.tls_key):
            raise ConfigError("server.tls_cert and server.tls_key go together")
        if self.server.tls_client_ca and not self.server.tls_cert:
            raise ConfigError("server.tls_client_ca needs server.tls_cert and server.tls_key")
        clash = sorted(set(self.python.allowed_imports) & set(self.python.denied_imports))
        if clash:
            raise ConfigError(f"python.allowed_imports and python.denied_imports both name {', '.join(clash)}")
        if self.python.import_guard:
            unlisted = sorted({name.partition(".")[0] for name in self.python.preload}
                              - set(self.python.allowed_imports))
            if unlisted:
                raise ConfigError(f"python.preload names modules that python.allowed_imports does not: "
                                  f"{', '.join(unlisted)}")
        self.search.validate()
        self.lean.validate()
        if self.server.log_format not in ("text", "json"):
            raise ConfigError(f"server.log_format must be text or json, got {self.server.log_format!r}")
        if self.server.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ConfigError("server.log_level must be DEBUG, INFO, WARNING or ERROR")
        return self


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
        if isinstance(default, tuple):
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


def load_settings(path: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """The embedded defaults, overridden by the TOML file at path, then by overrides.

    overrides are dotted names, e.g. {"server.port": 0}; they come from CLI flags.
    """
    values = read_toml(path, "config") if path is not None else {}
    for dotted, value in overrides.items():
        section, _, name = dotted.partition(".")
        values.setdefault(section, {})[name] = value
    return _build(Settings, values, "").validate()
