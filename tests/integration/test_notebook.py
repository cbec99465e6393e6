"""Sessions as the notebooks agents use: what a cell displays comes back on every door
(gRPC's displays, /run_jupyter's display as SandboxFusion gives it, MCP image content),
notebook syntax runs, a cut answer leaves the program running, output between cells
reaches the next answer, and a program that ends the session's process gets python3's
exit status. A real server; the official mcp client and the sandbox-fusion SDK."""

from __future__ import annotations

import base64
import io
import json
import sys
import time

import pytest

from tests.conftest import ROOT, RunningServer, free_port
from toolclient.client import NotFound
from toolcontract.displays import displayed_images
from toolcontract.v1 import toolserver_pb2 as pb

Image = pytest.importorskip("PIL.Image", reason="pillow reads the PNGs that come back")
mcp = pytest.importorskip("mcp", reason="the mcp extra: pip install -e '.[mcp]'")

FIGURE = ("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3), dpi=100)\n"
          "ax.plot([1, 2, 3], [3, 1, 2])\nax.set_title('three points')\nplt.show()\n")


@pytest.fixture(scope="module")
def notebook_server(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("notebook"), workers=1, sessions=4,
                            args=("--http-port", str(port)), full_session_preload=True)  # the default config's
    running.http = f"http://127.0.0.1:{port}"
    yield running
    running.stop()


def cells(server: RunningServer, *codes: str, **limits) -> list[pb.ExecuteResponse]:
    """Each code's answer, run as cells of one fresh session, closed afterwards."""
    with server.client() as client:
        session = client.open_session()
        try:
            return [client.run_python(code, session_id=session.session_id, **limits) for code in codes]
        finally:
            client.close_session(session.session_id)


def png_size(data: bytes) -> tuple[int, int]:
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.format == "PNG"
    return image.size


def test_a_shown_figure_comes_back_as_a_png_of_its_size(notebook_server):
    (shown,) = cells(notebook_server, FIGURE)
    assert shown.outcome == pb.OK, shown.stderr
    assert [display.kind for display in shown.python.displays] == ["display_data"]
    width, height = png_size(shown.python.displays[0].data["image/png"])
    # 4 x 3 inches at 100 dpi; IPython's inline backend crops the blank margin, as Jupyter does
    assert 300 <= width <= 400 and 220 <= height <= 300
    assert shown.python.displays[0].data["text/plain"].startswith(b"<Figure size 400x300")


def test_a_figure_drawn_and_not_shown_comes_back_once_the_cell_ends(notebook_server):
    drawn, empty = cells(notebook_server, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nx = 1",
                         "y = 2")
    assert [display.kind for display in drawn.python.displays] == ["display_data"]
    assert png_size(drawn.python.displays[0].data["image/png"])[0] > 100
    assert list(empty.python.displays) == []  # the figure was closed once shown


def test_rich_values_and_ipython_displays_come_back_as_mime_bundles(notebook_server):
    frame, shown, quiet = cells(
        notebook_server,
        "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})",
        "from IPython.display import display, Markdown, HTML, SVG, JSON, Image\n"
        "display(Markdown('**bold**'), HTML('<i>it</i>'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>'))\n"
        "display(JSON({'k': [1, 2]}))\n"
        "import io, matplotlib.pyplot as plt\nbuffer = io.BytesIO()\nplt.figure(figsize=(1, 1)).savefig(buffer, format='png')\n"
        "plt.close('all')\ndisplay(Image(buffer.getvalue()))\n"
        "print('printed')\n41 + 1",
        "41 + 1;")
    (table,) = frame.python.displays
    assert table.kind == "execute_result" and b"<table" in table.data["text/html"]
    assert table.data["text/plain"].decode() == frame.python.value and "x" in frame.python.value
    kinds = [(display.kind, sorted(display.data)) for display in shown.python.displays]
    assert kinds == [("display_data", ["text/markdown", "text/plain"]), ("display_data", ["text/html", "text/plain"]),
                     ("display_data", ["image/svg+xml", "text/plain"]),
                     ("display_data", ["application/json", "text/plain"]),
                     ("display_data", ["image/png", "text/plain"]), ("execute_result", ["text/plain"])]
    assert shown.python.displays[0].data["text/markdown"] == b"**bold**"
    assert json.loads(shown.python.displays[3].data["application/json"]) == {"k": [1, 2]}
    assert json.loads(shown.python.displays[3].metadata_json) == {"application/json": {"expanded": False, "root": "root"}}
    assert png_size(shown.python.displays[4].data["image/png"]) == (100, 100)
    assert shown.stdout == "printed\n" and shown.python.value == "42"
    assert displayed_images(shown) == [("image/png", shown.python.displays[4].data["image/png"])]
    assert quiet.outcome == pb.OK and quiet.python.value == "" and list(quiet.python.displays) == []


