"""The Python-level policy of a jailed call or session, per import profile: denied
modules, an import allow-list, and denied actions. The default profile has none of them:
the jail is the boundary, and a call runs as a plain `python3` would.

Like `sandbox/inside/zygote.py`, this source runs inside the jail, sent over a control pipe,
and imports nothing from the project. A zygote makes each profile's guard once, after
its preloads (`make_guard`), and a call's process installs the one its call names before
the caller's code runs; a session installs its own (`install_guard`).

A profile may have:

- Denied modules (native memory: ctypes, cffi; `_posixsubprocess`, whose fork_exec
  starts processes with no audit event), which load for nobody in the call, however the
  import is spelled: `import`, `__import__`, `importlib.import_module`, the import
  machinery (finders, `_imp.create_builtin`, `_imp.create_dynamic` under any module
  name), or `sys.modules`. The zygote may have loaded them (a library it preloads uses
  ctypes): the call's process drops them from `sys.modules` and from the namespaces of
  the other modules, where functions of theirs are replaced by ones that refuse
  (`plan_removal` finds what to change once, in the zygote). A standard module that
  imports one when it loads (subprocess) is loaded before, so it stays importable and
  refuses only on use.
- An allow-list, checked for imports by name from the caller's own code (`__main__`):
  `import`, `__import__`, `importlib.import_module` and finders; a library imports what
  it needs.
- Refused actions, by an audit hook (PEP 578, which cannot be removed once added): the
  network (any socket but a Unix socket pair, name lookups, connect, bind, send to an
  address), new processes (subprocess, os.system / exec / spawn / posix_spawn / fork /
  forkpty), signals to other processes, ctypes, code objects built by the call's own
  code (libraries may: `types.coroutine` does), marshal outside the import system, gc's
  object walks (they reach around this policy) and opening /proc/*/mem and the like.

A refusal raises `ImportDenied` or `ActionDenied`; uncaught, the call's outcome is
DENIED, naming what was refused; code that catches it goes on.

A slim zygote's guard also ends a call that reaches for a module the zygote does not
offer (`not_offered`), whatever the profile, so that it runs again on a warm zygote.

What this does NOT do: it is a policy layer, not the sandbox. CPython has no in-process
isolation: code that reaches a native-code primitive this layer does not know of (an
already-loaded C function with no audit event, an interpreter bug) gets past it. The
firejail jail around the worker (no network, seccomp, no capabilities, non-root uid,
read-only filesystem, rlimits) is the boundary, and `tests/security/` checks that it
holds with no guard at all, the default.
"""

import builtins
import importlib
import os
import re
import sys
import types

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from typing import Any, NoReturn

    # sys.modules names to drop, and (namespace, attribute, stand-in) edits: plan_removal's
    Removal = tuple[list[str], list[tuple[dict[str, Any], str, object]]]
    AuditHook = Callable[[str, tuple[Any, ...]], None]

PROC_MEMORY = re.compile(r"^/(proc/(self|thread-self|\d+)(/task/\d+)?/(mem|pagemap)|proc/kcore|dev/(k?mem|port))$")
DENIED_EVENT_PREFIXES = ("socket.", "subprocess.", "ctypes.", "pty.", "os.exec", "os.posix_spawn", "os.spawn")
DENIED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "sys.remote_exec", "_posixsubprocess.fork_exec",
})
CALLERS_OWN_EVENTS = frozenset({"code.__new__"})  # refused when the call's own code does it
ALLOWED_SOCKET_EVENTS = frozenset({"socket.gethostname"})
SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})
FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "object.__getattr__"})
AF_UNIX = 1
IMPORT_MACHINERY = ("importlib", "_frozen_importlib")
BYTECODE_LOADER = "_compile_bytecode"
CREATE_BUILTIN = "sandbox.create_builtin"
STANDARD_MODULES = sys.stdlib_module_names | {"__main__"}
# Standard modules that import a denied module when they load: a warm zygote (and a
# session) loads them before the removal, so they stay importable and refuse only on use;
# a slim zygote leaves them out (subprocess brings threading, whose after-fork hook every
# call's process would pay for) and hands a call that imports one to a warm zygote.
LOAD_BEFORE_REMOVAL = ("subprocess",)


class ImportDenied(ImportError):
    """An import the call's policy refuses."""


class ActionDenied(PermissionError):
    """An operation the call's policy refuses."""


DENIALS = (ImportDenied, ActionDenied)


class DeniedModule(types.ModuleType):
    """Stands where another module kept a reference to a denied module."""

    def __getattr__(self, attribute: str) -> "NoReturn":
        raise ImportDenied(f"module {self.__name__!r} is not allowed in the sandbox")


def top_level(name: str) -> str:
    return name.partition(".")[0]


def is_denied(name: object, denied: "Collection[str]") -> bool:
    """Whether a module name (or any part of it) names a denied module: an extension
    loaded as `pkg._ctypes` still runs `_ctypes`' init."""
    return isinstance(name, str) and any(part in denied for part in name.split("."))


