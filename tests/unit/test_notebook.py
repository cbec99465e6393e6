"""A session's notebook side (sandbox/inside/notebook.py) with the runtime's IPython, and
what the host reads of what it displayed (sandbox.calls.Display): in this process."""

from __future__ import annotations

import base64
import json
import subprocess
import textwrap

import pytest

from sandbox.calls import CallReply, Display, decoded_displays
from sandbox.inside.notebook import ends_with_semicolon, wire_bundle
from toolserver.python.settings import PythonSettings


@pytest.mark.parametrize("source, quiet", [
    ("1 + 1;", True), ("1 + 1;  # a comment\n\n", True), ("x = 1\nx;", True), ("1 + 1", False),
    ("'a;'", False), ("f(a=';')", False), ("x = 1; y = 2", False), ("1 +", False), ("", False),
])
def test_a_trailing_semicolon_is_the_last_token(source, quiet):
    assert ends_with_semicolon(source) is quiet


def test_a_bundle_holds_text_binary_as_base64_and_json_as_its_text():
    bundle = wire_bundle("display_data", {"image/png": b"\x89PNG", "text/html": "<b>", "application/json": {"k": [1]}},
                         {"image/png": {"width": 4}})
    assert bundle == {"kind": "display_data", "data": {"image/png": base64.b64encode(b"\x89PNG").decode(),
                                                       "text/html": "<b>", "application/json": '{"k": [1]}'},
                      "metadata": {"image/png": {"width": 4}}}
    assert decoded_displays([bundle])[0].data["image/png"] == b"\x89PNG"


def test_what_an_objects_repr_got_wrong_is_left_out_of_its_bundle():
    bundle = wire_bundle("display_data", {"image/png": "not base64 @@", "no-slash": "x", "text/plain": "<Obj>",
                                          "x/" + "y" * 300: "long"}, ["not", "a", "mapping"])
    assert bundle == {"kind": "display_data", "data": {"text/plain": "<Obj>"}, "metadata": {}}
    assert wire_bundle("display_data", {"image/png": "@@"}, {}) is None
    many = wire_bundle("display_data", {f"text/x-{n}": "x" for n in range(100)}, {})
    assert len(many["data"]) == 64
    decoded_displays([bundle, many])  # every bundle the session sends, the host reads


def run_in_runtime(code: str) -> dict:
    """What code prints as JSON on its last line, run by the calls' runtime with a notebook
    over a fresh `__main__` (the runtime has IPython; the server's environment need not)."""
    prelude = textwrap.dedent("""\
        import json, sys, types
        sys.path.insert(0, '.')
        from sandbox.inside.notebook import Notebook, make_shell
        shell = make_shell()
        main = types.ModuleType('__main__')
        sys.modules['__main__'] = main
        notebook = Notebook(main, shell)
        """)
    done = subprocess.run([PythonSettings().interpreter, "-I", "-c", prelude + code], capture_output=True, text=True,
                          timeout=120, cwd=str(__import__("tests.conftest").conftest.ROOT))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_shell_leaves_mains_names_and_rewrites_notebook_syntax():
    seen = run_in_runtime(textwrap.dedent("""\
        print(json.dumps({
            "names": sorted(name for name in vars(main) if not name.startswith('__')),
            "magic": notebook.rewritten("%time x = 1"),
            "shell": notebook.rewritten("!ls"),
            "broken": notebook.rewritten("def f(:"),
        }))
        """))
    assert seen["names"] == ["_dh"]
    assert seen["magic"] == "get_ipython().run_line_magic('time', 'x = 1')\n"
    assert seen["shell"] == "get_ipython().system('ls')\n"
    assert seen["broken"] is None


def test_displays_are_taken_whole_in_order_while_they_fit():
    taken = run_in_runtime(textwrap.dedent("""\
        from IPython.display import display, HTML
        for n in range(4):
            display(HTML(str(n) * 100))
        notebook.show(42, '42')
        first, cut = notebook.taken(600)
        notebook.show(42, '42')
        after, _ = notebook.taken(1 << 20)
        print(json.dumps({"first": first, "cut": cut, "after": after}))
        """))
    # the third and fourth HTML do not fit; the value after them does
    assert [bundle["data"].get("text/html", "value")[0] for bundle in taken["first"]] == ["0", "1", "v"]
    assert taken["cut"] is True
    assert taken["after"] == [{"kind": "execute_result", "data": {"text/plain": "42"}, "metadata": {}}]


def test_a_bundle_of_a_session_reads_as_a_display():
    png = base64.b64encode(b"\x89PNG\r\n").decode()
    (display,) = decoded_displays([{"kind": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"},
                                    "metadata": {"image/png": {"width": 4}}}])
    assert display == Display("display_data", {"image/png": b"\x89PNG\r\n", "text/plain": b"<Figure>"},
                              '{"image/png": {"width": 4}}')
    reply = CallReply.from_wire({"id": "c", "outcome": "OK", "displays": [{"kind": "execute_result",
                                                                             "data": {"text/plain": "1"}}]})
    assert reply.displays == [Display("execute_result", {"text/plain": b"1"})]


@pytest.mark.parametrize("displays", [
    "not a list", [{"kind": "stream", "data": {"text/plain": "x"}}], [{"kind": "display_data", "data": {}}],
    [{"kind": "display_data", "data": {"text/plain": 3}}], [{"kind": "display_data", "data": {"image/png": "@@"}}],
    [{"kind": "display_data", "data": {"no-slash": "x"}}], [{"kind": "display_data", "data": {"text/plain": "x"}}] * 1025,
    [{"kind": "display_data", "data": {"text/plain": "x"}, "metadata": []}],
])
def test_a_bundle_of_another_shape_is_refused(displays):
    with pytest.raises(ValueError):
        decoded_displays(displays)
