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

from toolserver.cpus import available_cpus
from toolserver.errors import ConfigError
from toolserver.lean.settings import LeanSettings
from toolserver.search.settings import SearchSettings

__all__ = ["ConfigError", "Settings", "load_settings", "read_toml"]

# The host values that bind loopback only, and those that bind every interface.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "[::1]", "localhost"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


@dataclass(frozen=True)
class LimitCaps:
    """The server's caps on one call ([limits]). Callers may ask for less (Limits in the
    request), never more; what one call gets is sandbox.calls.CallLimits."""

    timeout_ms: int = 10_000          # wall time; CPU time is capped at the same plus 1 s
    memory_mb: int = 1024             # address space on top of the warm interpreter
    max_output_bytes: int = 65_536    # per stream (stdout, stderr); the rest is dropped
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
    memory_cgroup: str = "auto"       # a memory cgroup per slot caps all of a call's or a session's
                                      # processes together: "auto" (when the host allows it: root and
                                      # cgroup v1 memory), "required" (refuse to serve without), "off"
    jail_max_processes: int = 64      # firejail --rlimit-nproc, per slot uid
    jail_memory_mb: int = 0           # firejail --rlimit-as for a whole worker; 0: per call only
    hidden_paths: tuple[str, ...] = ()  # extra paths blacklisted inside every jail
    insecure_no_sandbox: bool = False  # run without firejail; only with the explicit CLI flag
    self_test: bool = True             # run the jail probe at start-up (fail closed)


