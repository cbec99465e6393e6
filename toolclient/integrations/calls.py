"""What every engine adapter needs from a tool server fleet, in one place.

- `FleetConfig`: where the servers are and how one process may use them, read from an
  engine's config mapping (verl's tool YAML `config:`, a TRL or SkyRL constructor).
- `FleetCalls`: the calls of one process. Its gRPC client is made lazily inside the event
  loop that uses it (engines build tools before their loop runs, once per Ray actor) and
  its in-flight calls are capped; stateless calls are balanced across the addresses the
  target resolves to (`dns:///name:port`), a session's calls go to the replica holding it.
  One instance per configuration is shared by all tools of the process (`fleet_calls`).
- `function_schema`: a tool as the server lists it, in the flat OpenAI function shape the
  engines' schemas accept, minus the arguments the adapter fills in itself;
  `ModelTools`: the caller's tools as Python methods with the signature and Google-style
  docstring engines read a tool's schema from (transformers' `get_json_schema`).
- `CallStats`: counts and latency of a trajectory's calls, for the engine to keep.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
import types
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from toolclient.client import AsyncToolClient, InvalidArgument, ToolClient, python_request
from toolcontract.answer_text import answer_text
from toolcontract.v1 import toolserver_pb2 as pb

ENV_PREFIX = "TOOLSERVER_"
SESSION_ARGUMENTS = frozenset({"code", "stdin"})
PROPERTY_KEYS = ("type", "description", "enum")  # what a flat function schema keeps of a property
PYTHON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}
RETURNS = "What the model reads of the answer: its output and result, with its outcome when it did not finish normally."


class FleetConfigError(ValueError):
    """An adapter's configuration names an unknown key or holds a bad value."""


@dataclass(frozen=True)
class FleetConfig:
    target: str = "127.0.0.1:50051"  # any gRPC target: host:port, dns:///svc:port, ipv4:a:p,b:p
    token: str | None = None         # bearer token of the caller's policy
    timeout_s: float = 60.0          # per call, queueing included; the server caps the run itself
    max_output_chars: int = 4000     # what the model reads of one answer
    max_inflight: int = 64           # calls this process has in flight at once
    tls_ca: str | None = None

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.max_output_chars <= 0 or self.max_inflight <= 0:
            raise FleetConfigError("timeout_s, max_output_chars and max_inflight must be positive")
        if not self.target:
            raise FleetConfigError("target must name a tool server (host:port or dns:///name:port)")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "FleetConfig":
        """The fleet from TOOLSERVER_TARGET, TOOLSERVER_TOKEN, TOOLSERVER_TIMEOUT_S, ... (one
        per field), for engines that make their agents without arguments; defaults for the
        unset ones."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            name = ENV_PREFIX + item.name.upper()
            if name not in environ:
                continue
            kind = type(item.default) if isinstance(item.default, (int, float)) else str
            try:
                values[item.name] = kind(environ[name])
            except ValueError:
                raise FleetConfigError(f"{name} must be a number, not {environ[name]!r}") from None
        return cls(**values)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], ignore: tuple[str, ...] = ()) -> "FleetConfig":
        """The fleet keys of values; a key that is neither one of them nor in ignore is an error."""
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(values) - known - set(ignore))
        if unknown:
            raise FleetConfigError(f"unknown tool server settings {unknown}; known: {sorted(known)}")
        return cls(**{name: values[name] for name in known if name in values})


class FleetCalls:
    """The calls one process makes to a fleet."""

    def __init__(self, config: FleetConfig) -> None:
        self.config = config
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 tuple[AsyncToolClient, asyncio.Semaphore]] = weakref.WeakKeyDictionary()

    def _client(self) -> tuple[AsyncToolClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            client = AsyncToolClient(self.config.target, timeout_s=self.config.timeout_s, token=self.config.token,
                                     tls_ca=self.config.tls_ca)
            self._clients[loop] = (client, asyncio.Semaphore(self.config.max_inflight))
        return self._clients[loop]

    async def call(self, tool: str, arguments: Mapping[str, Any], session_id: str = "",
                   timeout_ms: int = 0) -> pb.ExecuteResponse:
        """One call of tool with the model's arguments (the server checks them)."""
        if session_id:
            if extra := sorted(set(arguments) - SESSION_ARGUMENTS):
                raise InvalidArgument(f"python in a session takes code and stdin, not {', '.join(extra)}")
            request = python_request(str(arguments.get("code", "")), stdin=str(arguments.get("stdin", "")),
                                     session_id=session_id, timeout_ms=timeout_ms)
        else:
            request = pb.ExecuteRequest(json=pb.JsonCall(tool=tool, arguments=json.dumps(dict(arguments))),
                                        limits=pb.Limits(timeout_ms=timeout_ms))
        client, inflight = self._client()
        async with inflight:
            return await client.execute(request)

    async def run_many(self, requests: list[pb.ExecuteRequest]) -> list[pb.ExecuteResponse]:
        """Many stateless calls over one stream, answers in request order."""
        client, inflight = self._client()
        async with inflight:
            return await client.run_many(requests)

    async def open_session(self) -> str:
        client, inflight = self._client()
        async with inflight:
            return (await client.open_session()).session_id

    async def close_session(self, session_id: str) -> None:
        client, _ = self._client()
        await client.close_session(session_id)

    async def close(self) -> None:
        """Closes the client of the running loop (others close with their loop)."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].close()

    def specs(self) -> dict[str, pb.ToolSpec]:
        """The tools this caller may use, asked once over a short-lived synchronous client
        (engines build their tools' schemas before any event loop runs)."""
        with ToolClient(self.config.target, timeout_s=self.config.timeout_s, token=self.config.token,
                        tls_ca=self.config.tls_ca) as client:
            return {spec.name: spec for spec in client.list_tools()}


_SHARED: dict[FleetConfig, FleetCalls] = {}


def fleet_calls(config: FleetConfig) -> FleetCalls:
    """The process's one FleetCalls for config, so that its tools share clients and cap."""
    if config not in _SHARED:
        _SHARED[config] = FleetCalls(config)
    return _SHARED[config]


def function_schema(spec: pb.ToolSpec, hidden: tuple[str, ...] = ("session_id",)) -> dict[str, Any]:
    """spec in the flat OpenAI function shape, without the hidden arguments."""
    parameters = json.loads(spec.parameters or "{}")
    properties = {name: {key: value for key, value in prop.items() if key in PROPERTY_KEYS}
                  for name, prop in parameters.get("properties", {}).items() if name not in hidden}
    required = [name for name in parameters.get("required", []) if name in properties]
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": {"type": "object", "properties": properties,
                                                            "required": required}}}


