"""`/mcp` on `glider serve`: the MCP server (`server.mcp_server`) over streamable HTTP.

Contract:
- `McpMount(make_tools)` is an ASGI app; building it imports nothing of the SDK. The first request
  builds the tools (`make_tools()`: `server.mcp_server.WorkerTools`, answered by a store worker process
  of their own), the SDK server and its `StreamableHTTPSessionManager` (stateless,
  JSON answers: every POST is answered on its own, nothing is kept between requests), and runs the
  manager in a task of the server's loop until `close()` (the serve lifespan's shutdown), which stops
  the worker too.
- The mount sits behind `server.security.SecurityMiddleware` like every route: the Host check, the
  Origin checks and, when `GLIDER_TOKEN` is set, the token (`/mcp` is gated as `/api/*` is). The SDK's
  own DNS-rebinding check is therefore off (it would refuse the `server.allowed_hosts` Glider allows).
- Calls name their workspace with the `x-glider-workspace` header or the tools' `workspace` argument;
  one that names none is a tool error that says so (the serve process's directory is not the agent's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from glider_cli.server.mcp_server import WorkerTools


class McpMount:
    def __init__(self, make_tools: Callable[[], WorkerTools]) -> None:
        self._make_tools = make_tools
        self._tools: WorkerTools | None = None
        self._manager: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._starting: asyncio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager or await self._start()
        await manager.handle_request(scope, receive, send)

    async def _start(self) -> Any:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._manager is not None:
                return self._manager
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
            from mcp.server.transport_security import TransportSecuritySettings

            from glider_cli.server.mcp_server import build

            self._tools = self._make_tools()
            server = build(self._tools)
            manager = StreamableHTTPSessionManager(
                app=server,
                stateless=True,
                json_response=True,
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            running = asyncio.get_running_loop().create_future()

            async def run() -> None:
                async with manager.run():
                    running.set_result(None)
                    await self._stop.wait()

            self._task = asyncio.create_task(run())
            self._task.add_done_callback(lambda t: _settle(running, t))
            await running
            self._manager = manager
            return manager

    async def close(self) -> None:
        """Stop the session manager and the tools' store worker (if a request started them)."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        if self._tools is not None:
            await asyncio.to_thread(self._tools.close)


def _settle(running: asyncio.Future[None], task: asyncio.Task[None]) -> None:
    """The manager's task ended: a start still awaited fails with why (else nothing to do)."""
    if running.done():
        return
    failed = None if task.cancelled() else task.exception()
    running.set_exception(failed or RuntimeError("the MCP session manager stopped before it started"))
