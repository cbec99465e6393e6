"""The cpp tool on a real server: real programs compiled by g++ in the jail and judged
case by case as a competitive-programming judge judges them, over gRPC and through the
fronts RL code rewards call (SandboxFusion's /run_code with its SDK and verl's reward,
code-judge's /judge)."""

from __future__ import annotations

import json
import subprocess

import pytest
import requests

from tests.conftest import ROOT, RunningServer, free_port
from toolcontract.v1 import toolserver_pb2 as pb

pytestmark = pytest.mark.skipif(subprocess.run(["which", "g++"], capture_output=True).returncode != 0,
                                reason="g++ is not installed (scripts/setup.sh installs it)")

A_PLUS_B = r"""
#include <bits/stdc++.h>
using namespace std;
int main() { long long a, b; cin >> a >> b; cout << a + b << "\n"; }
"""
CASES = [pb.CppCase(stdin="1 2\n", expected_stdout="3\n"), pb.CppCase(stdin="40 2", expected_stdout="42"),
         pb.CppCase(stdin="-5 5\n", expected_stdout="0\n")]
CPP_WORKERS = 2


@pytest.fixture(scope="module")
def cpp_server(tmp_path_factory):
    port = free_port()
    running = RunningServer(tmp_path_factory.mktemp("cpp"), workers=1, extra_slots=CPP_WORKERS,
                            args=("--http-port", str(port)),
                            config=f"[lean]\nenabled = false\n[cpp]\nworkers = {CPP_WORKERS}\n")
    yield running, f"http://127.0.0.1:{port}"
    running.stop()


@pytest.fixture(scope="module")
def http(cpp_server):
    return cpp_server[1]


@pytest.fixture(scope="module")
def client(cpp_server):
    with cpp_server[0].client() as client:
        yield client


def judge(client, source: str, cases=(), *, stdin: str = "", timeout_ms: int = 2000, memory_mb: int = 256,
          max_output_bytes: int = 0, **call) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(cpp=pb.CppCall(source=source, cases=list(cases), stdin=stdin, **call),
                                            limits=pb.Limits(timeout_ms=timeout_ms, memory_mb=memory_mb,
                                                             max_output_bytes=max_output_bytes)))


def verdicts(response: pb.ExecuteResponse) -> list[str]:
    return [pb.Verdict.Name(case.verdict) for case in sorted(response.cpp.cases, key=lambda case: case.index)]


def test_the_tool_is_listed_with_its_compiler_and_serves(client):
    spec = next(spec for spec in client.list_tools() if spec.name == "cpp")
    assert "g++" in spec.description and "-std=c++17" in spec.description
    assert {"source", "cases", "compare"} <= set(json.loads(spec.parameters)["properties"])
    (status,) = [tool for tool in client.server_info().tools if tool.name == "cpp"]
    assert status.available and "ready" in status.detail


def test_an_accepted_program_passes_every_case_and_compiles_once(client):
    first = judge(client, A_PLUS_B + "// accepted\n", CASES)
    assert first.outcome == pb.OK and first.error == ""
    assert verdicts(first) == ["ACCEPTED"] * 3 and first.cpp.passed == 3
    assert first.cpp.compile.ok and not first.cpp.compile.cached and first.cpp.compile.elapsed_us > 0
    assert sorted(case.index for case in first.cpp.cases) == [0, 1, 2]
    again = judge(client, A_PLUS_B + "// accepted\n", CASES[:1])
    assert again.cpp.compile.cached and again.cpp.compile.elapsed_us == 0 and verdicts(again) == ["ACCEPTED"]
    assert again.stdout == "3\n"  # one case: its streams are the answer's


