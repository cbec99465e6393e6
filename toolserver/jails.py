"""How each kind of jailed process starts, derived from the settings in one place.

Three kinds run untrusted code: the python workers (warm zygotes; slim ones that preload
only standard modules; scientific ones that preload the data stack), the session kernels
and the Lean REPLs. They share one firejail command line (`sandbox.jail.jail_command`)
and differ only in what is derived here: a slim zygote preloads less and hands back a
call that reaches beyond the standard library, a scientific one preloads more, a kernel
caps its own address space once warm, a REPL has Lean's memory, process and file limits
and start-up time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from sandbox.jail import JailPolicy
from sandbox.worker import GuardPolicy, GuardProfile, ZygoteSpec
from toolserver.config import Settings
from toolserver.lean.settings import LeanSettings

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class JailSpecs:
    worker: ZygoteSpec  # warm python workers; also the self-test's, without the guard
    slim_worker: ZygoteSpec  # slim python workers
    scientific_worker: ZygoteSpec  # scientific python workers
    kernel: ZygoteSpec  # session kernels
    repl: ZygoteSpec    # Lean REPLs


def project_paths() -> list[str]:
    """What jails must not see of the project: the whole source tree when it runs from
    a checkout, else (installed in site-packages, beside the modules calls import) only
    its own packages. Workers get their code over their control pipe."""
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return [str(PROJECT_ROOT)]
    return [str(PROJECT_ROOT / package) for package in ("toolserver", "sandbox", "trainer")
            if (PROJECT_ROOT / package).exists()]


def zygote_spec(settings: Settings) -> ZygoteSpec:
    """The python workers' jail, guard and interpreter."""
    hidden = list(settings.sandbox.hidden_paths)
    if not Path(settings.python.interpreter).resolve().is_relative_to(PROJECT_ROOT):
        hidden += project_paths()
    jail = JailPolicy(
        firejail=settings.sandbox.firejail,
        max_processes=settings.sandbox.jail_max_processes,
        max_file_mb=settings.limits.max_file_mb,
        max_open_files=settings.limits.max_open_files * 2,
        memory_mb=settings.sandbox.jail_memory_mb,
        # One megabyte more than a call may fill, so that the zygote sees a call reach
        # its cap (and kills it) where the tmpfs would only refuse the next write.
        home_mb=settings.limits.max_scratch_mb + 1,
        home_files=settings.limits.max_scratch_files,
        hidden_paths=tuple(hidden),
    )
    return ZygoteSpec(interpreter=settings.python.interpreter, preload=settings.python.preload, jail=jail,
                      huge_pages=settings.python.huge_pages, guard=guard_policy(settings),
                      insecure_no_sandbox=settings.sandbox.insecure_no_sandbox,
                      start_timeout_s=settings.python.start_timeout_s)


def guard_policy(settings: Settings) -> GuardPolicy:
    """The python.import_profiles as the guard inside the jail reads them."""
    python = settings.python
    return GuardPolicy({name: GuardProfile(python.allow_list(name), profile.denied_imports, profile.refuse_actions)
                        for name, profile in python.import_profiles.items()})


def slim_spec(worker: ZygoteSpec, preload: tuple[str, ...]) -> ZygoteSpec:
    """A slim worker's: the workers' jail and guard with the standard modules of preload
    only; a call that imports anything outside the standard library ends with the
    REROUTE outcome, to be run on a warm worker."""
    return dataclasses.replace(worker, preload=preload, reroute_outside_stdlib=True)


def kernel_spec(worker: ZygoteSpec, start_timeout_s: float) -> ZygoteSpec:
    """A session kernel's: the workers' jail without an address-space cap, which the
    kernel sets on itself once warm (sandbox/kernel.py)."""
    return dataclasses.replace(worker, jail=dataclasses.replace(worker.jail, memory_mb=0),
                               start_timeout_s=start_timeout_s)


def repl_spec(worker: ZygoteSpec, lean: LeanSettings) -> ZygoteSpec:
    """A Lean REPL's: the workers' jail with Lean's memory, process and file limits."""
    jail = dataclasses.replace(worker.jail, memory_mb=lean.memory_mb, max_processes=lean.max_processes,
                               max_open_files=lean.max_open_files)
    return dataclasses.replace(worker, jail=jail, start_timeout_s=lean.start_timeout_s)


def jail_specs(settings: Settings) -> JailSpecs:
    worker = zygote_spec(settings)
    return JailSpecs(worker=worker, slim_worker=slim_spec(worker, settings.python.slim_preload),
                     scientific_worker=dataclasses.replace(worker, preload=settings.python.scientific_preload),
                     kernel=kernel_spec(worker, settings.sessions.start_timeout_s),
                     repl=repl_spec(worker, settings.lean))
