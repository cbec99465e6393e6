"""The Python-level policy inside a jailed call: an import allow-list and denied actions.

Like `sandbox/zygote.py`, this source runs inside the jail, sent over the zygote's
control pipe, and imports nothing from the project. The zygote calls
`remove_denied_modules` once, after its preloads, so that no forked child inherits a
denied module (ctypes, subprocess, ... that sympy and numpy import) in `sys.modules` or
as an attribute of another module; each child calls `install_guard` before the
caller's code runs:

- imports: a denied module (socket, subprocess, ctypes, ...) cannot be imported by
  anyone, through `import`, `__import__`, importlib or `sys.modules`; a module that
  is not on the allow-list cannot be imported by name from the caller's code (a
  library imports what it needs);
- actions: an audit hook (PEP 578, which cannot be removed once added) refuses the
  operations that reach the network, processes, native code, other processes' memory
  and hand-made bytecode: socket creation and name lookups, subprocess, os.system /
  exec / spawn / fork, os.kill, ctypes, code objects built by hand, marshal outside
  the import system, gc's object walks, and opening /proc/*/mem and the like.

A refusal raises `ImportDenied` or `ActionDenied`; uncaught, the call's outcome is
DENIED, naming what was refused.

What this does NOT do: it is a policy layer, not the sandbox. CPython has no
in-process isolation: code that reaches a native-code primitive this layer does not
know of (an already-loaded C function with no audit event, an interpreter bug) gets
past it. The firejail jail around the worker (no network, seccomp, no capabilities,
non-root uid, read-only filesystem, rlimits) is the boundary, and `tests/security/`
checks that it holds with this layer switched off.
"""

import builtins
import os
import re
import sys
import types

PROC_MEMORY = re.compile(r"^/(proc/(self|thread-self|\d+)(/task/\d+)?/(mem|pagemap)|proc/kcore|dev/(k?mem|port))$")
DENIED_EVENT_PREFIXES = ("socket.", "subprocess.", "ctypes.", "pty.", "os.exec", "os.posix_spawn", "os.spawn")
DENIED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "signal.pthread_kill",
    "code.__new__", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys.remote_exec", "_posixsubprocess.fork_exec",
})
BYTECODE_LOADER = "_compile_bytecode"


class ImportDenied(ImportError):
    """An import the call's policy refuses."""


class ActionDenied(PermissionError):
    """An operation the call's policy refuses."""


class DeniedModule(types.ModuleType):
    """Stands where another module kept a reference to a denied module."""

    def __getattr__(self, attribute):
        raise ImportDenied(f"module {self.__name__!r} is not allowed in the sandbox")


def top_level(name):
    return name.partition(".")[0]


def remove_denied_modules(denied):
    """Drops every denied module from sys.modules and from the namespaces of the others.

    Returns the names removed. Runs once in the zygote, before any call forks from it.
    """
    removed = sorted(name for name in sys.modules if top_level(name) in denied)
    gone = {id(sys.modules[name]) for name in removed}
    for name in removed:
        del sys.modules[name]
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            if isinstance(value, types.ModuleType) and id(value) in gone:
                namespace[attribute] = DeniedModule(value.__name__)
    return removed


def install_guard(allowed, denied, writable_dirs):
    """Installs the import guard and the audit hook in this process, for good."""
    allowed, denied = frozenset(allowed), frozenset(denied)
    writable = tuple(os.path.realpath(path) + os.sep for path in writable_dirs)
    original_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            top = top_level(name)
            if top in denied:
                raise ImportDenied(f"import of {name!r} is not allowed in the sandbox")
            if top not in allowed and isinstance(globals, dict) and globals.get("__name__") == "__main__":
                raise ImportDenied(f"import of {name!r} is not allowed in the sandbox (not on the allow-list)")
        return original_import(name, globals, locals, fromlist, level)

    class DenyFinder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if top_level(name) in denied:
                raise ImportDenied(f"import of {name!r} is not allowed in the sandbox")
            return None

    def audit(event, args):
        if event == "import":
            if args and isinstance(args[0], str) and top_level(args[0]) in denied:
                raise ImportDenied(f"import of {args[0]!r} is not allowed in the sandbox")
        elif event == "open":
            check_open(args)
        elif event in ("marshal.loads", "marshal.load"):
            check_marshal()
        elif event in DENIED_EVENTS or event.startswith(DENIED_EVENT_PREFIXES):
            raise ActionDenied(f"{event} is not allowed in the sandbox")

    def check_open(args):
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str) and PROC_MEMORY.match(os.path.realpath(path)):
            raise ActionDenied(f"opening {path} is not allowed in the sandbox")

    def check_marshal():
        """Bytecode may come only from the import system reading a module's .pyc that
        does not lie in a writable directory: never from the caller's own bytes."""
        frame = sys._getframe(2)
        code = frame.f_code
        path = frame.f_locals.get("bytecode_path")
        if (code.co_name != BYTECODE_LOADER or not code.co_filename.startswith("<frozen importlib")
                or not isinstance(path, str) or os.path.realpath(path).startswith(writable)):
            raise ActionDenied("loading bytecode with marshal is not allowed in the sandbox")

    sys.meta_path.insert(0, DenyFinder)
    builtins.__import__ = guarded_import
    sys.addaudithook(audit)