def test_a_wrong_answer_is_judged_per_case_and_the_comparison_is_the_callers(client):
    source = '#include <cstdio>\nint main(){int a,b; scanf("%d %d",&a,&b); printf("%d  \\n\\n", a*b);}'
    response = judge(client, source, [pb.CppCase(stdin="2 2", expected_stdout="4"),
                                      pb.CppCase(stdin="2 3", expected_stdout="5")])
    assert response.outcome == pb.OK and verdicts(response) == ["ACCEPTED", "WRONG_ANSWER"]
    assert response.cpp.passed == 1
    exact = judge(client, source, [pb.CppCase(stdin="2 2", expected_stdout="4")], compare=pb.COMPARE_EXACT)
    tokens = judge(client, source, [pb.CppCase(stdin="2 2", expected_stdout=" 4 ")], compare=pb.COMPARE_TOKENS)
    assert verdicts(exact) == ["WRONG_ANSWER"] and verdicts(tokens) == ["ACCEPTED"]


def test_a_compile_error_is_the_programs_with_the_compilers_message(client):
    response = judge(client, "int main() { return undefined_name; }", CASES)
    assert response.outcome == pb.COMPILE_ERROR and "compilation failed" in response.error
    assert "undefined_name" in response.stderr and "error" in response.cpp.compile.stderr
    assert not response.cpp.compile.ok and response.cpp.compile.exit_code != 0 and not response.cpp.cases
    assert response.cpp.compile.outcome == pb.ERROR


@pytest.mark.parametrize("body, exit_code, error", [
    ("return 3;", 3, "exited with status 3"),
    ("int *p = nullptr; return *p;", -11, "SIGSEGV"),
    ('throw std::runtime_error("boom");', -6, "SIGABRT"),
])
def test_runtime_errors_are_the_programs(client, body, exit_code, error):
    response = judge(client, "#include <stdexcept>\nint main() {" + body + "}", [pb.CppCase(expected_stdout="")])
    (case,) = response.cpp.cases
    assert verdicts(response) == ["RUNTIME_ERROR"] and case.outcome == pb.ERROR and response.outcome == pb.ERROR
    assert case.exit_code == exit_code and error in case.error and response.error.startswith("case 0:")


def test_time_and_memory_limits_hold_per_case(client):
    source = r"""
#include <bits/stdc++.h>
int main() { int n; std::cin >> n;
  if (n == 1) { volatile unsigned long x = 0; while (true) x++; }
  if (n == 2) { std::vector<char> v(512u << 20, 1); std::cout << v[12345] << "\n"; }
  std::cout << n << "\n"; }
"""
    response = judge(client, source, [pb.CppCase(stdin=str(n), expected_stdout=f"{n}\n") for n in (0, 1, 2, 3)],
                     timeout_ms=1000, memory_mb=128)
    assert verdicts(response) == ["ACCEPTED", "TIME_LIMIT_EXCEEDED", "MEMORY_LIMIT_EXCEEDED", "ACCEPTED"]
    cases = {case.index: case for case in response.cpp.cases}
    assert cases[1].outcome == pb.TIMEOUT and 900_000 <= cases[1].elapsed_us < 5_000_000
    assert cases[2].outcome == pb.MEMORY_LIMIT and response.outcome == pb.TIMEOUT  # the first case that failed
    roomy = judge(client, source, [pb.CppCase(stdin="2", expected_stdout="\x01\n2\n")], memory_mb=768)
    assert verdicts(roomy) == ["ACCEPTED"]  # the same program, under a larger limit


def test_deep_recursion_gets_a_judges_stack(client):
    source = r"""
#include <cstdio>
int depth(int n) { volatile char pad[64]; pad[0] = n; return n == 0 ? pad[0] : 1 + depth(n - 1); }
int main() { printf("%d\n", depth(1000000)); }
"""
    assert verdicts(judge(client, source, [pb.CppCase(expected_stdout="1000000\n")], memory_mb=256)) == ["ACCEPTED"]


