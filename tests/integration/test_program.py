"""The program tool on a real server: Java, Go, Rust, JavaScript and TypeScript programs,
each compiled (where its language compiles) by its real toolchain in the jail and judged
case by case as C++ is, over gRPC and through the fronts code rewards call (SandboxFusion's
/run_code with its SDK and verl's reward, code-judge's /judge); and a language added as a
data file alone (tests/data/languages)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from tests.conftest import ROOT, RunningServer, free_port
from toolclient.client import FailedPrecondition, InvalidArgument
from toolcontract.v1 import toolserver_pb2 as pb

WORKERS = 2
LANGUAGES_DIR = ROOT / "tests" / "data" / "languages"

# One program per language whose first word of input picks what it does: sum (a + b),
# exit (prints, exits 3), loop, memory (allocates without end), output (1 MB), threads
# (starts 200 threads, past the call's process cap).
PROGRAMS = {
    "java": """
import java.util.*;
public class Main {
  public static void main(String[] args) throws Exception {
    Scanner in = new Scanner(System.in);
    switch (in.next()) {
      case "sum": System.out.println(in.nextLong() + in.nextLong()); break;
      case "exit": System.out.println("bye"); System.exit(3); break;
      case "loop": while (true) {}
      case "memory": { List<long[]> kept = new ArrayList<>(); while (true) kept.add(new long[1 << 20]); }
      case "output": { StringBuilder s = new StringBuilder(); for (int i = 0; i < 100000; i++) s.append("0123456789");
                       System.out.print(s); break; }
      case "threads": for (int i = 0; i < 200; i++) { Thread t = new Thread(() -> { try { Thread.sleep(100000); }
                        catch (InterruptedException e) {} }); t.setDaemon(true); t.start(); }
                      System.out.println("started"); break;
    }
  }
}
""",
    "go": """
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var mode string
	fmt.Fscan(in, &mode)
	switch mode {
	case "sum":
		var a, b int64
		fmt.Fscan(in, &a, &b)
		fmt.Println(a + b)
	case "exit":
		fmt.Println("bye")
		os.Exit(3)
	case "loop":
		for {
		}
	case "memory":
		var kept [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			kept = append(kept, b)
		}
	case "output":
		fmt.Print(strings.Repeat("0123456789", 100000))
	case "threads":
		for i := 0; i < 200; i++ {
			go func() { runtime.LockOSThread(); time.Sleep(100 * time.Second) }()
		}
		time.Sleep(2 * time.Second)
		fmt.Println("started")
	}
}
""",
    "rust": """
use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let w: Vec<&str> = s.split_whitespace().collect();
    match w[0] {
        "sum" => { let a: i64 = w[1].parse().unwrap(); let b: i64 = w[2].parse().unwrap(); println!("{}", a + b); }
        "exit" => { println!("bye"); std::process::exit(3); }
        "loop" => loop {},
        "memory" => { let mut kept = Vec::new(); loop { kept.push(vec![1u8; 1 << 20]); } }
        "output" => print!("{}", "0123456789".repeat(100000)),
        "threads" => {
            let started: Vec<_> = (0..200).map(|_| std::thread::spawn(|| std::thread::sleep(
                std::time::Duration::from_secs(100)))).collect();
            println!("started {}", started.len());
        }
        _ => {}
    }
}
""",
    "javascript": """
const w = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/);
switch (w[0]) {
  case 'sum': console.log(Number(w[1]) + Number(w[2])); break;
  case 'exit': console.log('bye'); process.exit(3);
  case 'loop': while (true) {}
  case 'memory': { const kept = []; while (true) kept.push(new Array(1 << 20).fill(1.5)); }
  case 'output': process.stdout.write('0123456789'.repeat(100000)); break;
}
""",
    "typescript": """
