"""What a notebook's first data cell costs: `import pandas, sklearn, matplotlib,
scipy.stats` (and seaborn), then a small fit, as the first cell of a new session, against
the same program as a stateless call (`/run_code`'s path), and a cell that draws a figure
and hands it back. One at a time; prints p50 and p90 in ms of the call's wall time as the
client sees it, and the elapsed time the server reports.

    python benchmarks/notebook_bench.py [--target 127.0.0.1:50051] [--runs 10]

The server's default config: its session zygote preloads `sessions.preload` (the data stack
and IPython's shell), its scientific workers `python.scientific_preload`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from toolclient.client import ToolClient
from toolcontract.v1 import toolserver_pb2 as pb

DATA_CELL = ("import pandas as pd, sklearn, matplotlib, scipy.stats, seaborn\n"
             "from sklearn.linear_model import LinearRegression\n"
             "frame = pd.DataFrame({'x': range(50), 'y': [2 * n + 1 for n in range(50)]})\n"
             "model = LinearRegression().fit(frame[['x']], frame['y'])\n"
             "print(round(model.coef_[0], 3), round(scipy.stats.pearsonr(frame.x, frame.y)[0], 3))\n")
FIGURE_CELL = ("import matplotlib.pyplot as plt\nplt.plot(range(10), [n * n for n in range(10)])\n"
               "plt.title('squares')\nplt.show()\n")


def timed(call: Callable[[], pb.ExecuteResponse], expect: Callable[[pb.ExecuteResponse], bool]
          ) -> tuple[float, float]:
    started = time.perf_counter()
    response = call()
    wall_ms = (time.perf_counter() - started) * 1000
    if not expect(response):
        raise SystemExit(f"unexpected answer: {pb.Outcome.Name(response.outcome)} {response.error} {response.stderr}")
    return wall_ms, response.elapsed_us / 1000


def in_new_session(client: ToolClient, code: str) -> Callable[[], pb.ExecuteResponse]:
    def call() -> pb.ExecuteResponse:
        session = client.open_session()
        try:
            return client.run_python(code, session_id=session.session_id, timeout_ms=30_000)
        finally:
            client.close_session(session.session_id)
    return call


def report(name: str, samples: list[tuple[float, float]]) -> None:
    walls = sorted(wall for wall, _ in samples)
    elapsed = sorted(server for _, server in samples)
    p90 = walls[max(0, int(len(walls) * 0.9) - 1)]
    print(f"{name:44s} wall p50 {statistics.median(walls):8.1f} p90 {p90:8.1f} ms; "
          f"server elapsed p50 {statistics.median(elapsed):8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    fitted = lambda response: response.outcome == pb.OK and response.stdout == "2.0 1.0\n"  # noqa: E731
    shown = lambda response: response.outcome == pb.OK and any(  # noqa: E731
        "image/png" in display.data for display in response.python.displays)
    with ToolClient(args.target, timeout_s=120) as client:
        rows = {
            "data cell, first cell of a new session": (in_new_session(client, DATA_CELL), fitted),
            "data cell, stateless call (/run_code's path)": (
                lambda: client.run_python(DATA_CELL, timeout_ms=30_000), fitted),
            "figure cell, first cell of a new session": (in_new_session(client, FIGURE_CELL), shown),
        }
        for name, (call, expect) in rows.items():
            timed(call, expect)  # warm: the pools have met the call once
            report(name, [timed(call, expect) for _ in range(args.runs)])


if __name__ == "__main__":
    main()