def test_huge_output_is_cut_and_cannot_be_accepted(client):
    source = '#include <cstdio>\nint main(){ for (int i = 0; i < 3000000; i++) puts("0123456789"); }'
    response = judge(client, source, [pb.CppCase(expected_stdout="0123456789\n" * 100_000), pb.CppCase()],
                     max_output_bytes=4096)  # 33 MB to write: each run is stopped at the cap
    cases = {case.index: case for case in response.cpp.cases}
    for case in cases.values():
        assert case.verdict == pb.OUTPUT_LIMIT_EXCEEDED and case.outcome == pb.OUTPUT_LIMIT and case.truncated
        assert len(case.stdout) == 4096 and case.stdout.startswith("0123456789\n")
    assert response.outcome == pb.OUTPUT_LIMIT and response.truncated


def test_stop_on_failure_skips_the_cases_not_yet_started(client):
    cases = [pb.CppCase(stdin=f"{n} 0", expected_stdout=f"{n}\n") for n in range(8)]
    cases[1].expected_stdout = "wrong\n"
    response = judge(client, A_PLUS_B, cases, stop_on_failure=True)
    found = verdicts(response)
    assert found[1] == "WRONG_ANSWER" and found[0] == "ACCEPTED"
    assert found[CPP_WORKERS:] == ["SKIPPED"] * (8 - CPP_WORKERS)  # one round of one case per worker ran


def test_stdin_without_cases_is_one_unjudged_run(client):
    response = judge(client, A_PLUS_B, stdin="20 22\n")
    assert response.outcome == pb.OK and response.stdout == "42\n" and verdicts(response) == ["FINISHED"]


def test_a_json_call_reaches_the_same_tool(client):
    arguments = {"source": A_PLUS_B, "cases": [{"stdin": "1 1", "expected_stdout": "2"}], "compare": "tokens"}
    response = client.execute(pb.ExecuteRequest(json=pb.JsonCall(tool="cpp", arguments=json.dumps(arguments))))
    assert verdicts(response) == ["ACCEPTED"]


def test_a_fork_bomb_ends_and_leaves_the_server_serving(client):
    source = "#include <unistd.h>\nint main(){ while (true) fork(); }"
    response = judge(client, source, [pb.CppCase()], timeout_ms=2000)
    # On a loaded machine the zygote may take past its grace to kill the whole tree: the
    # worker is then replaced, and the run is the sandbox's failure, not the program's verdict.
    assert response.cpp.cases[0].verdict in (pb.TIME_LIMIT_EXCEEDED, pb.RUNTIME_ERROR, pb.SYSTEM_ERROR), response
    assert verdicts(judge(client, A_PLUS_B, CASES)) == ["ACCEPTED"] * 3


def test_a_program_sees_nothing_outside_its_scratch(client):
    source = r"""
#include <cstdio>
const char *paths[] = {"/etc/shadow", "/root/.bashrc", "/proc/1/environ", "/tmp/toolserver-test-slots",
                       PROJECT "/README.md", PROJECT "/toolserver/cpp/executor.py"};
int main() { for (const char *path : paths) { FILE *f = fopen(path, "r"); if (f) { printf("%s\n", path); fclose(f); } }
  FILE *mine = fopen("mine.txt", "w"); fputs("ok", mine); fclose(mine); puts("wrote"); }
"""
    response = judge(client, f'#define PROJECT "{ROOT}"\n' + source, [pb.CppCase()])
    assert response.outcome == pb.OK and response.stdout == "wrote\n"  # none opened; its own file written


def test_a_caller_may_be_allowed_python_only(tmp_path):
    from tests.security.conftest import POLICY_FILE, TOKENS
    from toolclient.client import PermissionDenied, ToolClient

    policies = tmp_path / "policies.toml"
    policies.write_text(POLICY_FILE)
    running = RunningServer(tmp_path, workers=1, extra_slots=CPP_WORKERS,
                            config=f'[auth]\npolicy_file = "{policies}"\n[lean]\nenabled = false\n'
                                   f"[cpp]\nworkers = {CPP_WORKERS}\n")
    try:
        with ToolClient(running.target, timeout_s=60, token=TOKENS["bob"]) as bob:  # bob: python only
            with pytest.raises(PermissionDenied, match="cpp"):
                bob.execute(pb.ExecuteRequest(cpp=pb.CppCall(source=A_PLUS_B)))
            assert "cpp" not in {spec.name for spec in bob.list_tools()}
    finally:
        running.stop()