def denied_function(module: str, name: str) -> "Callable[..., NoReturn]":
    def refuse(*args: object, **kwargs: object) -> "NoReturn":
        raise ActionDenied(f"{module}.{name} is not allowed in the sandbox")
    refuse.__name__ = name
    return refuse


def load_before_removal() -> None:
    """Loads the standard modules that import a denied module when they load, so that a
    profile that denies it still lets them import (they refuse on use)."""
    for name in LOAD_BEFORE_REMOVAL:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def plan_removal(denied: "Collection[str]") -> "Removal":
    """What dropping the denied modules from this process takes: their names in
    sys.modules, and (namespace, attribute, stand-in) for every reference another module
    keeps to one of them or to one of their functions. Found once, where the modules were
    loaded (a zygote after its preloads); applied by `apply_removal`."""
    names = sorted(name for name in sys.modules if is_denied(name, denied))
    gone = {id(sys.modules[name]) for name in names}
    edits: list[tuple[dict[str, Any], str, object]] = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            if isinstance(value, types.ModuleType) and id(value) in gone:
                edits.append((namespace, attribute, DeniedModule(value.__name__)))
            elif isinstance(value, types.BuiltinFunctionType) and is_denied(getattr(value, "__module__", None), denied):
                edits.append((namespace, attribute, denied_function(value.__module__, value.__name__)))
    return names, edits


def apply_removal(plan: "Removal") -> None:
    names, edits = plan
    for name in names:
        sys.modules.pop(name, None)
    for namespace, attribute, stand_in in edits:
        namespace[attribute] = stand_in


def importer_is_callers_code(depth: int) -> bool:
    """Whether the frame depth levels up, past the import machinery, is the call's own code."""
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(IMPORT_MACHINERY):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__") == "__main__"


def create_builtin(spec: object) -> types.ModuleType:
    """Stands for `_imp.create_builtin`: the module is made by the audit hook, which alone
    holds the original, so that a denied builtin module cannot be made afresh."""
    name = getattr(spec, "name", None)
    if type(name) is not str:
        raise TypeError("create_builtin needs a spec with a str name")
    made: list[types.ModuleType | BaseException] = []
    sys.audit(CREATE_BUILTIN, name, made)
    if not made:
        raise ImportDenied(f"import of {name!r} is not allowed in the sandbox")
    if isinstance(made[0], BaseException):
        raise made[0]
    return made[0]


def builtin_maker(original: "Callable[[Any], types.ModuleType]", denied: "Collection[str]",
                  busy: "list[bool]") -> "AuditHook":
    """An audit hook that makes builtin modules for create_builtin. It never raises (a
    traceback would show its frame), and while it runs, frames cannot be walked."""
    namespace = types.SimpleNamespace

    def make(event: str, args: "tuple[Any, ...]") -> None:
        if event != CREATE_BUILTIN or len(args) != 2 or type(args[0]) is not str or type(args[1]) is not list:
            return
        name, made = args
        if is_denied(name, denied):
            return
        busy.append(True)
        try:
            made.append(original(namespace(name=name)))
        except BaseException as exc:
            made.append(exc.with_traceback(None))
        finally:
            busy.pop()
    return make


def install_guard(allowed: "Iterable[str] | None", denied: "Iterable[str]", writable_dirs: "Iterable[str]",
                  refuse_actions: bool = True, not_offered: "Callable[[str], object] | None" = None) -> None:
    """Installs a profile's guard in this process, for good."""
    install = make_guard(allowed, denied, writable_dirs, refuse_actions, not_offered)
    if install is not None:
        install()