import * as fs from "fs";
const w: string[] = fs.readFileSync(0, "utf8").trim().split(/\\s+/);
switch (w[0]) {
  case "sum": console.log(Number(w[1]) + Number(w[2])); break;
  case "exit": console.log("bye"); process.exit(3);
  case "loop": while (true) {}
  case "memory": { const kept: number[][] = []; while (true) kept.push(new Array(1 << 20).fill(1.5)); }
  case "output": process.stdout.write("0123456789".repeat(100000)); break;
}
""",
}
# A source that does not compile, and what its compiler says (JavaScript: what node says
# when it runs it).
BROKEN = {
    "java": ("public class Main { public static void main(String[] a) { int x = ; } }", "illegal start of expression"),
    "go": ("package main\nfunc main() { x := }\n", "syntax error"),
    "rust": ('fn main() { let x: i32 = "a"; println!("{}", x); }', "mismatched types"),
    "javascript": ("let x = ;", "SyntaxError"),
    "typescript": ('let x: number = "a";\nconsole.log(x);\n', "is not assignable to type 'number'"),
}
COMPILED = ("java", "go", "rust", "typescript")
THREADED = ("java", "go", "rust")  # their programs start 200 threads
MAX_OUTPUT = 10_000


@pytest.fixture(scope="module")
def program_server(tmp_path_factory):
    port = free_port()
    config = (f"[lean]\nenabled = false\n[cpp]\nenabled = false\n[bash]\nenabled = false\n"
              f"[program]\nworkers = {WORKERS}\nlanguages_dir = \"{LANGUAGES_DIR}\"\n")
    running = RunningServer(tmp_path_factory.mktemp("program"), workers=1, extra_slots=WORKERS,
                            args=("--http-port", str(port)), config=config)
    yield running, f"http://127.0.0.1:{port}"
    running.stop()


@pytest.fixture(scope="module")
def http(program_server):
    return program_server[1]


@pytest.fixture(scope="module")
def client(program_server):
    with program_server[0].client() as client:
        yield client


def run(client, language: str, source: str, cases=(), *, stdin: str = "", timeout_ms: int = 2000,
        memory_mb: int = 256, max_output_bytes: int = 0) -> pb.ExecuteResponse:
    return client.execute(pb.ExecuteRequest(
        program=pb.ProgramCall(language=language, source=source, cases=list(cases), stdin=stdin),
        limits=pb.Limits(timeout_ms=timeout_ms, memory_mb=memory_mb, max_output_bytes=max_output_bytes)))


def by_index(response: pb.ExecuteResponse) -> list[pb.CppCaseResult]:
    return sorted(response.program.cases, key=lambda case: case.index)


def test_the_tool_lists_each_language_with_its_toolchain_and_why_one_is_missing(client):
    spec = next(tool for tool in client.list_tools() if tool.name == "program")
    served = json.loads(spec.parameters)["properties"]["language"]["enum"]
    assert sorted(served) == ["c", "go", "java", "javascript", "rust", "typescript"]
    assert "javac 17" in spec.description and "rustc" in spec.description and "go version" in spec.description
    status = next(tool for tool in client.server_info().tools if tool.name == "program")
    assert status.available and "kotlin unavailable: /usr/bin/kotlinc does not run: install Debian's kotlin" in status.detail


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_each_language_is_judged_case_by_case_with_the_cpp_tools_verdicts(client, language):
    cases = [pb.CppCase(stdin="sum 1 2\n", expected_stdout="3\n"), pb.CppCase(stdin="sum 40 2", expected_stdout="42"),
             pb.CppCase(stdin="sum 2 2\n", expected_stdout="5\n"), pb.CppCase(stdin="exit"),
             pb.CppCase(stdin="loop"), pb.CppCase(stdin="memory"), pb.CppCase(stdin="output")]
    response = run(client, language, PROGRAMS[language], cases, max_output_bytes=MAX_OUTPUT)
    results = by_index(response)
    verdicts = [pb.Verdict.Name(result.verdict) for result in results]
    expected = ["ACCEPTED", "ACCEPTED", "WRONG_ANSWER", "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED",
                "MEMORY_LIMIT_EXCEEDED", "OUTPUT_LIMIT_EXCEEDED"]
    assert verdicts == expected, [(verdict, result.error, result.stderr[-300:])
                                      for verdict, result in zip(verdicts, results)]
    assert response.program.passed == 2 and response.outcome == pb.ERROR  # the first failed case's outcome
    assert (results[3].exit_code, results[3].stdout) == (3, "bye\n")
    assert "memory limit" in results[5].error
    cut = results[6]
    assert cut.truncated and 0 < len(cut.stdout) <= MAX_OUTPUT and cut.stdout.startswith("0123456789")
    if language in THREADED:  # the call's process cap holds for the runtime's threads (Go's report of them
        threads = by_index(run(client, language, PROGRAMS[language], stdin="threads"))[0]  # is past MAX_OUTPUT)
        assert pb.Verdict.Name(threads.verdict) == "RUNTIME_ERROR" and "started" not in threads.stdout, threads
    assert response.program.HasField("compile") == (language in COMPILED)
    again = run(client, language, PROGRAMS[language], cases[:1])
    assert pb.Verdict.Name(by_index(again)[0].verdict) == "ACCEPTED"
    if language in COMPILED:
        assert response.program.compile.ok and not response.program.compile.cached
        assert again.program.compile.cached and again.program.compile.elapsed_us == 0


@pytest.mark.parametrize("language", list(BROKEN))
def test_a_program_that_does_not_compile_gets_its_compilers_message(client, language):
    source, message = BROKEN[language]
    response = run(client, language, source)
    if language in COMPILED:
        assert response.outcome == pb.COMPILE_ERROR and not response.program.compile.ok
        assert message in response.program.compile.stderr and message in response.stderr
        assert not response.program.cases
    else:
        assert response.outcome == pb.ERROR and message in response.stderr
        assert pb.Verdict.Name(by_index(response)[0].verdict) == "RUNTIME_ERROR"


JAVA_NAMED = {  # the public class names the program, whatever it is; where none is public, the one with main
    "Solution": "import java.util.*;\n\nclass Helper { static int twice(int x) { return 2 * x; } }\n\n"
                "public final class Solution {\n    public static class Inner {}\n"
                "    public static void main(String[] args) {\n"
                "        System.out.println(Helper.twice(new Scanner(System.in).nextInt()));\n    }\n}\n",
    "Main": "class Main {\n    public static void main(String[] args) {\n"
            "        System.out.println(2 * new java.util.Scanner(System.in).nextInt());\n    }\n}\n",
    "Sol, not public": "import java.util.*;\n\nclass Twice {\n    static int of(int x) { return 2 * x; }\n}\n\n"
                       "class Sol {\n    static class Reader {\n        Scanner in = new Scanner(System.in);\n    }\n\n"
                       "    public static void main(String[] args) {\n"
                       "        System.out.println(Twice.of(new Reader().in.nextInt()));\n    }\n}\n",
}


@pytest.mark.parametrize("name", list(JAVA_NAMED))
def test_a_java_program_is_its_public_class_whatever_its_name(client, name):
    response = run(client, "java", JAVA_NAMED[name], [pb.CppCase(stdin="21", expected_stdout="42")])
    assert response.outcome == pb.OK and response.program.passed == 1, (response.error, response.stderr)


JAVA_AHEAD = {  # programs whose runs on a JVM started ahead must be the runs `java -cp out Main` makes, by stdin
    "modes": ("""