def test_displays_past_the_cap_are_left_out_and_figures_show_whatever_the_preload(tmp_path):
    """A session zygote whose preload names neither IPython nor matplotlib still makes the
    shell and switches pyplot to the inline backend before it forks."""
    server = RunningServer(tmp_path, workers=1, sessions=1,
                           config='[sessions]\nmax_display_bytes = 60000\npreload = ["math"]\n')
    try:
        shown, capped = cells(server, FIGURE, "from IPython.display import display, HTML\n"
                                              "for n in range(5):\n    display(HTML('x' * 20000))\nprint('all displayed')")
    finally:
        server.stop()
    assert [display.kind for display in shown.python.displays] == ["display_data"]
    assert 300 <= png_size(shown.python.displays[0].data["image/png"])[0] <= 400
    assert capped.outcome == pb.OK and capped.stdout == "all displayed\n"
    assert len(capped.python.displays) == 2 and capped.truncated


def test_notebook_syntax_runs_in_the_sessions_own_jail(notebook_server):
    written, listed, pip, timed, inline, moved, broken = cells(
        notebook_server,
        "open('notes.txt', 'w').write('kept')\nimport os\nhome = os.getcwd()",
        "!ls -a\n!echo $((6 * 7))",
        "%pip list",
        "%timeit -n 3 -r 2 sum(range(1000))\n%time total = sum(range(10))\ntotal",
        "%matplotlib inline\nimport matplotlib\nmatplotlib.get_backend()",
        "%cd /tmp\n!pwd\nx = [1]\nx?",
        "print('never')\n%not_a_magic",
    )
    assert written.outcome == pb.OK
    assert listed.outcome == pb.OK and listed.stdout.split() == [".", "..", "notes.txt", "42"]
    assert pip.outcome == pb.OK and "numpy" in pip.stdout and "matplotlib-inline" in pip.stdout
    assert timed.outcome == pb.OK and "per loop" in timed.stdout and "Wall time" in timed.stdout
    assert timed.python.value == "45"
    assert inline.outcome == pb.OK and "inline" in inline.python.value
    assert moved.outcome == pb.OK and moved.stdout.startswith("/tmp\n/tmp\nType:        list\n")
    assert (broken.outcome, broken.stdout) == (pb.ERROR, "never\n")  # IPython runs the lines before it
    assert broken.stderr == "UsageError: Line magic function `%not_a_magic` not found.\n"


def test_plain_python_cells_keep_python3s_names_and_errors(notebook_server):
    names, syntax = cells(notebook_server, "sorted(name for name in globals() if not name.startswith('__'))",
                          "def f(:\n    pass")
    assert names.python.value == "['_dh']"  # no In, Out, exit, open or get_ipython of IPython's: %cd's history
    assert syntax.outcome == pb.ERROR and "SyntaxError" in syntax.stderr


def test_a_cut_answer_leaves_the_cell_running(notebook_server):
    printed, after = cells(notebook_server, "for n in range(20000):\n    print(n)\ndone = True", "done",
                           max_output_bytes=65536)
    assert printed.outcome == pb.OK and printed.truncated
    assert len(printed.stdout.encode()) == 65536 and printed.stdout.startswith("0\n1\n")
    assert after.python.value == "True"


def between_cells(server: RunningServer, first: str, second: str) -> tuple[pb.ExecuteResponse, pb.ExecuteResponse]:
    """Two cells of one session with 1.5 s between them, while no cell runs."""
    with server.client() as client:
        session = client.open_session()
        try:
            answer = client.run_python(first, session_id=session.session_id)
            time.sleep(1.5)
            return answer, client.run_python(second, session_id=session.session_id)
        finally:
            client.close_session(session.session_id)


def test_a_threads_output_while_no_cell_runs_reaches_the_next_answer(notebook_server):
    started, later = between_cells(notebook_server, "import threading, time\nthreading.Thread(target=lambda: "
                                   "(time.sleep(0.5), print('from a thread', flush=True))).start()", "print('next')")
    assert started.stdout == ""
    assert later.stdout == "from a thread\nnext\n"


def test_a_childs_output_while_no_cell_runs_reaches_the_next_answer(notebook_server):
    started, later = between_cells(notebook_server, "import subprocess\n"
                                   "child = subprocess.Popen(['sh', '-c', 'sleep 0.5; echo from a child >&2'])",
                                   "print(child.wait())")
    assert (started.stdout, started.stderr) == ("", "")
    assert (later.stdout, later.stderr) == ("0\n", "from a child\n")


def test_a_program_that_ends_the_session_gets_python3s_exit_status(notebook_server):
    with notebook_server.client() as client:
        session = client.open_session()
        ended = client.run_python("import os\nprint('bye', flush=True)\nos._exit(7)", session_id=session.session_id)
        with pytest.raises(NotFound):
            client.run_python("1", session_id=session.session_id)
        killed_session = client.open_session()
        killed = client.run_python("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
                                   session_id=killed_session.session_id)
    assert (ended.outcome, ended.python.exit_code, ended.stdout) == (pb.ERROR, 7, "bye\n")
    assert "exited with status 7" in ended.error
    assert (killed.outcome, killed.python.exit_code) == (pb.CRASHED, -9) and "SIGKILL" in killed.error