class ModelTools:
    """The tools ListTools gave a caller, each a method of this object (`getattr(tools, name)`)
    of the tool's required arguments, named, typed and documented (Google style, each text
    on one line) as its spec says, for engines that read a tool's schema from a method
    (transformers' `get_json_schema`). A call answers what the model reads of it. It pickles
    with its config and specs, and its methods with it."""

    def __init__(self, config: FleetConfig, specs: Iterable[pb.ToolSpec]) -> None:
        self.config = config
        self.specs = {spec.name: spec for spec in specs}

    def __getattr__(self, name: str) -> Callable[..., Awaitable[str]]:
        spec = self.__dict__.get("specs", {}).get(name)
        if spec is None:
            raise AttributeError(name)
        return types.MethodType(tool_method(spec), self)

    async def answer(self, tool: str, arguments: dict[str, Any]) -> str:
        response = await fleet_calls(self.config).call(tool, arguments)
        return answer_text(response, self.config.max_output_chars)


def tool_method(spec: pb.ToolSpec) -> Callable[..., Awaitable[str]]:
    """The function of a ModelTools method for spec."""
    schema = function_schema(spec)["function"]
    properties, required = schema["parameters"]["properties"], schema["parameters"]["required"]
    kinds = {name: PYTHON_TYPES.get(properties[name].get("type"), str) for name in required}
    name = spec.name

    async def method(self: ModelTools, **arguments: Any) -> str:
        return await self.answer(name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join([one_line(spec.description), "", "Args:"] + [
        f"    {argument}: {one_line(properties[argument].get('description', '') or argument)}" for argument in required
    ] + ["", "Returns:", f"    {RETURNS}"])
    method.__annotations__ = {**kinds, "return": str}
    method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, annotation=kind) for argument, kind in kinds.items()],
        return_annotation=str)
    return method


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class CallStats:
    """A trajectory's tool calls: how many, how they ended, how long they took."""

    calls: int = 0
    failed: int = 0          # the server refused the call or could not be reached
    timeouts: int = 0
    memory_limits: int = 0
    errors: int = 0          # the code raised, or Lean reported an error
    latency_s: float = 0.0   # summed over the calls
    outcomes: dict[str, int] = field(default_factory=dict)

    def record(self, response: pb.ExecuteResponse | None, started: float) -> None:
        self.calls += 1
        self.latency_s += time.monotonic() - started
        if response is None:
            self.failed += 1
            return
        name = pb.Outcome.Name(response.outcome)
        self.outcomes[name] = self.outcomes.get(name, 0) + 1
        self.timeouts += response.outcome == pb.TIMEOUT
        self.memory_limits += response.outcome == pb.MEMORY_LIMIT
        self.errors += response.outcome == pb.ERROR

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "failed": self.failed, "timeouts": self.timeouts,
                "memory_limits": self.memory_limits, "errors": self.errors,
                "latency_s": round(self.latency_s, 6), "outcomes": dict(self.outcomes)}