import java.io.*;
public class Main {
  static void deep(int n) { if (n == 0) throw new IllegalStateException("deep"); deep(n - 1); }
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String mode = in.readLine();
    if (mode.equals("echo")) {
      long n = 0, sum = 0;
      for (int c; (c = in.read()) >= 0; n++) sum += c;
      System.out.println(n + " " + sum);
    } else if (mode.equals("exit")) { System.out.print("bye"); System.exit(7); }
    else if (mode.equals("props")) {
      System.out.println(System.getProperty("java.class.path") + " " + System.getProperty("sun.java.command"));
    } else if (mode.equals("ahead")) {
      System.out.println(ProcessHandle.current().info().commandLine().orElse("").contains("ToolserverJavaStart"));
    } else {
      try { deep(2); } catch (RuntimeException e) {
        Exception outer = new Exception("outer", e);
        outer.addSuppressed(new ArithmeticException("also"));
        throw outer;
      }
    }
  }
}
""", ["echo\n" + "0123456789" * 100_000, "exit\n", "props\n", "throw\n"]),
    "initializer": ("public class Main {\n  static final int N = Integer.parseInt(\"x\");\n"
                    "  public static void main(String[] args) { System.out.println(N); }\n}\n", [""]),
    "no static main": ("public class Main {\n  public void main(String[] args) {}\n}\n", [""]),
}


def run_java_here(source: str, stdin: str, directory) -> tuple[str, str, int]:
    """What `java -cp out Main` makes of source on this host: stdout, stderr, exit status."""
    (directory / "Main.java").write_text(source)
    subprocess.run(["/usr/bin/javac", "-d", "out", "Main.java"], cwd=directory, check=True, timeout=120)
    ran = subprocess.run(["/usr/bin/java", "-cp", "out", "Main"], cwd=directory, input=stdin, capture_output=True,
                         text=True, timeout=120)
    return ran.stdout, ran.stderr, ran.returncode


@pytest.mark.parametrize("name", list(JAVA_AHEAD))
def test_a_java_run_on_a_jvm_started_ahead_is_the_run_java_makes(client, tmp_path, name):
    """Each worker starts the JVM of a Java call's next run ahead; the run hands it the main
    class and its stdin (a megabyte, more than a pipe holds). Its output, stack traces (a
    cause, a suppressed exception), exit status and launcher messages are java's own."""
    source, stdins = JAVA_AHEAD[name]
    if name == "modes":  # once each worker has run it, its next run is on a JVM started ahead
        started = [by_index(run(client, "java", source, stdin="ahead\n", timeout_ms=10_000))[0].stdout
                   for _ in range(2 * WORKERS)]
        assert started[-1] == "true\n", started
    for stdin in stdins:
        expected = run_java_here(source, stdin, tmp_path)
        response = run(client, "java", source, [pb.CppCase(stdin=stdin)] * 3, timeout_ms=10_000)
        for result in by_index(response):
            assert (result.stdout, result.stderr, result.exit_code) == expected, (stdin[:10], result)


