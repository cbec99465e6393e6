"""Calls whose process execs a program (a compiled binary, a shell) rather than running
Python: the few lines of Python the zygote's child runs to exec it, and how its end reads.

The launcher caps the program's address space and stack at its memory limit itself (the
zygote's own cap adds its warm size) and execs it, so that the process the jail, the
rlimits and the memory cgroup hold is the program. A signal that ends such a program is
the program's error, not the sandbox's (a C program that dereferences null dies of
SIGSEGV); an allocation refused under the cap ends a C++ program in `std::bad_alloc`.
"""

from __future__ import annotations

from sandbox.calls import PROGRAM_FILE, CallReply
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.outcomes import contract_outcome

KILLED = "killed by signal "
OUT_OF_MEMORY = "std::bad_alloc"  # what libstdc++ says when an allocation fails under RLIMIT_AS
# What a run of a program (a compiled binary, a shell) ends in: the jail's DENIED and INVALID
# cannot come of a program that only execs, so they are the sandbox's failure there.
PROGRAM_OUTCOMES = frozenset({"OK", "ERROR", "TIMEOUT", "MEMORY_LIMIT", "OUTPUT_LIMIT"})


def exec_program(argv: list[str], memory_mb: int, executable: str = "") -> str:
    """The launcher that execs argv (argv[0] a path) with its address space and stack capped
    at memory_mb (the stack as large as judges give it, within the jail's hard limit), once
    it has removed itself from the working directory; executable: a file there to mark
    executable first."""
    lines = ["import os, resource",
             f"limit = {memory_mb << 20}",
             "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))",
             "hard = resource.getrlimit(resource.RLIMIT_STACK)[1]",
             "stack = limit if hard == resource.RLIM_INFINITY else min(limit, hard)",
             "resource.setrlimit(resource.RLIMIT_STACK, (stack, hard))"]
    if executable:
        lines.append(f"os.chmod({executable!r}, 0o700)")
    lines.append(f"os.unlink({PROGRAM_FILE!r})")  # the program finds only its own files where it starts
    lines.append(f"os.execv({argv[0]!r}, {argv!r})")
    return "\n".join(lines) + "\n"


def program_outcome(reply: CallReply, out_of_memory: tuple[str, ...] = (OUT_OF_MEMORY,)) -> tuple[pb.Outcome, str]:
    """How an exec'd program's run ended: its Outcome and one-line error. out_of_memory:
    what its runtime writes last on stderr when an allocation is refused (a run that failed
    so ran out of memory)."""
    if reply.outcome in ("CRASHED", "ERROR") and (reply.outcome == "ERROR" or reply.error.startswith(KILLED)):
        said = next((marker for marker in out_of_memory if marker in reply.stderr[-4096:]), "")
        if said:
            ending = reply.error if reply.outcome == "CRASHED" else f"exit status {reply.exit_code}"
            return pb.MEMORY_LIMIT, f"memory limit exceeded ({said}, then {ending})"
    if reply.outcome == "CRASHED" and reply.error.startswith(KILLED):
        return pb.ERROR, f"the program was {reply.error}"
    outcome = contract_outcome(reply.outcome, PROGRAM_OUTCOMES)
    if outcome == pb.CRASHED and reply.outcome != "CRASHED":
        return outcome, reply.error or f"the sandbox answered {reply.outcome}"
    return outcome, reply.error
