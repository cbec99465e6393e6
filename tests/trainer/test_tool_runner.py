from __future__ import annotations

from tests.conftest import free_port
from toolclient.client import AsyncToolClient
from trainer.tool_runner import PythonJob, ToolRunner


async def test_results_in_job_order_with_outcomes(trainer_server):
    async with AsyncToolClient(trainer_server.target) as client:
        runner = ToolRunner(client, timeout_ms=5000)
        jobs = [PythonJob("import time\ntime.sleep(1)\nprint('slow')"), PythonJob("print(input())", stdin="echo\n"),
                PythonJob("raise ValueError('bad')")]
        slow, echo, bad = await runner.run(jobs)
        assert (slow.outcome, slow.response.stdout) == ("OK", "slow\n")
        assert (echo.outcome, echo.response.stdout) == ("OK", "echo\n")
        assert bad.outcome == "ERROR" and bad.tool_error and not bad.infra_error
        order = [i async for i, _ in runner.as_completed(jobs)]
        assert sorted(order) == [0, 1, 2] and order[-1] == 0
        assert runner.stats.calls == 6 and runner.stats.outcomes == {"OK": 4, "ERROR": 2}


async def test_crashed_call_is_retried_once_then_an_infra_error(trainer_server):
    async with AsyncToolClient(trainer_server.target) as client:
        runner = ToolRunner(client)
        (result,) = await runner.run([PythonJob("import os\nos.abort()")])
        assert result.outcome == "CRASHED" and result.infra_error.startswith("CRASHED")
        assert result.attempts == 2 and not result.tool_error
        assert (runner.stats.retries, runner.stats.infra_errors) == (1, 1)


async def test_unreachable_server_is_an_infra_error():
    async with AsyncToolClient(f"127.0.0.1:{free_port()}", timeout_s=5) as client:
        runner = ToolRunner(client, rpc_timeout_s=5)
        results = await runner.run([PythonJob("1"), PythonJob("2")])
        assert [r.outcome for r in results] == ["UNAVAILABLE", "UNAVAILABLE"]
        assert all("UNAVAILABLE" in r.infra_error and r.attempts == 2 for r in results)
