"""The routes that say Glider is there: `HEAD|GET /`, `HEAD|GET /api/hello` and `GET /healthz`.

Contract:
- `/` answers `glider` in plain text (empty for HEAD); `/api/hello` answers `{"ok": true}` (empty for
  HEAD): Claude Code warms its connection with `HEAD /api/hello` (or `HEAD /`) and must get a 2xx.
- `/healthz` answers `{"status": "ok", "version", "config", "profile", "backends"}`: the loaded
  config's source and profile and `BackendRegistry.describe()` (each backend's name, type, side,
  URL, model and key variable; never a key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli import __version__
from glider_cli.server.http_json import JSON, json_response

if TYPE_CHECKING:
    from glider_cli.backends.registry import BackendRegistry
    from glider_cli.config.model import Config


def info_routes(config: Config, registry: BackendRegistry) -> list[BaseRoute]:
    async def root(request: Request) -> Response:
        return Response(b"glider\n" if request.method == "GET" else b"", media_type="text/plain")

    async def hello(request: Request) -> Response:
        return json_response({"ok": True}) if request.method == "GET" else Response(b"", media_type=JSON)

    async def healthz(request: Request) -> Response:
        # What is in force: a reload (`server.reload`) replaces `state.config` and `state.registry`.
        current = getattr(request.app.state, "config", config)
        health = {
            "status": "ok",
            "version": __version__,
            "config": current.source,
            "profile": current.profile,
            "backends": getattr(request.app.state, "registry", registry).describe(),
        }
        return json_response(health)

    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/api/hello", hello, methods=["GET", "HEAD"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
