"""The HTTP fronts, served by uvicorn in the server's own process and event loop.

Each front contributes its routes to one Starlette app and calls the same dispatcher
as the gRPC front: SandboxFusion, code-judge, Search-R1, and the MCP endpoint at /mcp
where the `mcp` extra is installed (without it the others serve and the log says MCP is
off). The HTTP server starts after the tools and stops before they close; the server's
SIGTERM handling drains it with the rest (its calls count as in flight). uvicorn runs
without a lifespan, so what a front must run beside it (the MCP session manager) runs
on the server's exit stack, entered before the HTTP server starts and left after it
stops. Every request passes the listener's limits (`http_listener`) and the door
(`http_guard`: Host, Origin, token, body, JSON) before a front sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack

from toolserver.config import WILDCARD_HOSTS, CoreSettings
from toolserver.dispatch import Dispatcher
from toolserver.errors import ConfigError
from toolserver.policy import Policies

log = logging.getLogger(__name__)


async def start_http(settings: CoreSettings, dispatcher: Dispatcher, policies: Policies, stack: AsyncExitStack) -> int:
    """Serves the HTTP fronts on settings.http until stack closes; returns the bound port."""
    try:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        from toolserver.fronts.code_judge import BATCH_PATHS, CodeJudgeFront
        from toolserver.fronts.http_guard import HttpGuard, JsonRoute
        from toolserver.fronts.http_listener import connection_budget, guarded_protocol
        from toolserver.fronts.retrieve import RetrieveFront
        from toolserver.fronts.sandbox_fusion import SandboxFusionFront
    except ImportError as exc:
        raise ConfigError(f"http.port is set but the HTTP fronts are not installed ({exc.name}): "
                          "pip install 'toolserver[http]'") from exc

    class EmbeddedServer(uvicorn.Server):
        """uvicorn without signal handlers of its own: the tool server owns SIGTERM."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    mcp: list[Route] = []
    routes = (SandboxFusionFront(dispatcher).routes() + CodeJudgeFront(dispatcher).routes()
              + RetrieveFront(dispatcher).routes())
    try:
        from toolserver.fronts.mcp_http import mcp_routes
    except ImportError as exc:
        if exc.name and exc.name.startswith("toolserver"):
            raise
        mcp_endpoint = f"MCP endpoint off ({exc.name} is not installed: pip install 'toolserver[mcp]')"
    else:
        mcp = await mcp_routes(settings, dispatcher, policies, stack)
        routes += mcp
        mcp_endpoint = "MCP /mcp (streamable HTTP)"
    json_routes = {route.path: JsonRoute(batch=route.path in BATCH_PATHS, reads_raw=route in mcp)
                   for route in routes if "POST" in (route.methods or ())}
    app = HttpGuard(Starlette(routes=routes), settings, policies, dispatcher.metrics, json_routes)
    max_connections = connection_budget(settings)
    config = uvicorn.Config(app, host=settings.http.host, port=settings.http.port, lifespan="off",
                            log_level="warning", access_log=False, timeout_graceful_shutdown=5, ws="none",
                            http=guarded_protocol(settings, dispatcher.metrics, max_connections),
                            timeout_keep_alive=settings.http.idle_timeout_s)  # type: ignore[arg-type]
    server = EmbeddedServer(config)
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
            raise OSError(f"cannot serve HTTP on {settings.http.host}:{settings.http.port}")
        await asyncio.sleep(0.01)

    async def stop() -> None:
        server.should_exit = True
        await task

    stack.push_async_callback(stop)
    port: int = server.servers[0].sockets[0].getsockname()[1]
    log.info("HTTP fronts on http://%s:%d: SandboxFusion /run_code, code-judge /run and /judge (and batches), "
             "Search-R1 /retrieve; %s; at most %d connections", settings.http.host, port, mcp_endpoint, max_connections)
    if not app.any_host and settings.http.host in WILDCARD_HOSTS:
        log.warning("HTTP on every interface with no caller tokens: only requests whose Host is a loopback name or "
                    "one of http.allowed_hosts are served (DNS rebinding); list the names clients use there")
    return port
