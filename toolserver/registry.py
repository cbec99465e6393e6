"""The tools of this server: what a tool's package declares, the interface every tool
implements, one registry of them.

A tool lives in its own package, which declares itself as a `ToolPackage`: its builder,
its settings sections, its callers' rules and the text a model reads of its results.
`toolserver.tools` lists the packages; the registry, built from them at start-up (an exit
stack owns each tool's lifetime), is the one list of serving tools: dispatch, ListTools,
GetServerInfo and every front read it, and none of them knows a tool by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, ClassVar, Iterable, Iterator, Mapping

from sandbox.cgroups import MemoryCgroups
from sandbox.jail import Slot
from sandbox.worker import ZygoteSpec
from toolcontract.names import SESSION_TOOL, TOOL_NAMES
from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import CoreSettings
from toolserver.errors import InvalidRequest, ToolUnavailable
from toolserver.metrics import ServerMetrics
from toolserver.policy import CallerPolicy
from toolserver.state import ServerState


class Tool(ABC):
    """A tool: what it is called, whether it serves, its schema, how it runs a call.

    `run` receives the call parsed by `call_from_request` or `call_from_json` and the
    limits the request asked for; the tool grants its own limits (`grant`) from those,
    its settings and the caller's policy, and answers an ExecuteResponse. Faults of the
    request are raised as `toolserver.errors.RequestError`; a failure of the caller's
    code is a normal response carrying its Outcome.
    """

    name: ClassVar[str]  # the contract's name: a field of ExecuteRequest's `call` oneof

    @property
    @abstractmethod
    def available(self) -> bool:
        """Whether the tool can serve calls now."""

    @abstractmethod
    def status(self) -> str:
        """One line for GetServerInfo: its state, or why it is unavailable."""

    @abstractmethod
    def spec(self, caller: CallerPolicy) -> pb.ToolSpec:
        """The tool as this caller may use it: description and JSON schema."""

    @property
    def workers(self) -> int:
        """Calls it runs at once when none waits (fronts that report a pool's size)."""
        return 0

    @property
    def languages(self) -> tuple[str, ...]:
        """The names of the languages it runs beside its own name, as fronts that take a
        language (SandboxFusion's /run_code, code-judge's `type`) send them."""
        return ()

    @abstractmethod
    def call_from_json(self, arguments: str) -> Any:
        """The call a JsonCall's arguments ask for; raises InvalidRequest."""

    def call_from_request(self, request: pb.ExecuteRequest) -> Any:
        """The call of a request that set this tool's field of the `call` oneof."""
        return getattr(request, self.name)

    @abstractmethod
    def grant(self, limits: pb.Limits, caller: CallerPolicy) -> Any:
        """The limits a call runs under: what it asked for, within the server's caps and
        the caller's; raises PermissionDenied when it explicitly asks past the caller's."""

    @abstractmethod
    async def run(self, call: Any, limits: pb.Limits, request_id: str, caller: CallerPolicy) -> pb.ExecuteResponse:
        """Answers one call."""

    async def open_session(self, limits: pb.Limits, caller: CallerPolicy) -> pb.Session:
        raise ToolUnavailable(f"the {self.name} tool has no sessions")

    async def close_session(self, session_id: str, caller: CallerPolicy) -> None:
        raise ToolUnavailable(f"the {self.name} tool has no sessions")


class SlotSupply:
    """The server's sandbox slots, handed out in order to the tools that jail processes."""

    def __init__(self, slots: Iterable[Slot]) -> None:
        self.left = list(slots)

    def take(self, count: int) -> list[Slot]:
        taken, self.left = self.left[:count], self.left[count:]
        return taken


@dataclass
class BuildContext:
    """What a tool's builder may use: the settings, whether the sandbox is proven
    (`state`), the spec its jails derive from, the slots left and the metrics to register
    gauges on."""

    settings: CoreSettings
    state: ServerState
    sandbox: ZygoteSpec
    slots: SlotSupply
    cgroups: MemoryCgroups | None
    metrics: ServerMetrics


# Builds one tool from the context; registers its teardown on the exit stack. None: the
# tool is not served here (its reason logged), and the registry reports it not enabled.
ToolBuilder = Callable[[BuildContext, AsyncExitStack], Awaitable[Tool | None]]


@dataclass(frozen=True)
class ToolPackage:
    """What a tool's package tells the server of the tool; the shared modules read a tool
    only through it (toolserver/tools.py lists them)."""

    name: str                                   # the contract's name: a field of ExecuteRequest's `call`
    build: ToolBuilder
    sections: Mapping[str, type] = field(default_factory=dict)  # its tables of the server's TOML, in
                                                # the order its slots are taken (toolserver/config.py)
    rules: type | None = None                   # its keys in a caller's policy (toolserver/policy.py)
    commands: Callable[[Any], None] | None = None  # adds its own subcommands to the `toolserver`
                                                # command's (argparse subparsers; each sets `run`)


class ToolRegistry:
    """The tools this server serves, by name, in the contract's order."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name not in TOOL_NAMES:
                raise ValueError(f"tool {tool.name!r} is not in the contract's ExecuteRequest.call")
            if tool.name in self.tools:
                raise ValueError(f"tool {tool.name!r} is registered twice")
            self.tools[tool.name] = tool

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def get(self, name: str) -> Tool:
        """The tool called name; InvalidRequest for a name the contract does not know,
        ToolUnavailable for one this server does not serve."""
        tool = self.tools.get(name)
        if tool is not None:
            return tool
        if name in TOOL_NAMES:
            raise ToolUnavailable(f"tool {name!r} is not enabled on this server; ListTools says which are")
        raise InvalidRequest(f"unknown tool {name!r}; ListTools says which exist")

    def resolve(self, request: pb.ExecuteRequest, caller: CallerPolicy) -> tuple[Tool, Any]:
        """The tool a request calls and its parsed call, once the caller may use the
        tool (checked before its arguments are read); raises a RequestError."""
        kind = request.WhichOneof("call")
        if kind is None:
            raise InvalidRequest(f"request has no call: set one of {', '.join(TOOL_NAMES)}, json")
        name = request.json.tool if kind == "json" else kind
        if name not in TOOL_NAMES:
            raise InvalidRequest(f"unknown tool {name!r}; ListTools says which exist")
        caller.require_tool(name)
        tool = self.get(name)
        if kind == "json":
            return tool, tool.call_from_json(request.json.arguments)
        return tool, tool.call_from_request(request)

    def language_tool(self, language: str) -> Tool | None:
        """The tool that says it runs language (`Tool.languages`), if one does."""
        return next((tool for tool in self if language in tool.languages), None)

    def session_tool(self) -> Tool:
        """The tool whose sessions OpenSession and CloseSession reach."""
        if not SESSION_TOOL:
            raise ToolUnavailable("no tool of the contract has sessions")
        return self.get(SESSION_TOOL)

    def specs(self, caller: CallerPolicy) -> list[pb.ToolSpec]:
        return [tool.spec(caller) for tool in self if tool.name in caller.tools]

    def statuses(self) -> list[pb.ToolStatus]:
        statuses = {tool.name: pb.ToolStatus(name=tool.name, available=tool.available, detail=tool.status())
                    for tool in self}
        return [statuses.get(name) or pb.ToolStatus(name=name, available=False, detail="not enabled")
                for name in TOOL_NAMES]