# The strict profile's allow-list: the standard library's computational modules and the
# scientific packages; everything else is refused when the call's own code imports it by name.
STRICT_IMPORTS = (
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
EVERY_MODULE = "*"  # an allow-list of every module that is not denied
# What the guarded and strict profiles deny: raw native memory (ctypes, cffi) and
# _posixsubprocess, whose fork_exec starts processes without an audit event. Scientific
# libraries load their native parts through these (scipy, pandas, scikit-learn, numba,
# torch): a call in such a profile cannot use them.
DENIED_IMPORTS = ("ctypes", "_ctypes", "cffi", "_cffi_backend", "_posixsubprocess")


@dataclass(frozen=True)
class ImportProfile:
    """What the Python-level guard (sandbox/guard.py) refuses to a call of this profile,
    on top of the jail. The default refuses nothing: a call runs as a plain python3 would."""

    imports: tuple[str, ...] = (EVERY_MODULE,)  # top-level modules the call's own code may import by
                                                # name; ["*"]: every module not denied
    denied_imports: tuple[str, ...] = ()        # modules nothing in the call may load, by any path
    refuse_actions: bool = False                # refuse the network, new processes, signals to other
                                                # processes, code objects built by hand, marshal of the
                                                # call's own bytes, gc object walks, /proc/*/mem


def default_import_profiles() -> dict[str, ImportProfile]:
    """open: nothing refused, the jail is the boundary (the default). guarded: no native
    memory, no new process, no network even where the jail would allow it. strict: guarded,
    and the call's own code imports only STRICT_IMPORTS."""
    return {"open": ImportProfile(),
            "guarded": ImportProfile(denied_imports=DENIED_IMPORTS, refuse_actions=True),
            "strict": ImportProfile(imports=STRICT_IMPORTS, denied_imports=DENIED_IMPORTS, refuse_actions=True)}


# Where scripts/setup.sh and the image build the calls' runtime (sandbox/runtime/).
RUNTIME_INTERPRETER = "/opt/toolserver/runtime/bin/python"
# What warm zygotes import before they fork: what math programs use. Each module a zygote
# preloads makes every fork and exit of it dearer (the heap's page tables), so the data
# stack has zygotes of its own.
WARM_PRELOAD = (
    "sympy", "numpy", "mpmath", "fractions", "itertools", "math", "collections", "functools", "re", "json",
    "decimal", "statistics",
)
# What scientific zygotes import: the warm preload and the data stack, each package with
# the submodules programs import by name. A zygote that cannot import one serves without
# it (its hello says which failed).
SCIENTIFIC_PRELOAD = WARM_PRELOAD + (
    "scipy", "scipy.stats", "scipy.optimize", "scipy.special", "scipy.linalg", "scipy.integrate", "scipy.sparse",
    "scipy.spatial", "scipy.interpolate", "scipy.signal",
    "pandas",
    "sklearn", "sklearn.linear_model", "sklearn.model_selection", "sklearn.preprocessing", "sklearn.metrics",
    "sklearn.ensemble", "sklearn.tree", "sklearn.cluster", "sklearn.datasets", "sklearn.decomposition",
    "sklearn.neighbors", "sklearn.svm", "sklearn.pipeline",
    "matplotlib", "matplotlib.pyplot", "seaborn", "statsmodels.api", "networkx",
)
# Workers per CPU when python.workers is 0: one runs while the other's call crosses the
# pipe, and more only queue (toolserver bench, README "Speed").
WORKERS_PER_CPU = 2
MAX_AUTO_WORKERS = 16
MEMORY_PER_WORKER_MB = 256  # of the machine's memory, for python.max_workers = 0


def machine_memory_mb() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20


@dataclass(frozen=True)
class PythonSettings:
    workers: int = 0                  # warm jailed zygotes (the preload below); 0: two per CPU
                                      # this process may use, at most 16
    interpreter: str = RUNTIME_INTERPRETER  # the calls' runtime: its own environment, not the
                                      # server's (scripts/setup.sh builds it from
                                      # sandbox/runtime/requirements.txt); visible in the jail
    preload: tuple[str, ...] = WARM_PRELOAD  # imported by warm zygotes before they fork: a call
                                      # that uses them pays no import
    slim: bool = True                 # also run slim zygotes (the standard library only), which
                                      # fork and exit faster: a call whose code imports nothing
                                      # else runs there, and one that reaches for another module
                                      # is run again on a warm zygote (toolserver/python/routing.py)
    slim_workers: int = 0             # slim zygotes; 0: as many as warm ones
    slim_preload: tuple[str, ...] = ("fractions", "itertools", "math", "collections", "functools", "re", "json",
                                     "decimal", "statistics")  # standard modules only
    scientific: bool = True           # also run scientific zygotes, which preload the data stack
                                      # (scipy, pandas, scikit-learn, matplotlib, ...): a call whose
                                      # code names one of those runs there and pays no import
    scientific_workers: int = 0       # scientific zygotes; 0: as many as warm ones
    scientific_preload: tuple[str, ...] = SCIENTIFIC_PRELOAD
    import_profile: str = "open"      # the profile of callers whose policy names none
    import_profiles: dict[str, ImportProfile] = field(default_factory=default_import_profiles)
                                      # [python.import_profiles.NAME] tables add to or replace
                                      # "open", "guarded" and "strict"
    huge_pages: bool = True           # collapse the warm heap into 2 MB pages (Linux 6.1+):
                                      # each fork and exit costs ~1.5 ms less
    max_workers: int = 0              # stateless workers at most, every class and the extra ones
                                      # together: while calls wait on workers held by long calls
                                      # (loops, sleeps), pools grow onto the slots nothing else
                                      # takes (toolserver/python/scheduler.py); 0: every such slot,
                                      # at most one worker per 256 MB of the machine's memory
    extra_idle_s: float = 30.0        # an extra worker idle this long is stopped, its slot freed
    max_queue: int = 1024             # calls waiting for a worker; past it RESOURCE_EXHAUSTED
    worker_grace_s: float = 5.0       # a worker that overruns the call's timeout by this is hung
    start_timeout_s: float = 60.0     # to start one zygote (imports included)
    recycle_after: int = 20_000       # calls before a worker is replaced by a fresh one, give or take
                                      # a quarter (drawn per worker, so that workers started together
                                      # are not replaced together: a warm start costs about a second
                                      # of CPU, during which the worker serves nobody)


    def warm_count(self) -> int:
        return self.workers or min(WORKERS_PER_CPU * available_cpus(), MAX_AUTO_WORKERS)

    def slim_count(self) -> int:
        return (self.slim_workers or self.warm_count()) if self.slim else 0

    def scientific_count(self) -> int:
        return (self.scientific_workers or self.warm_count()) if self.scientific else 0

    def allow_list(self, profile: str) -> tuple[str, ...] | None:
        """The modules the profile lets a call's own code import; None: every one not denied."""
        names = self.import_profiles[profile].imports
        return None if EVERY_MODULE in names else names

    def validate_imports(self) -> None:
        if self.import_profile not in self.import_profiles:
            raise ConfigError(f"python.import_profile {self.import_profile!r} is not one of python.import_profiles "
                              f"({', '.join(sorted(self.import_profiles))})")
        for name, profile in self.import_profiles.items():
            if not profile.imports:
                raise ConfigError(f"python.import_profiles.{name}.imports is empty; [\"{EVERY_MODULE}\"] allows "
                                  "every module")
            if EVERY_MODULE in profile.imports and len(profile.imports) > 1:
                raise ConfigError(f"python.import_profiles.{name}.imports: \"{EVERY_MODULE}\" stands alone")
            clash = sorted(set(profile.imports) & set(profile.denied_imports))
            if clash:
                raise ConfigError(f"python.import_profiles.{name} allows denied module(s) {', '.join(clash)}")
        outside = sorted({name.partition(".")[0] for name in self.slim_preload} - sys.stdlib_module_names)
        if outside:
            raise ConfigError(f"python.slim_preload names module(s) outside the standard library: {', '.join(outside)}")


@dataclass(frozen=True)
class SessionSettings:
    max_sessions: int = 4             # open Jupyter kernels; past it RESOURCE_EXHAUSTED
    idle_timeout_s: int = 600         # a session unused this long is closed
    start_timeout_s: float = 60.0     # for a kernel to answer kernel_info
    memory_mb: int = 1024             # memory a session may add to its warm kernel (~370 MB mapped):
                                      # each process's address space, and all its processes together
                                      # with a memory cgroup; OpenSession may ask for less


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


@dataclass(frozen=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    lean: LeanSettings = field(default_factory=LeanSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    python: PythonSettings = field(default_factory=PythonSettings)
    sessions: SessionSettings = field(default_factory=SessionSettings)
    limits: LimitCaps = field(default_factory=LimitCaps)
    defaults: DefaultLimits = field(default_factory=DefaultLimits)

    def worker_slots(self) -> int:
        """The sandbox slots the python workers (warm, slim, scientific) and the self-test take."""
        return self.python.warm_count() + self.python.slim_count() + self.python.scientific_count() + 1

    def extra_worker_slots(self) -> int:
        """The slots the python pools may grow onto: those the base workers, the sessions and
        the Lean REPLs leave, within python.max_workers."""
        lean = self.lean.max_repls if self.lean.enabled else 0
        left = self.sandbox.slots - self.worker_slots() - self.sessions.max_sessions - lean
        cap = self.python.max_workers or machine_memory_mb() // MEMORY_PER_WORKER_MB
        return max(0, min(left, cap - (self.worker_slots() - 1)))

    def validate(self) -> "Settings":
        """Checks values and their consistency; returns self or raises ConfigError."""
        positive = {
            "server.port": self.server.port, "server.max_message_bytes": self.server.max_message_bytes,
            "server.max_stream_inflight": self.server.max_stream_inflight,
            "sandbox.slots": self.sandbox.slots,
            "sandbox.jail_max_processes": self.sandbox.jail_max_processes,
            "python.max_queue": self.python.max_queue,
            "python.recycle_after": self.python.recycle_after,
            "sessions.idle_timeout_s": self.sessions.idle_timeout_s,
            "limits.timeout_ms": self.limits.timeout_ms, "limits.memory_mb": self.limits.memory_mb,
            "limits.max_output_bytes": self.limits.max_output_bytes,
            "limits.max_processes": self.limits.max_processes, "limits.max_file_mb": self.limits.max_file_mb,
            "limits.max_open_files": self.limits.max_open_files,
            "limits.max_scratch_mb": self.limits.max_scratch_mb,
            "limits.max_scratch_files": self.limits.max_scratch_files,
            "sessions.memory_mb": self.sessions.memory_mb,
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
        for name in ("max_connections", "header_timeout_s", "idle_timeout_s", "body_timeout_s", "send_timeout_s",
                     "max_header_kb",
                     "max_body_mb", "max_batch_body_mb", "max_bodies_mb", "max_json_values", "max_json_depth"):
            if getattr(self.http, name) <= 0:
                raise ConfigError(f"http.{name} must be positive, got {getattr(self.http, name)}")
        if max(self.http.max_body_mb, self.http.max_batch_body_mb) > self.http.max_bodies_mb:
            raise ConfigError("http.max_bodies_mb must hold at least one body of the largest size (http.max_body_mb, "
                              "http.max_batch_body_mb)")
        if self.server.port > 65535:
            raise ConfigError(f"server.port must be at most 65535, got {self.server.port}")
        if self.python.extra_idle_s <= 0:
            raise ConfigError(f"python.extra_idle_s must be positive, got {self.python.extra_idle_s}")
        for name in ("python.workers", "python.slim_workers", "python.scientific_workers", "python.max_workers",
                     "sessions.max_sessions"):
            section, _, field_name = name.partition(".")
            if getattr(getattr(self, section), field_name) < 0:
                raise ConfigError(f"{name} must not be negative")
        if self.sandbox.first_slot < 0:
            raise ConfigError("sandbox.first_slot must not be negative")
        for name in ("timeout_ms", "memory_mb", "max_output_bytes"):
            if getattr(self.defaults, name) > getattr(self.limits, name):
                raise ConfigError(f"defaults.{name} ({getattr(self.defaults, name)}) exceeds "
                                  f"limits.{name} ({getattr(self.limits, name)})")
        if self.limits.max_processes > self.sandbox.jail_max_processes:
            raise ConfigError("limits.max_processes exceeds sandbox.jail_max_processes")
        needed = self.worker_slots() + self.sessions.max_sessions
        if self.sandbox.slots < needed:
            raise ConfigError(f"sandbox.slots ({self.sandbox.slots}) must cover the python workers (warm, slim, scientific) "
                              f"+ 1 for the self-test + sessions.max_sessions ({needed})")
        if self.limits.max_output_bytes * 4 > self.server.max_message_bytes:
            raise ConfigError("limits.max_output_bytes is too large for server.max_message_bytes")
        if not os.path.isabs(self.sandbox.scratch_root):
            raise ConfigError("sandbox.scratch_root must be an absolute path")
        if self.sandbox.memory_cgroup not in ("auto", "required", "off"):
            raise ConfigError(f"sandbox.memory_cgroup must be auto, required or off, got {self.sandbox.memory_cgroup!r}")
        if Path(self.python.interpreter).resolve().is_relative_to("/root") and not self.sandbox.insecure_no_sandbox:
            raise ConfigError(f"python.interpreter {self.python.interpreter} lies under /root, which the "
                              "jail hides: use a virtual environment elsewhere (scripts/setup.sh makes one)")
        if bool(self.server.tls_cert) != bool(self.server.tls_key):
            raise ConfigError("server.tls_cert and server.tls_key go together")
        if self.server.tls_client_ca and not self.server.tls_cert:
            raise ConfigError("server.tls_client_ca needs server.tls_cert and server.tls_key")
        self.python.validate_imports()
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


def load_settings(path: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """The embedded defaults, overridden by the TOML file at path, then by overrides.

    overrides are dotted names, e.g. {"server.port": 0}; they come from CLI flags.
    """
    values = read_toml(path, "config") if path is not None else {}
    for dotted, value in overrides.items():
        section, _, name = dotted.partition(".")
        values.setdefault(section, {})[name] = value
    return _build(Settings, values, "").validate()