def test_a_language_added_as_a_data_file_is_served(client):
    source = '#include <stdio.h>\nint main(void) { long a, b; scanf("%ld %ld", &a, &b); printf("%ld\\n", a + b); }\n'
    response = run(client, "c", source, [pb.CppCase(stdin="1 2", expected_stdout="3")])
    assert response.outcome == pb.OK and response.program.passed == 1 and response.program.compile.ok


def test_unknown_and_unavailable_languages_are_refused_with_the_reason(client, http):
    with pytest.raises(InvalidArgument, match="unknown language 'cobol'.*java"):
        run(client, "cobol", "DISPLAY 'HI'.")
    with pytest.raises(FailedPrecondition, match="language kotlin is not available: /usr/bin/kotlinc does not run"):
        run(client, "kotlin", "fun main() {}")
    body = requests.post(f"{http}/run_code", json={"code": "x", "language": "cobol"}, timeout=30).json()
    assert body["status"] == "SandboxError" and "cobol" in body["message"] and "java" in body["message"]


def test_a_json_call_names_the_language(client):
    arguments = json.dumps({"language": "golang", "source": PROGRAMS["go"], "stdin": "sum 20 22"})
    response = client.execute(pb.ExecuteRequest(json=pb.JsonCall(tool="program", arguments=arguments)))
    assert response.outcome == pb.OK and response.stdout == "42\n"


# The fronts code rewards call, with SandboxFusion's names for the languages.
FUSION_NAMES = {"java": "java", "go": "go", "rust": "rust", "javascript": "nodejs", "typescript": "typescript"}


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_run_code_answers_each_language_as_sandbox_fusion_does(http, language):
    name = FUSION_NAMES[language]
    body = requests.post(f"{http}/run_code", json={"code": PROGRAMS[language], "language": name,
                                                   "stdin": "sum 2 3", "run_timeout": 10}, timeout=120).json()
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "5\n"
    assert (body["compile_result"] is not None) == (language in COMPILED)
    failed = requests.post(f"{http}/run_code", json={"code": PROGRAMS[language], "language": name, "stdin": "exit"},
                           timeout=120).json()
    assert failed["status"] == "Failed" and failed["run_result"]["return_code"] == 3


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_the_sandbox_fusion_sdk_runs_each_language(http, language):
    from sandbox_fusion import RunCodeRequest, RunStatus, run_code

    name = FUSION_NAMES[language]
    result = run_code(RunCodeRequest(code=PROGRAMS[language], language=name, stdin="sum 20 22"), endpoint=http,
                      max_attempts=1)
    assert result.status == RunStatus.Success and result.run_result.stdout == "42\n"
    broken = run_code(RunCodeRequest(code=BROKEN[language][0], language=name), endpoint=http, max_attempts=1)
    assert broken.status == RunStatus.Failed
    if language in COMPILED:
        assert broken.run_result is None and BROKEN[language][1] in broken.compile_result.stderr


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_verls_check_correctness_scores_each_language(http, language):
    verl_sandbox = pytest.importorskip("verl.utils.reward_score.sandbox_fusion.utils", reason="verl is not installed")
    name = FUSION_NAMES[language]
    in_outs = {"inputs": ["sum 1 2\n", "sum 40 2\n"], "outputs": ["3\n", "42\n"]}
    right, metadata = verl_sandbox.check_correctness(f"{http}/run_code", in_outs, PROGRAMS[language], timeout=10,
                                                     language=name)
    assert right == [True, True], metadata
    wrong, _ = verl_sandbox.check_correctness(f"{http}/run_code", {"inputs": ["sum 1 2\n"], "outputs": ["4\n"]},
                                              PROGRAMS[language], timeout=10, language=name)
    assert wrong == [False]
    if language in COMPILED:
        broken, metadata = verl_sandbox.check_correctness(f"{http}/run_code", in_outs, BROKEN[language][0],
                                                          timeout=10, language=name)
        assert broken == [-4, -4] and metadata[0]["status"] == "compile_error"


