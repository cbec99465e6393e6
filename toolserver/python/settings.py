"""Settings of the python tool: [python] (its workers, their preloads, the import
profiles of the guard) and [sessions] (its stateful sessions).

Only the values and their checks live here; starting workers is the executor's job.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from sandbox.root import interpreter_paths
from toolserver.config import (
    RUNTIME_INTERPRETER,
    CoreSettings,
    SlotClaim,
    ToolSection,
    check_interpreter,
    require_positive,
)
from toolserver.cpus import available_cpus
from toolserver.errors import ConfigError
from toolserver.jails import Runtime

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
# What the session zygote imports: the data stack (a session's first `import pandas` costs
# what a call's does: nothing). IPython's shell and pyplot's inline backend it imports
# whatever the preload, as it makes the shell (sandbox/inside/notebook.py make_shell).
SESSION_PRELOAD = SCIENTIFIC_PRELOAD
# Workers per CPU when python.workers is 0: one runs while the other's call crosses the
# pipe, and more only queue (toolserver bench, docs/speed.md).
WORKERS_PER_CPU = 2
MAX_AUTO_WORKERS = 16
MEMORY_PER_WORKER_MB = 256  # of the machine's memory, for python.max_workers = 0


def machine_memory_mb() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20


@dataclass(frozen=True)
class PythonSettings(ToolSection):
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
                                      # takes (toolserver/zygotes/scheduler.py); 0: every such slot,
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

    def runtime(self) -> Runtime:
        """The calls' runtime: what the tool's zygotes and sessions start on."""
        return Runtime(interpreter=self.interpreter, huge_pages=self.huge_pages, start_timeout_s=self.start_timeout_s)

    def jail_paths(self) -> tuple[str, ...]:
        """The interpreter its zygotes start on."""
        return interpreter_paths(self.interpreter)

    def slots(self) -> SlotClaim:
        """Every worker of the three classes needs its slot to serve."""
        return SlotClaim(needed=self.warm_count() + self.slim_count() + self.scientific_count())

    def extra_worker_slots(self, settings: CoreSettings) -> int:
        """The slots the pools may grow onto: those no tool claims, within max_workers."""
        workers = self.slots().needed
        cap = self.max_workers or machine_memory_mb() // MEMORY_PER_WORKER_MB
        return max(0, min(settings.free_slots(), cap - workers))

    def validate_with(self, settings: CoreSettings) -> None:
        check_interpreter("python.interpreter", self.interpreter, settings)

    def validate(self) -> None:
        require_positive("python", self, ("max_queue", "recycle_after", "extra_idle_s"))
        for name in ("workers", "slim_workers", "scientific_workers", "max_workers"):
            if getattr(self, name) < 0:
                raise ConfigError(f"python.{name} must not be negative")
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
class SessionSettings(ToolSection):
    max_sessions: int = 256           # open sessions, each in a jail of its own slot; past it
                                      # RESOURCE_EXHAUSTED
    ready: int = 64                   # sessions made ahead (jail started, process forked and
                                      # joined): OpenSession hands one over; past them, an open
                                      # waits for one to be made (~0.15 s of CPU each here). The
                                      # pool keeps more while a larger batch was asked for lately;
                                      # 0: none made ahead, the batch not learned either
    keep_peak_s: float = 900.0        # how long the largest batch (sessions open at once) is kept
                                      # ready for after it was last reached: a training step's batch
                                      # finds its sessions made ahead at the next step; past this
                                      # the extra ones are given back (~4 MB of PSS and a slot each)
    recycle_jails: bool = True        # a closed session's jail serves the next session made ahead on
                                      # its slot: its processes killed, its memory cgroup's charge
                                      # reset, its writable places wiped (a make then skips starting
                                      # firejail); needs memory cgroups, else every jail is new
    idle_timeout_s: int = 600         # a session unused this long is closed (an eviction)
    start_timeout_s: float = 60.0     # for the session zygote to warm, and a session to start
    memory_mb: int = 1024             # memory a session may add to the warm process: its address
                                      # space, and all its processes together with a memory
                                      # cgroup; OpenSession may ask for less
    preload: tuple[str, ...] = SESSION_PRELOAD  # imported by the session zygote before it forks
                                      # sessions: a cell that uses them pays no import
    max_display_bytes: int = 8 << 20  # what one cell displayed (figures, tables, IPython.display
                                      # objects) comes back up to this many bytes of JSON, whole
                                      # bundles; the rest is left out and the answer says truncated

    def slots(self) -> SlotClaim:
        """A session holds its slot while open or ready: the slots are set aside at start."""
        return SlotClaim(held=self.max_sessions)

    def validate(self) -> None:
        require_positive("sessions", self, ("idle_timeout_s", "memory_mb", "keep_peak_s", "max_display_bytes"))
        if self.max_sessions < 0:
            raise ConfigError("sessions.max_sessions must not be negative")
        if self.ready < 0:
            raise ConfigError("sessions.ready must not be negative")