def make_guard(allowed: "Iterable[str] | None", denied: "Iterable[str]", writable_dirs: "Iterable[str]",
               refuse_actions: bool = True, not_offered: "Callable[[str], object] | None" = None,
               missing: "Iterable[str] | None" = None) -> "Callable[[], None] | None":
    """A profile's guard made ready to install: returns the function that installs it in
    the process that calls it, for good, or None when the profile refuses nothing and
    nothing is to be rerouted. A zygote makes its guards once, after its preloads and
    before it forks, so that a call's process only installs one.

    allowed: the top-level modules the call's own code may import, or None for every
    module that is not denied. denied: modules nothing in the call may load.
    refuse_actions: whether the audit hook refuses the actions listed in this module's
    docstring. not_offered: called with the name of the first module this process does
    not offer that anything in the call imports, before any check: one outside the
    standard library, or one of LOAD_BEFORE_REMOVAL that was not loaded (a slim zygote's
    call ends there, to run again where that module is preloaded); or, where missing names
    top-level modules, one of those (a warm zygote hands a call that imports the data
    stack to a scientific one)."""
    allowed = None if allowed is None else frozenset(allowed)
    denied = frozenset(denied)
    if allowed is None and not denied and not refuse_actions and not_offered is None:
        return None
    offered = STANDARD_MODULES - {name for name in LOAD_BEFORE_REMOVAL if name not in sys.modules}
    writable = tuple(os.path.realpath(path) + os.sep for path in writable_dirs)
    original_import = builtins.__import__
    original_import_module = importlib.import_module
    removal = plan_removal(denied) if denied else None
    own_pid = os.getpid()  # set again when installed: the pid of the call's process
    busy: list[bool] = []

    missing = None if missing is None else frozenset(missing)

    def check_offered(name: object) -> None:
        if not_offered is None or not isinstance(name, str):
            return
        if (top_level(name) not in offered) if missing is None else (top_level(name) in missing):
            not_offered(name)

    def check_name(name: str, from_callers_code: bool) -> None:
        check_offered(name)
        if is_denied(name, denied):
            raise ImportDenied(f"import of {name!r} is not allowed in the sandbox")
        if allowed is not None and from_callers_code and top_level(name) not in allowed:
            raise ImportDenied(f"import of {name!r} is not allowed in the sandbox (not on the allow-list)")

    def guarded_import(name: str, globals: "Mapping[str, object] | None" = None,
                       locals: "Mapping[str, object] | None" = None, fromlist: "Sequence[str] | None" = (),
                       level: int = 0) -> types.ModuleType:
        if level == 0:
            if isinstance(globals, dict):
                check_name(name, globals.get("__name__") == "__main__")
            else:
                check_name(name, importer_is_callers_code(1))
        return original_import(name, globals, locals, fromlist, level)

    def guarded_import_module(name: str, package: "str | None" = None) -> types.ModuleType:
        if not name.startswith("."):
            check_name(name, importer_is_callers_code(1))
        return original_import_module(name, package)

    class DenyFinder:
        @staticmethod
        def find_spec(name: str, path: object = None, target: object = None) -> None:
            check_name(name, allowed is not None and importer_is_callers_code(1))
            return None

    def audit(event: str, args: "tuple[Any, ...]") -> None:
        if event == "import":
            if args:
                check_offered(args[0])
            if args and (is_denied(args[0], denied) or (len(args) > 1 and isinstance(args[1], str)
                                                          and is_denied(os.path.basename(args[1]).partition(".")[0], denied))):
                raise ImportDenied(f"import of {args[0]!r} is not allowed in the sandbox")
        elif not refuse_actions:
            return
        elif event == "open":
            check_open(args)
        elif event in ("marshal.loads", "marshal.load"):
            check_marshal()
        elif event == "socket.__new__":
            if len(args) < 2 or args[1] != AF_UNIX:
                raise ActionDenied("network sockets are not allowed in the sandbox")
        elif event in SIGNAL_EVENTS:
            check_signal(event, args)
        elif event in CALLERS_OWN_EVENTS:
            if sys._getframe(1).f_globals.get("__name__") == "__main__":
                raise ActionDenied(f"{event} is not allowed in the sandbox (code objects built by hand)")
        elif busy and event in FRAME_EVENTS:
            raise ActionDenied(f"{event} is not allowed while a module is being made")
        elif event in DENIED_EVENTS or (event.startswith(DENIED_EVENT_PREFIXES) and event not in ALLOWED_SOCKET_EVENTS):
            raise ActionDenied(f"{event} is not allowed in the sandbox")

    def check_signal(event: str, args: "tuple[Any, ...]") -> None:
        """Signals to the process itself (an interrupt, a timer) or to its own group pass;
        to anyone else (the worker, another call) they are refused."""
        if event == "signal.pthread_kill":
            return  # threads of this process only
        target = args[0] if args else None
        if not isinstance(target, int):
            raise ActionDenied(f"{event} is not allowed in the sandbox")
        group = os.getpgid(0)
        if event == "os.kill" and target in (0, os.getpid(), own_pid, -group):
            return
        if event == "os.killpg" and target in (0, group):
            return
        raise ActionDenied(f"{event} of another process is not allowed in the sandbox")

    def check_open(args: "tuple[Any, ...]") -> None:
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str) and PROC_MEMORY.match(os.path.realpath(path)):
            raise ActionDenied(f"opening {path} is not allowed in the sandbox")

    def check_marshal() -> None:
        """Bytecode may come only from the import system reading a module's .pyc that
        does not lie in a writable directory: never from the caller's own bytes."""
        frame = sys._getframe(2)
        code = frame.f_code
        path = frame.f_locals.get("bytecode_path")
        if (code.co_name != BYTECODE_LOADER or not code.co_filename.startswith("<frozen importlib")
                or not isinstance(path, str) or os.path.realpath(path).startswith(writable)):
            raise ActionDenied("loading bytecode with marshal is not allowed in the sandbox")

    imp: Any = sys.modules["_imp"]  # a module whose create_builtin install() replaces
    maker = builtin_maker(imp.create_builtin, denied, busy) if denied else None

    def install() -> None:
        nonlocal own_pid
        own_pid = os.getpid()
        if maker is not None and removal is not None:  # both made, or neither: where something is denied
            apply_removal(removal)
            sys.addaudithook(maker)
            imp.create_builtin = create_builtin
        sys.meta_path.insert(0, DenyFinder)
        builtins.__import__ = guarded_import
        importlib.import_module = guarded_import_module
        sys.addaudithook(audit)
    return install
