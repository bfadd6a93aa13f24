"""`create_app(config, ...) -> Starlette`: the `glider serve` application factory.

Contract:
- Building the app does no I/O and starts nothing. The lifespan owns the upstream client (built
  inside the running loop, closed on shutdown) and the event writer (started, then flushed and
  closed on shutdown) — unless the caller injected them, in which case the caller owns them.
- Seams: `sink` (any `domain.EventSink`; default an `store.writer.EventWriter` under GLIDER_HOME),
  `upstream` (any `backends.client.Upstream`; default the aiohttp client, routed per backend by
  `backends.network.routes`), `environ` (API keys, GLIDER_TOKEN and, with `server.trust_env`, the
  proxy variables are read from it once, here).
- Routes: the model endpoints (`/v1/messages`, `/v1/messages/count_tokens`, `/v1/chat/completions`,
  `/v1/responses`, each also without the `/v1` prefix for base URLs that already end in `/v1`),
  `GET /v1/models`, `HEAD|GET /` and `/api/hello`, `GET /healthz`, the router API (`/api/router/*`,
  `/api/playground/parse`, see `server.router_api`) and the context API (`server.context_api`, over
  the live writer's ring when the app owns or was given an EventWriter).
  A WebSocket upgrade on `GET /v1/responses` is answered at once with a 404 in OpenAI shape (Codex then
  uses HTTP), or closed with 1008 when the ASGI server speaks WebSocket.
- Everything sits behind `SecurityMiddleware` (Host check, GLIDER_TOKEN on /api/*); behind it,
  `server.asgi.HotPaths` sends `POST` on the model endpoints to them directly (the same endpoints
  the routes name, so the behaviour is the routes'). Both wrap Starlette's own stack from outside
  (`_App`), so a model request passes none of Starlette's middleware: an unexpected error there is
  answered by `ProxyEndpoint` in the client's protocol instead of Starlette's plain-text 500.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Scope
from starlette.websockets import WebSocket

from glider_cli import __version__
from glider_cli.backends.client import Upstream, make_upstream
from glider_cli.backends.network import routes as network_routes
from glider_cli.backends.registry import BackendRegistry
from glider_cli.domain import EventSink
from glider_cli.server.asgi import HotPaths, ProxyEndpoint, Reply
from glider_cli.server.delegation import Delegation
from glider_cli.server.proxy import Decider, Proxy
from glider_cli.server.replies import error_body
from glider_cli.server.security import SecurityMiddleware
from glider_cli.server.state import LoopSink

if TYPE_CHECKING:
    from glider_cli.config.model import Config


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status_code=status, media_type="application/json")


def _models(config: Config, anthropic: bool) -> dict[str, Any]:
    names: list[str] = ["glider-auto"]
    for b in config.settings.backends.values():
        if b.model and b.model not in names:
            names.append(b.model)
    if anthropic:
        data = [
            {"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z"} for n in names
        ]
        return {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "created": 0, "owned_by": "glider"} for n in names],
    }


class _App(Starlette):
    """Starlette with `outer` middleware wrapped around its whole stack, error middleware included."""

    outer: tuple[Middleware, ...] = ()

    def build_middleware_stack(self) -> ASGIApp:
        app = super().build_middleware_stack()
        for cls, args, kwargs in reversed(self.outer):
            app = cls(app, *args, **kwargs)
        return app


def create_app(
    config: Config,
    *,
    sink: EventSink | None = None,
    upstream: Upstream | None = None,
    environ: Mapping[str, str] | None = None,
    router: Decider | None = None,
    bound_host: str | None = None,
) -> Starlette:
    from glider_cli import paths as paths_mod
    from glider_cli.protocol.parse import parse_request

    env = os.environ if environ is None else environ
    settings = config.settings
    registry = BackendRegistry.from_settings(
        settings,
        env,
        defaults={"local": config.default_backend("local"), "cloud": config.default_backend("cloud")},
    )
    routes_by_origin = network_routes(registry.backends(), trust_env=settings.server.trust_env, environ=env)
    if router is None:
        from glider_cli.router import Router

        router = Router(config)
    from glider_cli.store.writer import EventWriter

    writer = None
    if sink is None:
        writer = EventWriter(paths_mod.resolve(env), settings.context)
        sink = writer
    import time

    from glider_cli.store.events import IdGenerator
    from glider_cli.turns.sticky import Stickiness

    loop_sink = LoopSink(sink, sink.write_now if isinstance(sink, EventWriter) else None)
    ids = IdGenerator()
    proxy = Proxy(
        router=router,
        parse=functools.partial(parse_request, lowered=True),
        registry=registry,
        sink=loop_sink,
        closing_sink=loop_sink.later,
        max_body_bytes=settings.server.max_body_bytes,
        new_id=ids,
        upstream=upstream,
        sticky=Stickiness(settings.sticky, settings.tool_followup, clock=time.time, new_id=ids),
        # Worker threads emit delegation events: they get the thread-safe sink, not the loop-only one.
        delegation=Delegation(paths_mod.resolve(env), settings, env, sink),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned: Upstream | None = None
        if proxy.upstream is None:
            owned = make_upstream(routes_by_origin)
            proxy.upstream = owned
        if writer is not None:
            writer.start()
            # Turn families and sticky bindings survive a restart: rebuilt from the warm-loaded log.
            proxy.sticky.rebuild(writer.recent())
        assert proxy.delegation is not None
        proxy.delegation.start()
        try:
            yield
        finally:
            await proxy.delegation.close()
            if owned is not None:
                await owned.aclose()
                proxy.upstream = None
            loop_sink.drain()
            if writer is not None:
                writer.close()

    def endpoint(protocol: str) -> ProxyEndpoint:
        async def handler(scope: Scope, raw: bytes) -> Reply:
            return await proxy.handle(protocol, scope, raw)

        return ProxyEndpoint(handler, limit, functools.partial(proxy.error, protocol))

    limit = settings.server.max_body_bytes
    messages = endpoint("anthropic")
    chat = endpoint("openai_chat")
    responses = endpoint("openai_responses")
    count_tokens = ProxyEndpoint(proxy.count_tokens, limit, functools.partial(proxy.error, "anthropic"))

    async def responses_get(request: Request) -> Response:
        msg = "Glider serves the Responses API over HTTP POST only; WebSocket transport is not supported"
        return Response(
            error_body("openai_responses", 404, msg), status_code=404, media_type="application/json"
        )

    async def responses_ws(websocket: WebSocket) -> None:
        await websocket.close(code=1008)

    async def models(request: Request) -> Response:
        return _json(_models(config, "anthropic-version" in request.headers))

    async def root(request: Request) -> Response:
        return Response(b"glider\n" if request.method == "GET" else b"", media_type="text/plain")

    async def hello(request: Request) -> Response:
        return (
            _json({"ok": True}) if request.method == "GET" else Response(b"", media_type="application/json")
        )

    async def healthz(request: Request) -> Response:
        return _json(
            {
                "status": "ok",
                "version": __version__,
                "config": config.source,
                "profile": config.profile,
                "backends": registry.describe(),
            }
        )

    routes: list[BaseRoute] = [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/api/hello", hello, methods=["GET", "HEAD"]),
        Route("/healthz", healthz, methods=["GET"]),
        WebSocketRoute("/v1/responses", responses_ws),
    ]
    hot: dict[str, ProxyEndpoint] = {}
    for prefix in ("/v1", ""):
        hot[f"{prefix}/messages"] = messages
        hot[f"{prefix}/messages/count_tokens"] = count_tokens
        hot[f"{prefix}/chat/completions"] = chat
        hot[f"{prefix}/responses"] = responses
        routes += [
            Route(f"{prefix}/messages", messages, methods=["POST"]),
            Route(f"{prefix}/messages/count_tokens", count_tokens, methods=["POST"]),
            Route(f"{prefix}/chat/completions", chat, methods=["POST"]),
            Route(f"{prefix}/responses", responses, methods=["POST"]),
            Route(f"{prefix}/responses", responses_get, methods=["GET"]),
            Route(f"{prefix}/models", models, methods=["GET"]),
        ]
    from glider_cli.server.router_api import router_routes

    routes += router_routes(config, router)
    from glider_cli.server.context_api import context_routes

    live = writer if writer is not None else sink if isinstance(sink, EventWriter) else None
    routes += context_routes(paths_mod.resolve(env), settings.context, live)

    host = bound_host if bound_host is not None else settings.server.host
    app = _App(routes=routes, lifespan=lifespan)
    app.outer = (
        Middleware(
            SecurityMiddleware,
            bound_host=host,
            allowed_hosts=settings.server.allowed_hosts,
            token=env.get("GLIDER_TOKEN") or None,
        ),
        Middleware(HotPaths, endpoints=hot),
    )
    app.state.proxy = proxy
    app.state.registry = registry
    return app
