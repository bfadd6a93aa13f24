"""Glider's MCP server on the official SDK (`mcp`, its low-level `Server`): `app.mcp_tools` on the wire.

Contract:
- `build(tools)` -> the SDK `Server` named `glider`: `tools/list` gives `app.mcp_tools.TOOLS` (each with
  its input schema, read-only and closed-world hints); `tools/call` runs one on a worker thread (the
  store reads files; the event loop stays free) and answers its text as one text block, its
  `structured` as `structuredContent`, and `isError` for an error answer. An unknown tool is an error
  answer too (`isError`), like any bad input: the server never fails a call it can answer.
  `resources/list` and `resources/read` give the workspace's continuity record and turn index.
- The workspace a call names: the `x-glider-workspace` header of the HTTP request that carried it
  (`delegate.workspace.HEADER`), else the client's first `file://` root (`roots/list`, asked at each
  call of a client that declared roots); else none, and the server's working directory is the default.
- `WorkerTools`: the tools answered by a store worker process (`server.store_worker`), so this process
  holds only the protocol; `glider mcp` and serve's `/mcp` use it.
- `run_stdio(tools)`: serve one client on stdin/stdout until stdin closes. While it serves, the SDK
  points file descriptor 1 at stderr, so nothing but protocol messages reaches stdout.
The SDK answers the protocol revisions of `mcp_types.version` (2024-11-05 to 2025-11-25 through the
`initialize` handshake, and 2026-07-28's per-request envelope).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio
import mcp_types as types
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from glider_cli import __version__
from glider_cli.app.mcp_tools import CONTINUITY_URI, TOOLS, TURNS_URI, Answer, Tools
from glider_cli.delegate.workspace import HEADER
from glider_cli.errors import GliderError
from glider_cli.server.store_worker import StoreWorker

ROOTS_WAIT = 5.0
INSTRUCTIONS = (
    "Glider routes this agent's turns between local models, the cloud and other agent CLIs, and keeps a "
    "per-project record of them. Ask it when you lack context: `continuity` for what happened earlier "
    "in this session (also in other CLIs), `recent_turns` for where the last turns went, `context_query` "
    "to search turns and indexed code, `route_explain` to see why a message would go where it goes."
)


def named_workspace(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The workspace the HTTP request names in its header; None on stdio."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(HEADER)
    return str(value) if value else None


class WorkerTools:
    """The tools run in a store worker (`server.store_worker`, ops `mcp_call` / `mcp_read`): the graph
    and the turn index of weeks of history are held there, and let go when it idles, not here.
    `before()` runs before each call (serve: the live writer's flush, so the worker's read of the files
    includes what was emitted first)."""

    def __init__(
        self,
        worker: StoreWorker,
        config: str | None,
        profile: str | None,
        default: Path | None,
        before: Callable[[], object] | None = None,
    ) -> None:
        self.worker = worker
        self.setup = (config, profile, str(default) if default is not None else None)
        self.before = before

    def _call(self, op: str, *args: Any) -> dict[str, Any]:
        if self.before is not None:
            self.before()
        body, _ = self.worker.call(op, self.setup, *args)
        value: dict[str, Any] = orjson.loads(body)
        return value

    def call(self, name: str, args: Mapping[str, Any] | None, named: str | None = None) -> Answer:
        try:
            d = self._call("mcp_call", name, dict(args or {}), named)
        except GliderError as exc:  # the config would not load in the worker
            return Answer(exc.message, {"error": exc.message}, is_error=True)
        return Answer(d["text"], d["structured"], d["is_error"])

    def read_resource(self, uri: str, named: str | None = None) -> tuple[str, str]:
        d = self._call("mcp_read", uri, named)
        return d["text"], d["mime"]

    def close(self) -> None:
        self.worker.close()


async def client_root(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The first `file://` root the client names (`roots/list`), when it declared roots and the
    connection can carry the request; None otherwise, or when it does not answer within ROOTS_WAIT."""
    session = ctx.session
    caps = session.client_capabilities
    if caps is None or caps.roots is None or not session.can_send_request:
        return None
    try:
        with warnings.catch_warnings():
            # Roots are deprecated from 2026-07-28 on; the clients of the handshake era still send them.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            with anyio.fail_after(ROOTS_WAIT):
                listed = await session.list_roots()
    except (MCPError, TimeoutError):
        return None
    for root in listed.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.path:
            return url2pathname(uri.path)
    return None


def build(tools: Tools) -> Server[Any]:
    listed = [
        types.Tool(
            name=t.name,
            title=t.title,
            description=t.description,
            input_schema=dict(t.input_schema),
            annotations=types.ToolAnnotations(
                read_only_hint=True, open_world_hint=False, idempotent_hint=True
            ),
        )
        for t in TOOLS
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        named = named_workspace(ctx) or await client_root(ctx)
        answer = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments, named)
        return types.CallToolResult(
            content=[types.TextContent(text=answer.text)],
            structured_content=answer.structured,
            is_error=answer.is_error,
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=CONTINUITY_URI,
                    name="continuity",
                    title="Continuity record of this workspace",
                    description="The user's turns and delegate outcomes Glider recorded for this "
                    "project, oldest first (Markdown).",
                    mime_type="text/markdown",
                ),
                types.Resource(
                    uri=TURNS_URI,
                    name="turns",
                    title="Turn index of this workspace",
                    description="The project's recent turns: asked, routed, rule, outcome, files (JSON).",
                    mime_type="application/json",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        named = named_workspace(ctx) or await client_root(ctx)
        uri = str(params.uri)
        try:
            text, mime = await anyio.to_thread.run_sync(tools.read_resource, uri, named)
        except GliderError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, text=text, mime_type=mime)
        ]
        return types.ReadResourceResult(contents=contents)

    return Server(
        "glider",
        version=__version__,
        title="Glider",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run_stdio(tools: Tools) -> None:
    anyio.run(_serve_stdio, build(tools))
