"""Programs whose imports a look at their code cannot see, against the same programs sent
plain: the p50 of each shape, and its ratio to the plain one.

The shapes: plain; the code base64-encoded inside `exec` (as rStar2-Agent's tool sends
it); `importlib.import_module` of each module; `__import__` with a name computed at run
time. The programs use the data stack (pandas, matplotlib, scikit-learn), which only the
scientific workers hold imported.

    python benchmarks/hidden_imports_bench.py --target 127.0.0.1:50051 [--calls 15]

Calls go one at a time, after one call of each shape to warm the pools.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import time

from toolclient.client import ToolClient
from toolcontract.v1 import toolserver_pb2 as pb

PROGRAMS = {
    "pandas + matplotlib": (
        (("pandas", "pd"), ("matplotlib.pyplot", "plt")),
        "frame = pd.DataFrame({'x': range(100), 'y': [i * i for i in range(100)]})\n"
        "figure, axes = plt.subplots()\naxes.plot(frame['x'], frame['y'])\nfigure.savefig('plot.png')\n"
        "print(frame['y'].sum())\n"),
    "scikit-learn": (
        (("sklearn.linear_model", "linear"), ("numpy", "np")),
        "xs = np.arange(40).reshape(-1, 1)\nmodel = linear.LinearRegression().fit(xs, 3 * xs.ravel() + 1)\n"
        "print(round(float(model.coef_[0]), 3))\n"),
}


def shapes(imports: tuple[tuple[str, str], ...], body: str) -> dict[str, str]:
    plain = "".join(f"import {module} as {alias}\n" for module, alias in imports) + body
    encoded = base64.b64encode(plain.encode()).decode()
    return {
        "plain": plain,
        "base64 in exec": f"import base64\nexec(base64.b64decode('{encoded}').decode())\n",
        "importlib.import_module": "import importlib\n" + "".join(
            f"{alias} = importlib.import_module({module!r})\n" for module, alias in imports) + body,
        "__import__ computed": "".join(
            f"{alias} = __import__(''.join(reversed({module[::-1]!r})), fromlist=['_'])\n"
            for module, alias in imports) + body,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    with ToolClient(args.target) as client:
        for name, (imports, body) in PROGRAMS.items():
            p50s: dict[str, float] = {}
            for shape, code in shapes(imports, body).items():
                client.run_python(code, timeout_ms=30000)  # the pools warm
                times, outcomes = [], set()
                for _ in range(args.calls):
                    started = time.monotonic()
                    response = client.run_python(code, timeout_ms=30000)
                    times.append(time.monotonic() - started)
                    outcomes.add(pb.Outcome.Name(response.outcome))
                p50s[shape] = statistics.median(times)
                print(f"{name:20s} {shape:24s} p50 {p50s[shape] * 1000:7.0f} ms  "
                      f"x{p50s[shape] / p50s['plain']:.2f} of plain  outcomes {sorted(outcomes)}")


if __name__ == "__main__":
    main()
