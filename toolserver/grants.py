"""What one jailed call gets of the limits its request asked for: the tools that run
calls in the sandbox grant them here, from the server's caps and defaults and the
caller's policy."""

from __future__ import annotations

from sandbox.calls import CallLimits
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.policy import OPEN_POLICY, CallerPolicy


def effective_limits(requested: pb.Limits, settings: CoreSettings, caller: CallerPolicy = OPEN_POLICY) -> CallLimits:
    """Each limit: the request's value, or the default when 0, never above the server's
    cap nor the caller's. Asking explicitly for more than the caller's policy grants is
    refused (PermissionDenied); above the server's cap the value is capped."""
    caller.check_limits(requested)
    caps, defaults = settings.limits, settings.defaults

    def pick(name: str, mine: int) -> int:
        value: int = min(getattr(requested, name) or getattr(defaults, name), getattr(caps, name))
        return min(value, mine) if mine else value

    return CallLimits(
        **{name: pick(name, mine) for name, mine in caller.caps().items()},
        max_processes=caps.max_processes,
        max_file_mb=caps.max_file_mb,
        max_open_files=caps.max_open_files,
        max_scratch_mb=caps.max_scratch_mb,
    )
