"""The jail every jailed process of the server starts from, derived from the settings.

Every tool that runs code or a program in the sandbox (its package's jails.py) derives
its processes' specs from `sandbox_spec`: one firejail command line
(`sandbox.jail.jail_command`), [sandbox]'s and [limits]' caps, the project hidden, and
the runtime its own section names (the interpreter its zygotes start on). The self-test
proves the same spec on [sandbox]'s interpreter (`self_test_spec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.jail import JailPolicy
from sandbox.root import JailRoot, interpreter_paths
from sandbox.worker import ZygoteSpec
from toolserver.config import RUNTIME_INTERPRETER, CoreSettings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The project's packages (pyproject.toml's [tool.setuptools.packages.find] include, which a test holds it to).
PROJECT_PACKAGES = ("toolcontract", "toolserver", "toolclient", "sandbox", "trainer")


@dataclass(frozen=True)
class Runtime:
    """The interpreter jailed zygotes start on, and how."""

    interpreter: str = RUNTIME_INTERPRETER
    huge_pages: bool = True           # collapse the warm heap into 2 MB pages
    start_timeout_s: float = 60.0     # to start one zygote (imports included)


def project_paths() -> list[str]:
    """What jails must not see of the project: the whole source tree when it runs from
    a checkout, else (installed in site-packages, beside the modules calls import) only
    its own packages. Workers get their code over their control pipe."""
    if (PROJECT_ROOT / "pyproject.toml").exists():
        return [str(PROJECT_ROOT)]
    return [str(PROJECT_ROOT / package) for package in PROJECT_PACKAGES if (PROJECT_ROOT / package).exists()]


def self_test_spec(settings: CoreSettings) -> ZygoteSpec:
    """What the self-test proves, and what a tool that names no runtime of its own derives
    from: the sandbox's spec on [sandbox]'s interpreter."""
    return sandbox_spec(settings, Runtime(interpreter=settings.sandbox.interpreter))


def jail_root(settings: CoreSettings) -> JailRoot:
    """The one root every jail of the server shows (sandbox/root.py): the system's part,
    what [sandbox] jail_paths adds, [sandbox]'s interpreter (the self-test's) and what
    every tool's section declares its processes need (its runtime among them)."""
    declared = [path for _, section in settings.tool_sections() for path in section.jail_paths()]
    return JailRoot().with_paths(*settings.sandbox.jail_paths, *interpreter_paths(settings.sandbox.interpreter),
                                 *declared)


def sandbox_spec(settings: CoreSettings, runtime: Runtime) -> ZygoteSpec:
    """The jail and caps every jailed process starts from, on runtime, with no preload
    and no Python-level guard (the jail alone)."""
    hidden = list(settings.sandbox.hidden_paths)
    if not Path(runtime.interpreter).resolve().is_relative_to(PROJECT_ROOT):
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
        root=jail_root(settings),
        hidden_paths=tuple(hidden),
    )
    return ZygoteSpec(interpreter=runtime.interpreter, jail=jail, huge_pages=runtime.huge_pages,
                      insecure_no_sandbox=settings.sandbox.insecure_no_sandbox,
                      start_timeout_s=runtime.start_timeout_s)