def test_a_cell_runs_under_pythons_own_interrupt_handler(notebook_server):
    handler, spun = cells(notebook_server, "import signal\nsignal.getsignal(signal.SIGINT) is signal.default_int_handler",
                          "while True:\n    pass", timeout_ms=1500)
    assert handler.python.value == "True"
    assert spun.outcome == pb.TIMEOUT
    assert spun.stderr == ('Traceback (most recent call last):\n  File "<cell 2>", line 1, in <module>\n'
                           '    while True:\nKeyboardInterrupt\n')


def test_a_failed_import_in_a_cell_shows_only_the_cells_frames(notebook_server):
    (failed,) = cells(notebook_server, "import a_module_nobody_installed")
    assert failed.stderr == ('Traceback (most recent call last):\n  File "<cell 1>", line 1, in <module>\n'
                             "    import a_module_nobody_installed\n"
                             "ModuleNotFoundError: No module named 'a_module_nobody_installed'\n")


def test_run_jupyter_returns_displays_as_sandbox_fusion_does(notebook_server):
    from sandbox_fusion import RunJupyterRequest, RunStatus, run_jupyter

    result = run_jupyter(RunJupyterRequest(cells=[FIGURE, "import pandas as pd\npd.DataFrame({'a': [1]})", "%time 6 * 7",
                                                  "1;"]),
                         endpoint=notebook_server.http, max_attempts=1)
    assert result.status == RunStatus.Success
    figure, table, timed, quiet = result.cells
    assert sorted(figure.display[0]) == ["image/png", "text/plain"]
    assert png_size(base64.b64decode(figure.display[0]["image/png"]))[0] > 300
    assert "<table" in table.display[0]["text/html"] and table.display[0]["text/plain"].startswith("   a")
    assert timed.display == [{"text/plain": "42"}] and "Wall time" in timed.stdout
    assert quiet.display == []


def test_mcp_hands_a_figure_to_the_model_as_image_content(notebook_server, tmp_path):
    bridge = mcp.StdioServerParameters(command=sys.executable, args=["-m", "toolserver", "mcp", "--target",
                                                                     notebook_server.target], cwd=str(ROOT))

    async def run() -> list:
        async with mcp.stdio_client(bridge) as (read, write):
            async with mcp.ClientSession(read, write) as session:
                await session.initialize()
                opened = await session.call_tool("python_session_open", {})
                session_id = json.loads(opened.content[0].text)["session_id"]
                results = [await session.call_tool("python", {"code": code, "session_id": session_id}) for code in
                           (FIGURE, "for n in range(20000):\n    print(n)\ndone = True", "print(done)")]
                await session.call_tool("python_session_close", {"session_id": session_id})
                return results

    import asyncio

    figure, long, after = asyncio.run(run())
    assert [item.type for item in figure.content] == ["text", "image"]
    image = figure.content[1]
    assert image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert 300 <= png_size(data)[0] <= 400
    (tmp_path / "figure.png").write_bytes(data)
    assert "display: image/png" in figure.content[0].text
    assert not long.is_error and "truncated" in long.content[0].text
    assert after.content[0].text.strip().endswith("True")


def test_a_spawned_process_finds_what_the_cells_defined(notebook_server):
    defined, pooled, executor = cells(
        notebook_server,
        "import multiprocessing as mp\nprint('defined')\n\ndef square(n):\n    return n * n",
        "class Doubler:\n    def __call__(self, n):\n        return 2 * n\n\n"
        "if __name__ == '__main__':\n    with mp.get_context('spawn').Pool(2) as pool:\n"
        "        print(pool.map(square, range(5)), pool.map(Doubler(), [1, 2]))",
        "from concurrent.futures import ProcessPoolExecutor\nif __name__ == '__main__':\n"
        "    with ProcessPoolExecutor(1, mp_context=mp.get_context('spawn')) as ex:\n        print(list(ex.map(square, [7])))",
        timeout_ms=60_000)
    assert defined.stdout == "defined\n"
    assert pooled.outcome == pb.OK and pooled.stdout.endswith("[0, 1, 4, 9, 16] [2, 4]\n"), pooled.stderr
    assert executor.outcome == pb.OK, executor.stderr
    assert executor.stdout.endswith("[49]\n")


def test_an_object_whose_rich_repr_is_wrong_shows_its_text_and_the_session_serves_on(notebook_server):
    wrong, after = cells(notebook_server, "class Odd:\n    def _repr_png_(self):\n        return 'not an image'\n"
                                          "    def __repr__(self):\n        return 'Odd()'\nOdd()", "1 + 1")
    assert wrong.outcome == pb.OK and wrong.python.value == "Odd()"
    assert [dict(display.data) for display in wrong.python.displays] == [{"text/plain": b"Odd()"}]
    assert after.python.value == "2"