# The fronts code rewards call.

def test_the_sandbox_fusion_sdk_runs_cpp(http):
    from sandbox_fusion import CommandRunStatus, RunCodeRequest, RunStatus, run_code

    result = run_code(RunCodeRequest(code=A_PLUS_B, language="cpp", stdin="20 22\n"), endpoint=http, max_attempts=1)
    assert result.status == RunStatus.Success and result.run_result.stdout == "42\n"
    assert result.compile_result.status == CommandRunStatus.Finished and result.compile_result.return_code == 0
    failed = run_code(RunCodeRequest(code="int main() { return x; }", language="cpp"), endpoint=http, max_attempts=1)
    assert failed.status == RunStatus.Failed and failed.run_result is None
    assert failed.compile_result.return_code != 0 and "x" in failed.compile_result.stderr


def test_run_code_answers_cpp_as_sandbox_fusion_does(http):
    body = requests.post(f"{http}/run_code", json={"code": "int main() { return 4; }", "language": "cpp",
                                                   "run_timeout": 5, "compile_timeout": 20}, timeout=60).json()
    assert body["status"] == "Failed" and body["run_result"]["return_code"] == 4
    assert body["compile_result"]["status"] == "Finished" and body["compile_result"]["return_code"] == 0
    slow = requests.post(f"{http}/run_code", json={"code": "int main() { while (true); }", "language": "cpp",
                                                   "run_timeout": 1}, timeout=60).json()
    assert slow["run_result"]["status"] == "TimeLimitExceeded"


def test_verls_code_reward_scores_a_cpp_solution(http):
    verl_sandbox = pytest.importorskip("verl.utils.reward_score.sandbox_fusion.utils", reason="verl is not installed")
    in_outs = {"inputs": ["1 2\n", "40 2\n"], "outputs": ["3\n", "42\n"]}
    results, metadata = verl_sandbox.check_correctness(f"{http}/run_code", in_outs, A_PLUS_B, timeout=10,
                                                       language="cpp")
    assert results == [True, True] and [case["status"] for case in metadata] == ["success"] * 2
    broken, metadata = verl_sandbox.check_correctness(f"{http}/run_code", in_outs, "int main() { x; }", timeout=10,
                                                      language="cpp")
    assert broken == [-4, -4] and metadata[0]["status"] == "compile_error"
    crashing, _ = verl_sandbox.check_correctness(f"{http}/run_code", in_outs, "int main() { return 1; }",
                                                 timeout=10, language="cpp")
    assert crashing == [-2, -2]  # a runtime error


def test_code_judge_judges_cpp_submissions(http):
    batch = {"submissions": [{"type": "cpp", "solution": A_PLUS_B, "input": "1 2", "expected_output": "3"},
                             {"type": "cpp", "solution": A_PLUS_B, "input": "1 2", "expected_output": "4"},
                             {"type": "cpp", "solution": "int main() { oops }", "input": "", "expected_output": ""}]}
    results = requests.post(f"{http}/judge/batch", json=batch, timeout=120).json()["results"]
    assert [(r["run_success"], r["success"]) for r in results] == [(True, True), (True, False), (False, False)]
    assert "oops" in results[2]["stderr"] and results[2]["reason"] == ""


def test_a_program_that_includes_bits_stdcpp_compiles_on_the_precompiled_header(client):
    cold = judge(client, A_PLUS_B + "// precompiled\n", CASES[:1])
    assert cold.cpp.compile.ok and not cold.cpp.compile.cached
    assert cold.cpp.compile.elapsed_us < 1_000_000  # parsing the header alone takes 1.3 s here
