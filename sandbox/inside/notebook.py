"""A session's cells as a notebook kernel runs them, beyond what python3 runs: IPython's
syntax (magics, `!` shell escapes, which run in the session's own jail), a trailing `;`
that keeps a value from being shown, and what IPython displays (figures, `IPython.display`
objects, a last expression's rich reprs: html, markdown, svg, json, png) gathered as MIME
bundles for the cell's answer, as a kernel's display_data and execute_result messages
carry them.

A cell python3 compiles runs as python3 runs it: IPython only rewrites one that python3
cannot compile. The shell is IPython's own `InteractiveShell`, bound to the session's
`__main__`, made without a history, a profile directory or any name of its own in the
module's namespace but `_dh` (`get_ipython` and `display` are builtins, as in a kernel). A
runtime without IPython gives plain Python cells and no bundles."""

import ast
import base64
import builtins
import importlib.util
import io
import json
import os
import sys
import tempfile
import tokenize
import types

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from typing import Any

    Shell = Any  # IPython's InteractiveShell (SessionShell below): IPython has no type information
    Display = tuple[str, Any, Any]  # (kind, data by MIME type, metadata), as IPython publishes them
    Bundle = dict[str, Any]  # a display for the wire (sandbox.calls.Display)

# Bundle types whose data is bytes: base64 text in a bundle, as nbformat keeps them.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "application/pdf"})
DISPLAY_KINDS = ("display_data", "execute_result")
MAX_DISPLAYS = 1024  # bundles one answer may carry
MAX_MIME_TYPES = 64  # types in one bundle
MAX_MIME_NAME = 255  # characters of a type's name
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
SCRIPT_DIRECTORY = ".session-cells"  # in the session's temp directory, made at its first spawn
# What the shell's namespace keeps of the names IPython puts there: a module's own, and the
# directory history its %cd, %pushd and %dhist read. In, Out, exit, quit, open, get_ipython
# (a builtin) and the others go: a cell sees python3's.
KEPT_NAMES = frozenset({"__builtins__", "__name__", "__doc__", "__package__", "__loader__", "__spec__", "_dh"})


def ends_with_semicolon(source: str) -> bool:
    """Whether the cell's last token (comments and blank lines aside) is `;`: IPython then
    shows no value for it."""
    skipped = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER, tokenize.INDENT,
               tokenize.DEDENT)
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in skipped:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.type == tokenize.OP and last.string == ";"


def wire_bundle(kind: str, data: object, metadata: object) -> "Bundle | None":
    """A display as the host reads it (sandbox.calls.Display), or None where nothing of it
    is of that shape: a MIME type's name has a `/` and at most MAX_MIME_NAME characters,
    its data is text (bytes of the binary types as base64, JSON as its text), at most
    MAX_MIME_TYPES of them; the metadata is a JSON object. A type an object's own repr
    method got wrong (a `_repr_png_` that returns what is not an image's bytes) is left out,
    so that no cell's object can make the host doubt the session."""
    if not isinstance(data, dict):  # CellDisplays refuses one; a cell may still put one in its list
        return None
    types_kept: dict[str, str] = {}
    for mime, value in data.items():
        if not isinstance(mime, str) or "/" not in mime or len(mime) > MAX_MIME_NAME:
            continue
        if isinstance(value, (bytes, bytearray)):
            text = base64.b64encode(bytes(value)).decode("ascii")
        elif isinstance(value, str):
            text = value
        else:
            text = json.dumps(value, default=repr)
        if mime in BINARY_TYPES:
            try:
                base64.b64decode(text, validate=True)
            except ValueError:
                continue
        types_kept[mime] = text
        if len(types_kept) == MAX_MIME_TYPES:
            break
    if not types_kept:
        return None
    metadata = json.loads(json.dumps(metadata, default=repr)) if isinstance(metadata, dict) else {}
    return {"kind": kind, "data": types_kept, "metadata": metadata}


def make_shell() -> "Shell | None":
    """IPython's shell, made in the session zygote before it forks (every session shares its
    pages until it writes them: made in each session it would cost ~12 MB of each), over a
    placeholder module until a session binds it (`Notebook`); its displays go to the list
    `shell.display_pub.displays`. None where the runtime has no IPython."""
    try:
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.core.profiledir import ProfileDir
        from traitlets.config import Config
    except ImportError:
        return None

    class CellDisplays(DisplayPublisher):  # type: ignore[misc]  # IPython's classes are Any to the checker
        def __init__(self, **kwargs: "Any") -> None:
            super().__init__(**kwargs)
            self.displays: list[Display] = []

        def publish(self, data: "Any", metadata: "Any" = None, source: "Any" = None, *, transient: "Any" = None,
                    update: bool = False, **kwargs: "Any") -> None:
            self._validate_data(data, metadata)  # as a kernel's publisher: a bundle that is no dict is a TypeError
            self.displays.append(("display_data", data, metadata or {}))

        def clear_output(self, wait: bool = False) -> None:
            self.displays.clear()

    class SessionShell(InteractiveShell):  # type: ignore[misc]  # IPython's classes are Any to the checker
        def enable_gui(self, gui: "str | None" = None) -> None:
            """A session has no GUI loop: `%matplotlib inline` is the only backend that shows."""

        def _ipython_dir_changed(self, change: "Any") -> None:
            """No IPython directory is made: nothing of the shell's lies on any disk."""

        def system(self, cmd: str) -> "Any":
            """`!cmd` and `%pip`: the command runs in the session's jail on its streams,
            after what the cell printed so far."""
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            return self.system_raw(cmd)

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"  # its help and tracebacks are read as text, not on a terminal
    shell = SessionShell.instance(user_module=types.ModuleType("__main__"), config=config, profile_dir=ProfileDir(),
                                  ipython_dir="/nonexistent")
    shell.display_pub = CellDisplays(shell=shell)
    setattr(builtins, "get_ipython", shell.get_ipython)  # a builtin, as in a kernel
    if importlib.util.find_spec("matplotlib_inline") is not None:  # figures show inline, as in a kernel:
        try:                                                        # pyplot imported and switched here
            shell.enable_matplotlib("inline")
        except Exception:
            pass
    return shell


