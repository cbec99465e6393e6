"""A session's cells as a notebook kernel runs them, beyond what python3 runs: IPython's
syntax (magics, `!` shell escapes, which run in the session's own jail), a trailing `;`
that keeps a value from being shown, and what IPython displays (figures, `IPython.display`
objects, a last expression's rich reprs: html, markdown, svg, json, png) gathered as MIME
bundles for the cell's answer, as a kernel's display_data and execute_result messages
carry them.

A cell python3 compiles runs as python3 runs it: IPython only rewrites one that python3
cannot compile. The shell is IPython's own `InteractiveShell`, bound to the session's
`__main__`, made without a history, a profile directory or any name of its own in the
module's namespace (`get_ipython` and `display` are builtins, as in a kernel). A runtime
without IPython gives plain Python cells and no bundles."""

import base64
import builtins
import importlib.util
import io
import json
import os
import sys
import tokenize

# Bundle types whose data is bytes: base64 text in a bundle, as nbformat keeps them.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "application/pdf"})
DISPLAY_KINDS = ("display_data", "execute_result")
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
NOT_SHELL_NAMES = frozenset({"__builtins__", "__name__", "__doc__", "__package__", "__loader__", "__spec__"})


def ends_with_semicolon(source):
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


def bundle_text(mime, data):
    """A bundle's data as text for the wire: bytes as base64, JSON as its text."""
    if isinstance(data, (bytes, bytearray)):
        return base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str):
        return data
    return json.dumps(data, default=repr)


def make_shell(main, displays):
    """IPython's shell over the module main, its displays appended to the list displays;
    None where the runtime has no IPython."""
    try:
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.core.profiledir import ProfileDir
        from traitlets.config import Config
    except ImportError:
        return None

    class CellDisplays(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            displays.append(("display_data", data, metadata or {}))

        def clear_output(self, wait=False):
            displays.clear()

    class SessionShell(InteractiveShell):
        def enable_gui(self, gui=None):
            """A session has no GUI loop: `%matplotlib inline` is the only backend that shows."""

        def _ipython_dir_changed(self, change):
            """No IPython directory is made: nothing of the shell's lies in the session's home."""

        def system(self, cmd):
            """`!cmd` and `%pip`: the command runs in the session's jail on its streams,
            after what the cell printed so far."""
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            return self.system_raw(cmd)

    config = Config()
    config.HistoryManager.enabled = False
    before = set(main.__dict__)
    shell = SessionShell.instance(user_module=main, config=config, profile_dir=ProfileDir(),
                                  ipython_dir="/nonexistent")
    for name in set(main.__dict__) - before - NOT_SHELL_NAMES:  # In, Out, exit, open, ...: python3's names stay
        del main.__dict__[name]
    builtins.get_ipython = shell.get_ipython
    shell.display_pub = CellDisplays(shell=shell)
    if importlib.util.find_spec("matplotlib_inline") is not None:  # figures show inline, as in a kernel
        os.environ["MPLBACKEND"] = INLINE_BACKEND  # the jail's Agg, for a pyplot imported later (as ipykernel sets it)
        if "matplotlib.pyplot" in sys.modules:  # preloaded: switched now
            try:
                shell.enable_matplotlib("inline")
            except Exception:
                pass
    return shell


class Notebook:
    """The notebook side of a session's cells: IPython's shell (or none) and the bundles
    the running cell displayed."""

    def __init__(self, main):
        self.displays = []
        self.shell = make_shell(main, self.displays)

    def source(self, code):
        """The cell as Python: code itself where it compiles, else IPython's rewrite of its
        notebook syntax (the original SyntaxError stands where that does not compile)."""
        if self.shell is None:
            return code
        try:
            compile(code, "<cell>", "exec", flags=0x2000, dont_inherit=True)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
            return code
        except (SyntaxError, ValueError):
            pass
        try:
            rewritten = self.shell.transform_cell(code)
            compile(rewritten, "<cell>", "exec", flags=0x2000, dont_inherit=True)
        except Exception:
            return code
        return rewritten

    def start_cell(self):
        self.displays.clear()
        if self.shell is not None:
            self.shell.events.trigger("pre_execute")

    def end_cell(self):
        """What a kernel does after each cell: figures drawn in it are shown (and closed)."""
        if self.shell is not None:
            self.shell.events.trigger("post_execute")

    def show(self, value, text):
        """Adds the cell's value as its execute_result, with its rich forms where it has
        them; text is its repr (the value the answer carries, and its text/plain)."""
        if self.shell is None:
            return
        try:
            data, metadata = self.shell.display_formatter.format(value, exclude=("text/plain",))
        except Exception:
            data, metadata = {}, {}
        self.displays.append(("execute_result", {**data, "text/plain": text}, metadata))

    def usage_error(self, exc):
        """What IPython prints for a magic used wrong (a name it does not know, an option
        it does not take): one line, no traceback; None for any other exception."""
        if self.shell is None:
            return None
        from IPython.core.error import UsageError

        return f"UsageError: {exc}\n" if isinstance(exc, UsageError) else None

    def taken(self, cap):
        """The cell's displays for the wire, in order, as long as they fit in cap bytes of
        JSON together (whole bundles: one that does not fit is left out); and whether one
        was left out."""
        taken, size, cut = [], 0, False
        for kind, data, metadata in self.displays:
            try:
                bundle = {"kind": kind, "data": {str(mime): bundle_text(mime, value) for mime, value in data.items()},
                          "metadata": json.loads(json.dumps(metadata, default=repr))}
            except (TypeError, ValueError):
                cut = True
                continue
            length = len(json.dumps(bundle))
            if size + length > cap:
                cut = True
                continue
            size += length
            taken.append(bundle)
        self.displays.clear()
        return taken, cut
