"""The cpp tool's parts that need no jail: its settings, its JSON arguments, how a run is
judged, the compile cache, the launchers and what a model reads."""

from __future__ import annotations

import asyncio
import json

import pytest

from sandbox.calls import CallLimits, CallReply
from toolcontract.answer_text import cpp_lines
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.cpp.programs import compile_program, compile_step, run_program
from toolserver.cpp.schema import cpp_call_from_json, cpp_tool_spec
from toolserver.cpp.settings import CppSettings
from toolserver.errors import ConfigError, InvalidRequest
from toolserver.judging.compiler import BinaryCache, Compiled, Compiler
from toolserver.judging.judge import case_result, verdict_of
from toolserver.settings import load_settings
from toolserver.zygotes.programs import program_outcome


def test_the_compiler_and_flags_are_pinned_and_checked():
    cpp = load_settings().cpp
    assert cpp.command() == ["/usr/bin/g++", "-std=c++17", "-O2", "-pipe", "-DONLINE_JUDGE"]
    for changes, message in [({"compiler": "g++"}, "absolute path"), ({"std": "c99"}, "C\\+\\+ dialect"),
                             ({"flags": ("-O2", "-o", "x")}, "not -o"), ({"compile_timeout_ms": 60_000}, "exceeds"),
                             ({"precompiled_dir": "/tmp/pch"}, "outside /root and /tmp"),
                             ({"max_cases": 0}, "positive")]:
        with pytest.raises(ConfigError, match=message):
            CppSettings(**changes).validate()


def test_json_arguments_become_a_cpp_call():
    call = cpp_call_from_json(json.dumps({"source": "int main(){}", "compare": "tokens", "stop_on_failure": True,
                                          "cases": [{"stdin": "1", "expected_stdout": "1"}, {"stdin": "2"}]}))
    assert call.compare == pb.COMPARE_TOKENS and call.stop_on_failure
    assert call.cases[0].HasField("expected_stdout") and not call.cases[1].HasField("expected_stdout")


@pytest.mark.parametrize("arguments, message", [
    ({}, "'source' is required"), ({"source": "x", "compare": "fuzzy"}, "compare"),
    ({"source": "x", "cases": [3]}, "cases\\[0\\] must be an object"),
    ({"source": "x", "cases": [{"input": "1"}]}, "unknown key"),
    ({"source": "x", "cases": [{"stdin": 1}]}, "cases\\[0\\].stdin must be a string"),
    ({"source": "x", "stop_on_failure": "yes"}, "true or false"), ({"source": "x", "language": "c"}, "unknown"),
    ({"source": "x", "compile_timeout_ms": -1}, "compile_timeout_ms"),
])
def test_bad_json_arguments_say_what_is_wrong(arguments, message):
    with pytest.raises(InvalidRequest, match=message):
        cpp_call_from_json(json.dumps(arguments))


def test_a_lone_surrogate_in_a_case_is_refused():
    with pytest.raises(InvalidRequest, match="surrogate"):
        cpp_call_from_json('{"source": "x", "cases": [{"stdin": "\\ud800"}]}')


def test_the_spec_names_the_compiler_and_its_flags():
    spec = cpp_tool_spec(CppSettings(), "g++ 12.2.0")
    assert "g++ 12.2.0 -std=c++17 -O2" in spec.description and json.loads(spec.parameters)["required"] == ["source"]


@pytest.mark.parametrize("reply, outcome", [
    (CallReply("r", "OK"), pb.OK),
    (CallReply("r", "ERROR", error="exited with status 3", exit_code=3), pb.ERROR),
    (CallReply("r", "CRASHED", error="killed by signal SIGSEGV", exit_code=-11), pb.ERROR),
    (CallReply("r", "CRASHED", error="killed by signal SIGABRT", stderr="terminate called after throwing an "
               "instance of 'std::bad_alloc'\n", exit_code=-6), pb.MEMORY_LIMIT),
    (CallReply("r", "TIMEOUT", error="wall time limit of 1000 ms exceeded"), pb.TIMEOUT),
    (CallReply("r", "MEMORY_LIMIT"), pb.MEMORY_LIMIT),
    (CallReply("r", "CRASHED", error="sandbox worker was lost: pipe broke"), pb.CRASHED),
])
def test_a_signal_is_the_programs_and_a_lost_worker_the_sandboxs(reply, outcome):
    assert program_outcome(reply)[0] == outcome


def test_verdicts_follow_the_outcome_the_output_and_the_comparison():
    expected = pb.CppCase(expected_stdout="1 2\n")
    assert verdict_of(pb.OK, False, "1 2  \n\n", expected, pb.COMPARE_LINES) == pb.ACCEPTED
    assert verdict_of(pb.OK, False, "1 2  \n", expected, pb.COMPARE_EXACT) == pb.WRONG_ANSWER
    assert verdict_of(pb.OK, False, "1\n2", expected, pb.COMPARE_TOKENS) == pb.ACCEPTED
    assert verdict_of(pb.OK, False, "1\n2", expected, pb.COMPARE_LINES) == pb.WRONG_ANSWER
    assert verdict_of(pb.OK, True, "1 2\n", expected, pb.COMPARE_LINES) == pb.OUTPUT_LIMIT_EXCEEDED
    assert verdict_of(pb.OK, False, "anything", pb.CppCase(), pb.COMPARE_LINES) == pb.FINISHED
    assert [verdict_of(outcome, False, "", expected, pb.COMPARE_LINES) for outcome in
            (pb.ERROR, pb.TIMEOUT, pb.MEMORY_LIMIT, pb.CRASHED)] == [
        pb.RUNTIME_ERROR, pb.TIME_LIMIT_EXCEEDED, pb.MEMORY_LIMIT_EXCEEDED, pb.SYSTEM_ERROR]
    result = case_result(4, expected, CallReply("r", "OK", stdout="1 2\n", elapsed_us=900), pb.COMPARE_LINES)
    assert (result.index, result.verdict, result.elapsed_us) == (4, pb.ACCEPTED, 900)