def bind_shell(shell: "Shell", main: types.ModuleType) -> None:
    """Makes main the shell's namespace, with only KEPT_NAMES of the shell's names in it."""
    before = set(main.__dict__)
    shell.init_create_namespaces(user_module=main)
    shell.init_user_ns()
    shell.init_sys_modules()
    for name in set(main.__dict__) - before - KEPT_NAMES:
        del main.__dict__[name]
    if "matplotlib_inline.backend_inline" in sys.modules:  # for the processes it starts, as ipykernel sets it
        os.environ["MPLBACKEND"] = INLINE_BACKEND


class CellScript:
    """The session's cells as the script python3 would have run: the Python cells that ran
    to their end, and the one running. A process that multiprocessing spawns (its spawn start
    method) runs a script's file again as `__mp_main__` to find what the
    program defined; a session's `__main__` has no file, so the first spawn writes this
    script to one (in the session's temp directory) and names it in the child's
    preparation data: the cells' functions and classes are found, and, as under python3,
    what a cell does outside `if __name__ == "__main__":` runs again in the child."""

    def __init__(self, main: types.ModuleType) -> None:
        self.main = main
        self.cells: list[str] = []
        self.running: str | None = None
        self.path = os.path.join(tempfile.gettempdir(), SCRIPT_DIRECTORY, "main.py")
        try:
            import multiprocessing.spawn as spawn
        except ImportError:
            return
        original = spawn.get_preparation_data

        def preparation_data(name: str) -> "dict[str, Any]":
            data = original(name)
            if sys.modules.get("__main__") is self.main and not {"init_main_from_name", "init_main_from_path"} & set(data):
                data["init_main_from_path"] = self.write()
            return data

        spawn.get_preparation_data = preparation_data

    def write(self) -> str:
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as script:
            script.write("\n".join([*self.cells, *([self.running] if self.running is not None else [])]))
        return self.path

    def start(self, source: str) -> None:
        self.running = source

    def end(self, ran_to_its_end: bool) -> None:
        if ran_to_its_end and self.running is not None:
            self.cells.append(self.running)
        self.running = None


class Notebook:
    """The notebook side of a session's cells: IPython's shell (or none), the bundles the
    running cell displayed, and the cells as a script (`CellScript`)."""

    def __init__(self, main: types.ModuleType, shell: "Shell | None") -> None:
        """shell: make_shell's, made before the session was forked (None: no IPython)."""
        self.shell = shell
        self.displays: list[Display] = [] if shell is None else shell.display_pub.displays
        if shell is not None:
            bind_shell(shell, main)
        self.script = CellScript(main)

    def rewritten(self, code: str) -> "str | None":
        """IPython's rewrite of a cell python3 cannot compile (its magics, `!` commands and
        `?` become calls of the shell's), or None where there is no shell or the rewrite
        does not compile either."""
        if self.shell is None:
            return None
        try:
            source: str = self.shell.transform_cell(code)
            compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except Exception:
            return None
        return source

    def start_cell(self) -> None:
        self.displays.clear()
        if self.shell is not None:
            self.shell.events.trigger("pre_execute")

    def end_cell(self, ran_to_its_end: bool) -> None:
        """What a kernel does after each cell: figures drawn in it are shown (and closed).
        A cell that ran to its end stays in the cells' script."""
        self.script.end(ran_to_its_end)
        if self.shell is not None:
            self.shell.events.trigger("post_execute")

    def show(self, value: object, text: str) -> None:
        """Adds the cell's value as its execute_result, with its rich forms where it has
        them; text is its repr (the value the answer carries, and its text/plain)."""
        if self.shell is None:
            return
        try:
            data, metadata = self.shell.display_formatter.format(value, exclude=("text/plain",))
        except Exception:
            data, metadata = {}, {}
        self.displays.append(("execute_result", {**data, "text/plain": text}, metadata))

    def usage_error(self, exc: BaseException) -> "str | None":
        """What IPython prints for a magic used wrong (a name it does not know, an option
        it does not take): one line, no traceback; None for any other exception."""
        if self.shell is None:
            return None
        from IPython.core.error import UsageError

        return f"UsageError: {exc}\n" if isinstance(exc, UsageError) else None

    def taken(self, cap: int) -> "tuple[list[Bundle], bool]":
        """The cell's displays for the wire, in order, as long as they fit in cap bytes of
        JSON together and MAX_DISPLAYS in number (whole bundles: one that does not fit is
        left out); and whether one was left out."""
        taken: list[Bundle] = []
        size, cut = 0, False
        for kind, data, metadata in self.displays:
            try:
                bundle = wire_bundle(kind, data, metadata)
            except (TypeError, ValueError, RecursionError):
                bundle = None
            length = len(json.dumps(bundle)) if bundle is not None else 0
            if bundle is None or size + length > cap or len(taken) == MAX_DISPLAYS:
                cut = True
                continue
            size += length
            taken.append(bundle)
        self.displays.clear()
        return taken, cut
