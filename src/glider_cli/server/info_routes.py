"""The routes that say Glider is there: `HEAD|GET /`, `HEAD|GET /api/hello` and `GET /healthz`.

Contract:
- `/` answers `glider` in plain text (empty for HEAD), except to a browser (`Accept: text/html`),
  which is redirected to the dashboard (`/ui/`); `/api/hello` answers `{"ok": true}` (empty for
  HEAD): Claude Code warms its connection with `HEAD /api/hello` (or `HEAD /`) and must get a 2xx.
- `/healthz` answers `{"status": "ok", "version", "config", "profile", "backends", "local",
  "probing", "connections"}`: the
  loaded config's source and profile, `BackendRegistry.describe()` (each backend's name, type, side,
  URL, model and key variable; never a key; and its circuit breaker's state, `backends.breaker`),
  per local backend its probed capability
  (`proxy.local_path`: reachable and why not, served models, window, tools; until the first probe,
  which runs while the server already answers, has landed: `reachable: null` and `source: "not
  probed"`, or "config" with the config's values alone), `probing`: true while that first probe is
  in flight, false once it is over however it ended (answered, timed out, failed), and `connections`:
  how many are open, and how many were over the per-client cap, closed at the header deadline or
  answered 408 at the body deadline since start (`server.connections`). With the Cursor proxy on
  (`cursor.port`), `cursor`: its port and URL, the hosts it decrypts and the CA's path. `telemetry`:
  `{"enabled": false}`, or the OTLP export's endpoint, protocol and sampling with the spans exported,
  dropped (queue full, failed exports), queued, and the last export error (`glider_cli.telemetry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from glider_cli import __version__
from glider_cli.server.http_json import JSON, json_response

if TYPE_CHECKING:
    from glider_cli.backends.registry import BackendRegistry
    from glider_cli.config.model import Config
    from glider_cli.server.inner import CursorSlot


def info_routes(config: Config, registry: BackendRegistry, cursor: CursorSlot) -> list[BaseRoute]:
    async def root(request: Request) -> Response:
        # (imported here: the pages' module is loaded by the first request that may want one, not at start)
        from glider_cli.server.ui.routes import wants_page

        if wants_page(request):  # a browser: the dashboard
            return RedirectResponse("/ui/", status_code=307)
        return Response(b"glider\n" if request.method == "GET" else b"", media_type="text/plain")

    async def hello(request: Request) -> Response:
        return json_response({"ok": True}) if request.method == "GET" else Response(b"", media_type=JSON)

    async def healthz(request: Request) -> Response:
        backends = registry.describe()
        breakers = getattr(getattr(request.app.state, "proxy", None), "breakers", None)
        if breakers is not None:
            # Per backend, its circuit breaker: closed | open | half_open, failures, cool-down left.
            state = breakers.health()
            for b in backends:
                b["breaker"] = state.get(str(b["name"]))
        health: dict[str, Any] = {
            "status": "ok",
            "version": __version__,
            "config": config.source,
            "profile": config.profile,
            "backends": backends,
        }
        if cursor.service is not None:
            # The Cursor proxy (`cursor.port`): where it listens, what it decrypts, the CA to trust.
            health["cursor"] = cursor.service.describe()
        limits = getattr(request.app.state, "limits", None)
        if limits is not None:
            # What the connection limits refused or closed since start (`server.connections`).
            health["connections"] = limits.counts()
        proxy = getattr(request.app.state, "proxy", None)
        local = getattr(proxy, "local", None)
        if local is not None:
            # Per local backend: reachable (and why not), served models, window, tools; and whether
            # the first probe is still in flight (the dashboard re-reads /healthz until it is over).
            health["local"] = local.health()
            health["probing"] = local.probing
        telemetry = getattr(request.app.state, "telemetry", None)
        # The OTLP export (`telemetry:`): where it goes, what was exported and what was dropped.
        health["telemetry"] = telemetry.health() if telemetry is not None else {"enabled": False}
        return json_response(health)

    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/api/hello", hello, methods=["GET", "HEAD"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
