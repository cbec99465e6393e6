"""The slot's memory cgroup, as the zygote holds it: through descriptors of its files."""

import os


class CallCgroup:
    """The slot's memory cgroup, through descriptors of its files the host opened: the
    process forked for each call moves in before it gets its request (so that everything
    the call starts is born there, and the zygote, outside, is never the OOM killer's
    choice), and each call's cap is set before it runs. Without descriptors (no memory
    cgroups), nothing."""

    def __init__(self, fds: "dict[str, int]") -> None:
        self.fds = fds
        self.cap_mb: int | None = None  # unknown: as the host made it, no cap

    def enlist(self, pid: int) -> None:
        """Moves process pid into the cgroup; a zygote that cannot ends (fail closed: the
        call would run without its cap), and the host replaces it."""
        if "procs" in self.fds:
            try:
                os.pwrite(self.fds["procs"], str(pid).encode(), 0)
            except OSError as exc:
                raise SystemExit(f"cannot move the call's process into its memory cgroup: {exc}")

    def cap(self, megabytes: int) -> None:
        """Caps the memory the call's processes may use together. memory+swap must stay at
        least memory: raised first, lowered last. A cap the kernel cannot reclaim down to
        now is refused, and the last one stays."""
        if "limit" not in self.fds or megabytes == self.cap_mb:
            return
        raising = self.cap_mb is not None and megabytes > self.cap_mb
        order = ("memsw", "limit") if raising else ("limit", "memsw")
        value = str(megabytes << 20).encode()
        try:
            for name in order:
                if name in self.fds:
                    os.pwrite(self.fds[name], value, 0)
        except OSError:
            return
        self.cap_mb = megabytes
