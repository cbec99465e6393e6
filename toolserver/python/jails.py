"""How the python tool's jailed processes start: the workers (warm zygotes; slim ones that
preload only standard modules; scientific ones that preload the data stack) and the
sessions, each derived from the server's sandbox spec (toolserver/jails.py).

A slim zygote preloads less and hands back a call that reaches beyond the standard
library, a scientific one preloads more, a session caps its own address space once it
starts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sandbox.profiles import GuardPolicy, GuardProfile
from sandbox.worker import ZygoteSpec
from toolserver.config import CoreSettings
from toolserver.jails import sandbox_spec
from toolserver.python.routing import scientific_only
from toolserver.python.settings import PythonSettings, SessionSettings


@dataclass(frozen=True)
class PythonJails:
    worker: ZygoteSpec             # warm workers
    slim_worker: ZygoteSpec        # slim workers
    scientific_worker: ZygoteSpec  # scientific workers
    session: ZygoteSpec            # the session zygote and the jails made for sessions


def zygote_spec(settings: CoreSettings) -> ZygoteSpec:
    """The warm workers': the sandbox's jail with the warm preload and the guard."""
    python = settings.section(PythonSettings)
    return dataclasses.replace(sandbox_spec(settings, python.runtime()), preload=python.preload,
                               guard=guard_policy(python))


def guard_policy(python: PythonSettings) -> GuardPolicy:
    """The python.import_profiles as the guard inside the jail reads them."""
    return GuardPolicy({name: GuardProfile(python.allow_list(name), profile.denied_imports, profile.refuse_actions)
                        for name, profile in python.import_profiles.items()})


def slim_spec(worker: ZygoteSpec, preload: tuple[str, ...]) -> ZygoteSpec:
    """A slim worker's: the workers' jail and guard with the standard modules of preload
    only; a call that imports anything outside the standard library ends with the
    REROUTE outcome, to be run on a warm worker."""
    return dataclasses.replace(worker, preload=preload, reroute_outside_stdlib=True)


def session_spec(worker: ZygoteSpec, preload: tuple[str, ...], start_timeout_s: float) -> ZygoteSpec:
    """The sessions': the workers' jail without an address-space cap, which a session sets
    on itself when it starts (sandbox/inside/session_zygote.py), and the sessions' preload."""
    return dataclasses.replace(worker, jail=dataclasses.replace(worker.jail, memory_mb=0), preload=preload,
                               start_timeout_s=start_timeout_s)


def python_jails(settings: CoreSettings) -> PythonJails:
    worker = zygote_spec(settings)
    python = settings.section(PythonSettings)
    sessions = settings.section(SessionSettings)
    warm = worker
    if python.scientific_count():  # a call that imports the data stack is handed to the workers that hold it
        warm = dataclasses.replace(worker, hand_back=tuple(sorted(scientific_only(python.preload,
                                                                                  python.scientific_preload))))
    return PythonJails(worker=warm, slim_worker=slim_spec(worker, python.slim_preload),
                       scientific_worker=dataclasses.replace(worker, preload=python.scientific_preload),
                       session=session_spec(worker, sessions.preload, sessions.start_timeout_s))
