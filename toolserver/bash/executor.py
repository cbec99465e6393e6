"""The bash tool: a BashCall and its Limits in, an ExecuteResponse out.

The script is written as `main.sh` in a fresh scratch and run by the server's bash, as
`bash main.sh` runs it, on the tool's own warm zygotes (`toolserver.zygotes`): the
call's process execs the shell (`toolserver.zygotes.programs.exec_program`), so the
script and everything it starts are one process tree under the call's limits (time,
memory, output, processes, files) and the jail (no network, its slot's user and
scratch, the memory cgroup). A non-zero exit or a signal is the script's ERROR.
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import AsyncExitStack

from sandbox.calls import CallRequest
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.arguments import json_arguments
from toolserver.bash.settings import BashSettings
from toolserver.errors import InvalidRequest, ToolUnavailable
from toolserver.policy import OPEN_POLICY, CallerPolicy
from toolserver.registry import BuildContext
from toolserver.text import valid_text
from toolserver.zygotes.programs import exec_program, program_outcome
from toolserver.zygotes.tool import NoPool, PooledTool, start_tool_pool

log = logging.getLogger(__name__)
SCRIPT_FILE = "main.sh"
SCHEMA = {
    "type": "object",
    "properties": {
        "script": {"type": "string", "description": "A bash script, run as `bash main.sh` in an empty directory."},
        "stdin": {"type": "string", "description": "Text fed to the script's standard input."},
    },
    "required": ["script"],
    "additionalProperties": False,
}


class BashExecutor(PooledTool):
    name = "bash"

    def status(self) -> str:
        return f"ready: {self.pool_status()}" if self.pool is not None else self.reason

    def spec(self, caller: CallerPolicy = OPEN_POLICY) -> pb.ToolSpec:
        return pb.ToolSpec(name=self.name, description=(
            f"Run a bash script ({self.settings.section(BashSettings).shell}) in an isolated sandbox with no network, as `bash main.sh` "
            "runs it in an empty directory with the usual command-line tools. Returns stdout, stderr and the exit "
            "status."), parameters=json.dumps(SCHEMA))

    @staticmethod
    def call_from_json(arguments: str) -> pb.BashCall:
        values = json_arguments(arguments, "bash", {"script": str, "stdin": str}, "script")
        return pb.BashCall(script=values["script"], stdin=values.get("stdin", ""))

    async def run(self, call: pb.BashCall, limits: pb.Limits, request_id: str,
                  caller: CallerPolicy = OPEN_POLICY) -> pb.ExecuteResponse:
        granted = self.grant(limits, caller)
        script = call.script.encode("utf-8", errors="surrogateescape")
        if len(script) > self.settings.section(BashSettings).max_script_kb << 10:
            raise InvalidRequest(f"script is longer than bash.max_script_kb ({self.settings.section(BashSettings).max_script_kb} KiB)")
        if self.pool is None:
            raise ToolUnavailable(f"the bash tool is not available: {self.reason}")
        program = exec_program([self.settings.section(BashSettings).shell, SCRIPT_FILE], granted.memory_mb)
        reply = await self.pool.run(CallRequest(request_id, program, granted, stdin=call.stdin,
                                                files={SCRIPT_FILE: script}))
        outcome, error = program_outcome(reply)
        return pb.ExecuteResponse(request_id=request_id, outcome=outcome, stdout=valid_text(reply.stdout),
                                  stderr=valid_text(reply.stderr), error=valid_text(error), truncated=reply.truncated,
                                  elapsed_us=max(0, reply.elapsed_us), queued_us=max(0, reply.queued_us),
                                  bash=pb.BashResult(exit_code=reply.exit_code))


async def build_bash(context: BuildContext, stack: AsyncExitStack) -> BashExecutor:
    """The bash tool on the slots the tools before it leave, started once the sandbox is
    proven and the shell is here (else it serves nothing and says why)."""
    settings = context.settings
    bash = settings.section(BashSettings)
    slots = context.slots.take(bash.slots().wanted)
    if not bash.enabled:
        return BashExecutor(settings, None, "off by config ([bash] enabled = false)")
    if not os.access(bash.shell, os.X_OK):
        return BashExecutor(settings, None, f"shell {bash.shell} is not here: install bash or set [bash] shell")
    try:
        pool = await start_tool_pool("bash", context, slots, stack, runtime=bash.runtime(),
                                     max_queue=bash.max_queue, grace_s=bash.worker_grace_s,
                                     recycle_after=bash.recycle_after)
    except NoPool as exc:
        return BashExecutor(settings, None, str(exc))
    log.info("bash: %s, %d workers", bash.shell, len(slots))
    return BashExecutor(settings, pool)
