"""Facts read from the API contract (proto/toolserver/v1/toolserver.proto), so that no
module spells them again: the service's name and the tools a request can call."""

from __future__ import annotations

from toolcontract.v1 import toolserver_pb2 as pb

UINT32_MAX = 2**32 - 1  # the largest value of the contract's uint32 fields (limits, top_k)

SERVICE = pb.DESCRIPTOR.services_by_name["ToolServer"]
SERVICE_NAME = SERVICE.full_name

# Each tool is a field of ExecuteRequest's `call` oneof carrying its own message; the
# `json` field carries a JsonCall naming one of them.
TOOL_NAMES: tuple[str, ...] = tuple(
    field.name for field in pb.ExecuteRequest.DESCRIPTOR.oneofs_by_name["call"].fields
    if field.message_type is not pb.JsonCall.DESCRIPTOR)

# OpenSession's sessions belong to the tool whose call message carries a session_id.
SESSION_TOOL: str = next((field.name for field in pb.ExecuteRequest.DESCRIPTOR.oneofs_by_name["call"].fields
                          if field.name in TOOL_NAMES and "session_id" in field.message_type.fields_by_name), "")
