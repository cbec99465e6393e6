"""A process started ahead of its call: a runtime whose start is most of a short run's time
(the JVM's), started by the zygote's child while it waits for its request.

The host names such a process in a request (`sandbox.calls.StartAhead`: its argv and
environment); the zygote's next child starts it, its stdin a pipe, its stdout and stderr
the call's. When the request comes and names the same process, the call's launcher hands
it over (`hand_over`): the call's limits set on it, its first line and then the call's
stdin written to it, and the launcher ends as it ends, so that the zygote sees the
program's own exit status or signal. A request that names another, or none, finds the
child replaced by one without it (the zygote's). It is in the call's process group and
memory cgroup from its start, and, as every process of the call, killed with it.
"""

import _signal
import os
import resource

from sandbox.inside.frames import write_all

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, NoReturn

READ_CHUNK = 65536
# Every rlimit: the launcher hands over each as it has it then, as an exec'd program would inherit
# them (what call_process.set_limits and the launcher set among them).
LIMITS = tuple(sorted({getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}))


class StartedAhead:
    """The process a spec (a request's `ahead`) names, started in the working directory
    home ({cwd} in its environment), reading its stdin from a pipe this holds, once the
    directories the spec names are made there (a class path it reads as it starts, which
    the call then fills)."""

    def __init__(self, spec: "dict[str, Any]", home: str) -> None:
        self.directories: list[str] = []
        environment = dict(os.environ)
        environment.update({name: value.replace("{cwd}", home) for name, value in spec["environment"].items()})
        read, self.stdin = os.pipe()
        try:
            for name in spec["directories"]:
                os.mkdir(name)
                self.directories.append(name)
            argv = spec["argv"]
            self.pid = os.posix_spawn(argv[0], argv, environment, file_actions=[(os.POSIX_SPAWN_DUP2, read, 0)])
            self.pidfd = os.pidfd_open(self.pid)  # its signals go by this, never by a pid that may be reaped
        except BaseException:
            os.close(self.stdin)
            self.remove_directories()
            raise
        finally:
            os.close(read)

    def alive(self) -> bool:
        """Whether it still runs; one that ended is reaped here."""
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def forget(self) -> None:
        """Lets go of one that ended before its call came, and takes its directories away:
        the call finds its working directory as a call without it does."""
        os.close(self.stdin)
        os.close(self.pidfd)
        self.remove_directories()

    def remove_directories(self) -> None:
        for name in reversed(self.directories):
            os.rmdir(name)

    def hand_over(self, first_line: str) -> "NoReturn":
        """Runs the call on it: the limits this process has now, then first_line and this
        process's stdin on its stdin; ends as it ends (its exit status, or its signal).
        The zygote's time-out signal (SIGXCPU) is passed on to it. Never returns."""
        for which in LIMITS:
            resource.prlimit(self.pid, which, resource.getrlimit(which))
        _signal.signal(_signal.SIGXCPU, self.pass_on)
        _signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)
        try:
            write_all(self.stdin, first_line.encode("utf-8", errors="surrogateescape"))
            while True:
                data = os.read(0, READ_CHUNK)
                if not data:
                    break
                write_all(self.stdin, data)
        except OSError:
            pass  # it ended, or closed its stdin, before it read all
        os.close(self.stdin)
        _, status = os.waitpid(self.pid, 0)
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            _signal.signal(signum, _signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(os.waitstatus_to_exitcode(status))

    def pass_on(self, signum: int, frame: "FrameType | None") -> None:
        try:
            _signal.pidfd_send_signal(self.pidfd, signum)
        except ProcessLookupError:
            pass  # it has ended