def test_code_judge_judges_each_language(http):
    submissions = [{"type": language, "solution": PROGRAMS[language], "input": "sum 1 2", "expected_output": want}
                   for language in PROGRAMS for want in ("3", "4")]
    results = requests.post(f"{http}/judge/batch", json={"submissions": submissions}, timeout=300).json()["results"]
    assert [(result["run_success"], result["success"]) for result in results] == [(True, True), (True, False)] * 5
    refused = requests.post(f"{http}/judge", json={"type": "cobol", "solution": "x"}, timeout=30)
    assert refused.status_code == 400 and "java" in refused.json()["detail"]


async def test_mcp_and_the_engines_tool_methods_reach_the_tool(program_server, http):
    pytest.importorskip("mcp", reason="the mcp extra: pip install -e '.[mcp]'")
    from tests.integration.test_mcp import call_http, text
    from toolclient.client import ToolClient
    from toolclient.integrations.calls import FleetConfig, ModelTools

    [result] = await call_http(f"{http}/mcp", ("program", {"language": "rust", "source": PROGRAMS["rust"],
                                                           "stdin": "sum 20 22"}))
    assert not result.is_error and "42" in text(result) and "compiled" in text(result)
    with ToolClient(program_server[0].target) as client:
        specs = client.list_tools()
    method = ModelTools(FleetConfig(program_server[0].target), specs).program  # TRL's, SkyRL's, verl's tools' way
    assert list(method.__annotations__) == ["language", "source", "return"]
    assert "42" in await method(language="javascript", source="console.log(6 * 7)")


def test_the_command_line_calls_a_language(program_server):
    called = subprocess.run([sys.executable, "-m", "toolserver", "call", "--target", program_server[0].target,
                             "javascript", "console.log(6 * 7)"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (called.returncode, called.stdout) == (0, "42\n"), called.stderr


def test_a_program_has_no_network_and_sees_nothing_outside_its_scratch(client):
    probe = """
const net = require('net');
const fs = require('fs');
let seen = [];
for (const path of ['/root', '/tmp', '/etc/toolserver']) {
  try { seen.push(path + ':' + fs.readdirSync(path).length); } catch (e) { seen.push(path + ':' + e.code); }
}
const socket = net.connect({host: '1.1.1.1', port: 80, timeout: 2000});
socket.on('connect', () => { console.log('connected ' + seen.join(' ')); process.exit(0); });
socket.on('error', (e) => { console.log('refused ' + e.code + ' ' + seen.join(' ')); process.exit(0); });
socket.on('timeout', () => { console.log('timed out ' + seen.join(' ')); process.exit(0); });
"""
    response = run(client, "javascript", probe, timeout_ms=10_000)
    # no network; /root denied, the jail's own empty /tmp, the server's config hidden
    assert (response.outcome, response.stdout) == (pb.OK, "refused ENETUNREACH /root:EACCES /tmp:0 "
                                                          "/etc/toolserver:ENOENT\n")
