"""Processes the host signals, held by pidfds: a pid that ended and was taken by another
process since it was listed is never signalled.

A list of pids (a uid's processes, a cgroup's) is stale the moment it is read: any of
them may exit, and its number be given to a new process, before the signal goes out. A
pidfd names one process for as long as it is held, whatever happens to its number; so
each pid is opened, the opened process is checked to still be the one wanted (still the
slot's uid, still in the cgroup), and the signal goes through the pidfd.
"""

from __future__ import annotations

import os
import signal
from typing import Callable, Iterable


def signal_pids(pids: Iterable[int], signum: int, still_wanted: Callable[[int], bool]) -> int:
    """Sends signum to each of pids that still_wanted(pid) says is still the process
    meant, once a pidfd holds it; returns how many were signalled. Processes that end on
    their own meanwhile are skipped; a signal the kernel refuses raises OSError."""
    signalled = 0
    for pid in pids:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # gone
            continue
        try:
            if still_wanted(pid):  # pid names the process the pidfd holds, or that one has ended
                signal.pidfd_send_signal(pidfd, signum)
                signalled += 1
        except ProcessLookupError:  # it ended after the check
            pass
        finally:
            os.close(pidfd)
    return signalled