def test_the_cache_drops_the_least_recently_used_past_its_size():
    cache = BinaryCache(max_bytes=250)
    for key in "abc":
        cache.put(key, Compiled("OK", binary=b"x" * 100))
        cache.get("a")  # a stays in use
    assert set(cache.entries) == {"a", "c"} and cache.size == 200 and cache.hits == 3
    cache.put("huge", Compiled("OK", binary=b"x" * 1000))
    assert "huge" not in cache.entries


def test_the_launchers_exec_the_compiler_and_the_binary_under_the_memory_limit():
    source = compile_program(["/usr/bin/g++", "-std=c++17"])
    assert "os.execv('/usr/bin/g++', ['/usr/bin/g++', '-std=c++17', '-o', 'main', 'main.cpp'])" in source
    run = run_program(256)
    assert f"limit = {256 << 20}" in run and "RLIMIT_STACK" in run and "os.execv('./main'" in run
    for launcher in (source, run):
        compile(launcher, "launcher", "exec")  # Python the call's child runs: a SyntaxError fails the test


def test_a_model_reads_the_compile_and_each_verdict():
    result = pb.CppResult(compile=pb.CppCompile(ok=True, cached=True), passed=1, cases=[
        pb.CppCaseResult(index=1, verdict=pb.WRONG_ANSWER, elapsed_us=3000),
        pb.CppCaseResult(index=0, verdict=pb.ACCEPTED, elapsed_us=2000),
        pb.CppCaseResult(index=2, verdict=pb.SKIPPED)])
    assert cpp_lines(result) == ["compiled (cached)", "passed 1 of 3 cases", "case 0: ACCEPTED (2 ms)",
                                    "case 1: WRONG_ANSWER (3 ms)", "case 2: SKIPPED"]
    failed = pb.CppResult(compile=pb.CppCompile(ok=False, exit_code=1))
    assert cpp_lines(failed) == ["compile failed (exit status 1)"]


async def test_calls_asking_for_a_program_that_compiles_wait_for_that_compile():
    class OnePool:
        """Answers a compile after a moment, counting them."""

        compiles = 0

        async def run(self, request):
            OnePool.compiles += 1
            await asyncio.sleep(0.05)
            return CallReply(request.id, "OK", files={"main": b"\x7fELF"}, elapsed_us=50_000)

    compiler = Compiler(compile_step(["/usr/bin/g++"]), OnePool(), CallLimits(1, 1, 1, 1, 1, 1), cache_bytes=1 << 20)
    first = asyncio.ensure_future(compiler.compile("int main(){}", 1000, "a"))
    waiting = asyncio.ensure_future(compiler.compile("int main(){}", 1000, "b"))
    await asyncio.sleep(0.01)
    first.cancel()  # the first caller goes away: the compile goes on for the second
    compiled = await waiting
    assert compiled.ok and compiled.cached and OnePool.compiles == 1
    again = await compiler.compile("int main(){}", 1000, "c")
    assert again.cached and again.elapsed_us == 0 and OnePool.compiles == 1 and compiler.cache.hits == 1


async def test_a_compile_is_cached_for_its_own_caller_only():
    class CountingPool:
        compiles = 0

        async def run(self, request):
            CountingPool.compiles += 1
            return CallReply(request.id, "OK", files={"main": b"\x7fELF"}, elapsed_us=50_000)

    compiler = Compiler(compile_step(["/usr/bin/g++"]), CountingPool(), CallLimits(1, 1, 1, 1, 1, 1), cache_bytes=1 << 20)
    assert not (await compiler.compile("int main(){}", 1000, "a", owner="alice")).cached
    other = await compiler.compile("int main(){}", 1000, "b", owner="bob")  # bob learns nothing of alice's
    assert not other.cached and other.elapsed_us > 0 and CountingPool.compiles == 2
    assert (await compiler.compile("int main(){}", 1000, "c", owner="alice")).cached


def test_both_compiled_tools_take_the_one_compile_rule():
    """A compile's time: the call's ask, else the default, never past the most; its limits:
    the compiler's own, the server's caps on the rest (toolserver.judging.compiler)."""
    from toolserver.config import LimitCaps
    from toolserver.judging.compiler import COMPILER_OUTPUT_BYTES, compile_limits, compile_timeout_ms

    assert compile_timeout_ms(0, 10_000, 30_000) == 10_000
    assert compile_timeout_ms(25_000, 10_000, 30_000) == 25_000
    assert compile_timeout_ms(90_000, 10_000, 30_000) == 30_000
    caps = LimitCaps()
    limits = compile_limits(20_000, 2048, caps, address_space_mb=16384)
    assert (limits.timeout_ms, limits.memory_mb, limits.address_space_mb) == (20_000, 2048, 16384)
    assert limits.max_output_bytes == COMPILER_OUTPUT_BYTES and limits.max_processes == caps.max_processes
