"""Running a call's code as the program `python3 main.py` runs it: its `__main__` module,
its recursion room, the repr of a last bare expression, its uncaught exceptions and
`SystemExit` as python3 prints and ends with them, and its interpreter's shut-down."""

import ast
import atexit
import builtins
import gc
import importlib.machinery
import linecache  # loaded with traceback: no import time of its own
import os
import signal
import sys
import traceback
import types

from sandbox.inside.outcome import raised

TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    JsonObject = dict[str, Any]  # a frame's object, as json reads and writes it

PROGRAM_FILE = "main.py"  # the call's code, in its working directory (sandbox.calls.PROGRAM_FILE)
PROGRAM_DEPTH = 2  # the recursion depth python3 reports at a program's top level
# Reads the recursion depth at the top level of exec'd code as sys.setrecursionlimit
# reports it (0 where it cannot be read).
MEASURE_DEPTH = compile(
    "depth = 0\ntry:\n    sys.setrecursionlimit(1)\nexcept RecursionError as exc:\n"
    "    words = str(exc).partition('recursion depth ')[2].partition(':')[0]\n"
    "    depth = int(words) if words.isdigit() else 0\n", "<depth>", "exec", dont_inherit=True)


def main_module(path: str) -> types.ModuleType:
    """A fresh `__main__` module for the program at path, as `python3 path` makes it."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __annotations__={}, __builtins__=builtins,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    return main


def split_last_expression(source: str, filename: str, *,
                          cell: bool) -> tuple[types.CodeType, types.CodeType | None]:
    """(statements, last bare expression or None), compiled from source as python3 compiles
    a program (cell False: a top-level await is its SyntaxError) or as a notebook cell runs
    them (cell True: it may await at its top level, and its source is kept in linecache for
    its tracebacks). Either way no compile flag of the server's code is inherited (a
    `from __future__ import annotations` would make the code's annotations strings)."""
    if cell:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    tree = ast.parse(source, filename=filename, mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body[-1].value)
        del tree.body[-1]
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if cell else 0
    body = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return body, (compile(last, filename, "eval", flags=flags, dont_inherit=True) if last is not None else None)


def run_program(code: str, main: types.ModuleType, max_value_chars: int,
                denials: tuple[type[BaseException], ...]) -> "tuple[JsonObject, int]":
    """Runs code as the program `python3 main.py` (main.py in the working directory, main
    its module), with the repr of a last bare expression kept as its value (cut at
    max_value_chars); returns (result, exit status), the result as `outcome.raised` reports
    an exception, denials the guard's. The module is put where the interpreter looks for
    `__main__`: unittest, doctest, pickle and multiprocessing find its names there."""
    result: "JsonObject" = {"kind": "ok"}
    sys.modules["__main__"] = main
    sys.argv[:] = [PROGRAM_FILE]
    path = main.__file__
    assert path is not None  # main_module's
    sys.path.insert(0, os.path.dirname(path))
    namespace = main.__dict__
    # Measured here, at the depth the program's top level will have: measured in the
    # zygote before the fork, it drifts by a level as the zygote's code warms up.
    measured: dict[str, object] = {"sys": sys}
    exec(MEASURE_DEPTH, measured)
    depth = measured["depth"]
    assert isinstance(depth, int)  # MEASURE_DEPTH's
    offset_recursion_limit(depth - PROGRAM_DEPTH)
    try:
        body, last = split_last_expression(code, path, cell=False)
    except (SyntaxError, ValueError) as exc:  # python3 shows no traceback for what it cannot compile
        if not isinstance(exc, SyntaxError):  # 3.11's ast says ValueError where python3 says:
            exc = SyntaxError("source code cannot contain null bytes")
        report_uncaught(exc, None)
        return {"kind": "error", "error": traceback.format_exception_only(type(exc), exc)[-1].strip()}, 1
    try:
        exec(body, namespace)
        if last is not None:
            value = eval(last, namespace)
            if value is not None:
                text = value_repr(value)
                if text is not None:
                    result["value"] = text[:max_value_chars]
        status = 0
    except SystemExit as exc:
        status = exit_status(exc)
        if status:
            result = {"kind": "error", "error": f"SystemExit: {exc.code}"}
    except BaseException as exc:
        report_uncaught(exc, exc.__traceback__.tb_next if exc.__traceback__ is not None else None)
        result = raised(exc, denials)
        status = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    return result, status


