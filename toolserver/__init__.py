"""Tool-integrated reasoning sandbox server."""

import os

# The server forks jails while gRPC threads run. With gRPC's fork support on, its
# at-fork handlers restart poller threads in the child between fork and exec; they trip
# over the descriptors the child closes and the child dies before it can exec firejail.
# This must be set before anything imports grpc, so it is set when the package loads.
os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"

__version__ = "0.1.0"