def offset_recursion_limit(offset: int) -> None:
    """Gives the program the recursion room it has under python3: the zygote's own frames
    lie below the call's, offset levels of recursion. sys's limit functions add and take
    off the difference, so the program sees python3's numbers."""
    if offset <= 0:
        return
    real_set, real_get = sys.setrecursionlimit, sys.getrecursionlimit

    def setrecursionlimit(limit: int) -> None:
        if type(limit) is not int or limit < 1:
            return real_set(limit)  # the same error python3 gives
        return real_set(limit + offset)

    def getrecursionlimit() -> int:
        return real_get() - offset

    real_set(real_get() + offset)
    sys.setrecursionlimit, sys.getrecursionlimit = setrecursionlimit, getrecursionlimit


def value_repr(value: object) -> str | None:
    """The repr of the last expression's value, or None when its repr fails: a program
    that python3 runs to the end does not fail for it."""
    try:
        return repr(value)
    except Exception:
        return None


def exit_status(exc: "SystemExit") -> int:
    """The status `python3` exits with for an uncaught SystemExit, printing what it prints."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        sys.stderr.write(f"{exc.code}\n")
    except BaseException:
        pass
    return 1


# The names the server's own sources are compiled under in a zygote or a session
# (sandbox.worker.BOOTSTRAP): the library's modules and the sources run or loaded by name.
SERVER_SOURCES = frozenset({"zygote", "session_zygote", "guard", "confine"})
SERVER_LIBRARY = "sandbox.inside."


def is_server_frame(tb: types.TracebackType) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    return filename in SERVER_SOURCES or filename.startswith(SERVER_LIBRARY)


def without_server_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback tb with the server's own frames (the import guard's, a session's)
    unlinked, as python3 would print it: returns its first frame left (None if none is)."""
    while tb is not None and is_server_frame(tb):
        tb = tb.tb_next
    link = tb
    while link is not None:
        following = link.tb_next
        while following is not None and is_server_frame(following):
            following = following.tb_next
        link.tb_next = following
        link = following
    return tb


def drop_server_frames(exceptions: "Iterable[BaseException | None]") -> None:
    """Takes the server's frames off the tracebacks of exceptions and of every exception
    they chain to or group."""
    pending: list[BaseException | None] = list(exceptions)
    seen: set[int] = set()
    while pending:
        exc = pending.pop()
        if not isinstance(exc, BaseException) or id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = without_server_frames(exc.__traceback__)
        pending += [exc.__cause__, exc.__context__, *getattr(exc, "exceptions", ())]


def program_traceback(exc: BaseException, tb: types.TracebackType | None) -> types.TracebackType | None:
    """tb, the traceback exc is to be printed with, without the server's frames, as are
    those of the exceptions exc chains to or groups: returns tb's first frame left."""
    drop_server_frames([exc.__cause__, exc.__context__, *getattr(exc, "exceptions", ())])
    return without_server_frames(tb)


def report_uncaught(exc: BaseException, tb: types.TracebackType | None) -> None:
    """Prints an uncaught exception with traceback tb (the zygote's own frames left out) as
    `python3` does: through sys.excepthook."""
    tb = program_traceback(exc, tb)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    try:
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    except BaseException:
        pass


def shut_down_interpreter() -> None:
    """What python3 does as its program ends: waits for its threads, runs its atexit
    functions, clears its `__main__` (finalizers run), flushes stdout and stderr."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
    except BaseException as exc:
        report_uncaught(exc, exc.__traceback__)
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    flush_std()
    main = sys.modules.get("__main__")
    if main is not None:
        clear_module(main.__dict__)
    gc.collect()
    flush_std()


def clear_module(namespace: dict[str, object]) -> None:
    """Drops a module's names as the interpreter does at exit (underscored names first,
    `__builtins__` last), so that the finalizers of the objects they held run now."""
    for first_pass in (True, False):
        for name in list(namespace):
            if name == "__builtins__" or (first_pass and not (name.startswith("_") and not name.startswith("__"))):
                continue
            try:
                namespace[name] = None
            except BaseException:
                pass


def flush_std() -> None:
    """Writes out what the program printed and still sits in a buffer; never raises."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass
