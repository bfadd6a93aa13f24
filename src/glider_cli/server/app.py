"""`create_app(config, ...) -> GliderApp`: the `glider serve` application factory.

Contract:
- Building the app does no I/O and starts nothing. The lifespan owns the upstream client (built
  inside the running loop, closed on shutdown) and the event writer (started, then flushed and
  closed on shutdown) — unless the caller injected them, in which case the caller owns them. With
  its own writer it also runs retention (`server.retention`: day files past `context.retain_days`
  pruned once a day, an `EventsPruned` event each time). It starts the first probe of the local
  backends (`proxy.LocalPath`) and does not wait for it: the server listens at once, a request
  that comes before the probe is over waits for it, and `hooks.probed` (if given) is called when
  it is; shutdown cancels a probe still in flight. `hooks` (`server.inner.Hooks`) are what the
  runner is told: each is read from the app's state as `state.on_<name>`.
- Seams: `sink` (any `domain.EventSink`; default an `store.eventlog.writer.EventWriter` under GLIDER_HOME),
  `upstream` (any `backends.client.Upstream`; default the aiohttp client, routed per backend by
  `backends.network.routes`), `environ` (API keys, GLIDER_TOKEN and, with `server.trust_env`, the
  proxy variables are read from it once, here).
- Routes: the model API (`server.model_routes`: `/v1/messages`, `/v1/messages/count_tokens`,
  `/v1/chat/completions`, `/v1/responses`, `GET /v1/models`, each also without the `/v1` prefix),
  the info routes (`server.info_routes`: `HEAD|GET /` and `/api/hello`, `GET /healthz`), the router
  API (`/api/router/*`, `/api/playground/parse`, see `server.router_api`; the Rules page's editor,
  `server.rules_edit_api`), the context API
  (`server.context_api`, over the live writer's ring when the app owns or was given an EventWriter),
  the Gemini API (`server.gemini_api`: `/v1beta/models/{model}:{method}`), the session API
  (`server.session_api`: a session's last route, for Claude Code's statusline), the dashboard's
  APIs (`server.events_api`: a live event stream woken by the request path's writes, requests,
  sessions, counts; `server.dashboard_api`: rules in force, continuity) and its pages
  (`server.ui.routes`: `/ui/…`; a browser's `GET /` is redirected there, every other `HEAD|GET /`
  is answered as before). The context, session, event and dashboard APIs and the pages are
  placeholders until a request first asks for one (`server.deferred`): a start imports none of their
  modules (issue 29).
- Hot reload (`server.reload`): the lifespan starts a `Reloader` that watches the config's files every
  `reload_interval` seconds (None: no watcher), takes SIGHUP on the main thread, and serves
  `POST /api/router/reload`; `state.live` is the config and router in force.
- Layers: `server.deadlines.Deadlines` (the connection caps' 503, the body deadline's 408, each
  request's connection told when it is served) first, over `state.limits` (`server.connections`,
  whose protocol class `server.serve` gives uvicorn); then `SecurityMiddleware` (Host check,
  GLIDER_TOKEN on /api/*); then the Starlette app. A model call (`POST` on a model endpoint, the
  same endpoints the routes name, so the behaviour is the routes') is served by `GliderApp`
  itself, which applies both layers' checks in their order (`Deadlines.refuse_over_cap`,
  `SecurityMiddleware.refusal`, the connection's `watch` for the body deadline and for the client
  leaving, `Deadlines.answer_late`) and hands it to its `ProxyEndpoint` in the same frame: a model
  request passes none of Starlette's middleware, and an unexpected error there is answered by
  `ProxyEndpoint` in the client's protocol instead of Starlette's plain-text 500.
  The Starlette app and its routes are built (and Starlette imported) when the first request that
  is not a model call arrives (`server.inner.Inner`; issue 29's cold start), and the lifespan is run as
  Starlette's router runs one. `GliderApp.state` (`proxy`, `registry`, `limits`...) is the Starlette
  app's state (`request.app.state`) once it is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from glider_cli.backends.client import OnDemand, Upstream
from glider_cli.backends.network import Route
from glider_cli.backends.network import routes as network_routes
from glider_cli.backends.registry import BackendRegistry
from glider_cli.domain import EventSink
from glider_cli.proxy import Decider, Delegation, Engine, LocalPath, Observer, RefusedObserver, app_breakers
from glider_cli.server.asgi import ProxyEndpoint
from glider_cli.server.connections import ConnectionLimits
from glider_cli.server.deadlines import Deadlines
from glider_cli.server.inner import CursorSlot, Hooks, Inner, Lifespan, State
from glider_cli.server.mcp_http import McpMount
from glider_cli.server.security import SecurityMiddleware
from glider_cli.server.sink import LoopSink

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.routing import BaseRoute

    from glider_cli.config.model import Config
    from glider_cli.config.settings import ContextSettings
    from glider_cli.paths import Paths
    from glider_cli.server.event_hub import EventHub
    from glider_cli.server.mcp_server import WorkerTools
    from glider_cli.server.reload import LiveConfig, Reloader
    from glider_cli.store.eventlog.writer import EventWriter
    from glider_cli.telemetry import Telemetry


class GliderApp:
    """The ASGI app `create_app` returns (see the contract's Layers): a model call is served here,
    under the same checks as every other request, which goes through `deadlines` (the layers)."""

    def __init__(
        self,
        inner: Inner,
        *,
        endpoints: Mapping[str, ProxyEndpoint],
        gate: SecurityMiddleware,
        deadlines: Deadlines,
    ) -> None:
        self._inner = inner
        self.state = inner.state
        self._endpoints = dict(endpoints)
        self._gate = gate
        self._deadlines = deadlines
        self._connections = deadlines.limits.connections
        self._body_timeout = deadlines.limits.body_timeout

    @property
    def starlette(self) -> Starlette:
        """The Starlette app behind the model endpoints (built now if no request has built it)."""
        return self._inner.starlette

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
            await self._deadlines(scope, receive, send)
            return
        endpoint = self._endpoints.get(scope["path"])
        if endpoint is None:
            await self._deadlines(scope, receive, send)
            return
        # A model call: the checks of `Deadlines` and `SecurityMiddleware`, in their order, here.
        client = scope.get("client")
        conn = self._connections.get((client[0], client[1])) if client else None
        if conn is None:  # a server without the connection limits' protocol: no limits to apply
            refusal = self._gate.refusal(scope)
            if refusal is not None:
                await self._gate.refuse(scope, send, refusal)
            else:
                await endpoint(scope, receive, send)
            return
        if conn.over_cap:
            await self._deadlines.refuse_over_cap(conn, scope, send)
            return
        task = asyncio.current_task()
        assert task is not None
        # The connection cancels this task if its body is late or its client leaves (`watch`).
        conn.watch(task, conn.begin() + self._body_timeout)
        try:
            refusal = self._gate.refusal(scope)
            if refusal is not None:
                conn.body_in()
                await self._gate.refuse(scope, send, refusal)
            else:
                await endpoint.watched(scope, receive, send, conn)
        except asyncio.CancelledError:
            if not (conn.late or conn.lost):
                raise
            # Ours: the handler (and its upstream request) is cancelled; a late body gets the 408.
            task.uncancel()
            if conn.late:
                await self._deadlines.answer_late(scope, send)
        finally:
            conn.end(task)


def create_app(
    config: Config,
    *,
    sink: EventSink | None = None,
    upstream: Upstream | None = None,
    environ: Mapping[str, str] | None = None,
    router: Decider | None = None,
    bound_host: str | None = None,
    reload_interval: float | None = 1.0,
    observer: Observer | None = None,
    refused_observer: RefusedObserver | None = None,
    hooks: Hooks | None = None,
) -> GliderApp:
    from glider_cli import paths as paths_mod
    from glider_cli.server.event_hub import EventHub
    from glider_cli.server.model_endpoints import model_endpoints
    from glider_cli.server.reload import LiveConfig, Reloader
    from glider_cli.store.eventlog.writer import EventWriter

    env = os.environ if environ is None else environ
    settings = config.settings
    registry = BackendRegistry.from_settings(
        settings,
        env,
        defaults={"local": config.default_backend("local"), "cloud": config.default_backend("cloud")},
    )
    if router is None:
        from glider_cli.router import Router

        router = Router(config)
    writer = None
    if sink is None:
        writer = EventWriter(paths_mod.resolve(env), settings.context)
        sink = writer
    live = writer if writer is not None else sink if isinstance(sink, EventWriter) else None

    # The dashboard's live stream is woken each time the request path's events are handed over.
    hub = EventHub(live)
    loop_sink = LoopSink(
        sink,
        stage=live.stage if live is not None else None,
        write_staged=live.write_staged if live is not None else None,
        hub=hub,
    )
    routes_by_origin = network_routes(registry.backends(), trust_env=settings.server.trust_env, environ=env)
    # Built inside the running loop: by the lifespan, which closes it (an injected one is the caller's).
    owned = None
    if upstream is None:
        owned = upstream = OnDemand(functools.partial(_aiohttp_upstream, routes_by_origin))
    telemetry = _telemetry(config, env)
    tap: Callable[[EventSink], EventSink] | None = None
    if telemetry is not None:
        # Spans for each request once its reply is out, and for regrets recorded later.
        observer = telemetry.observer(observer)
        refused_observer = telemetry.refused_observer(refused_observer)
        tap = telemetry.tap
    proxy = _proxy(config, env, router, registry, sink, loop_sink, upstream, observer, refused_observer, tap)
    endpoints = model_endpoints(proxy, settings.server.max_body_bytes)
    home = paths_mod.resolve(env)
    current = LiveConfig(config, router)
    # What `glider serve` is told (`server.inner.Hooks`): read by the lifespan and the reloader.
    told = hooks if hooks is not None else Hooks()
    # What a connection may hold (`server.connections`); `server.serve` gives uvicorn its protocol.
    limits = ConnectionLimits(settings.server)
    cursor = CursorSlot()  # the Cursor proxy, once the lifespan started it (`/healthz` describes it)
    state = State(
        on_notice=told.notice,
        on_ready=told.ready,
        on_probed=told.probed,
        on_reloaded=told.reloaded,
        proxy=proxy,
        # The OTLP export when `telemetry:` (or OTEL_EXPORTER_OTLP_ENDPOINT) turns it on; /healthz shows it.
        telemetry=telemetry,
        registry=registry,
        # The config and router in force (a reload replaces them: `server.reload`).
        live=current,
        # `close()` ends the dashboard's live streams (a runner can call it when it starts shutting down).
        events=hub,
        limits=limits,
        # The Cursor proxy once the lifespan started it (`cursor.service`; None without one).
        cursor=cursor,
    )
    reloader = Reloader(current, proxy, env, loop_sink, interval=reload_interval, state=state)
    # `/mcp` (`server.mcp_http`): the SDK is imported, and the tools built, by the first MCP request.
    mcp = McpMount(lambda: _mcp_tools(home, current, live))

    def build() -> Starlette:
        """The Starlette app: every route but the hot paths' `POST` (issue 29: not needed to answer a
        model call, so neither built nor imported at start)."""
        from starlette.applications import Starlette
        from starlette.routing import Route

        from glider_cli.server.deferred import deferred
        from glider_cli.server.events_api import events_routes
        from glider_cli.server.gemini_api import gemini_routes
        from glider_cli.server.http_json import EXCEPTION_HANDLERS
        from glider_cli.server.info_routes import info_routes
        from glider_cli.server.model_routes import model_routes
        from glider_cli.server.router_api import router_routes
        from glider_cli.server.rules_edit_api import rules_edit_routes

        routes = [
            *info_routes(config, registry, cursor),
            *model_routes(config, endpoints),
            *router_routes(current, reloader),
            *rules_edit_routes(current, reloader, home.home),
            # Built on the first request for one of them (`server.deferred`).
            *deferred(["/api/context"], lambda: _context_routes(home, settings.context, live, current)),
            *deferred(["/api/events"], lambda: events_routes(home, settings.context, hub)),
            *deferred(
                ["/api/continuity", "/api/router/rules"], lambda: _dashboard_routes(config, router, home)
            ),
            *deferred(["/ui"], lambda: _ui_routes(env.get("GLIDER_TOKEN") or None)),
            *gemini_routes(proxy, settings.server.max_body_bytes),
            *deferred(["/api/sessions"], lambda: _session_routes(home, settings.context, live)),
            Route("/mcp", mcp),
        ]
        # Errors at the HTTP edge: the routes raise, these answer (`server.http_json`).
        app = Starlette(routes=routes, exception_handlers=dict(EXCEPTION_HANDLERS))
        app.state = state  # type: ignore[assignment]  # one state: `request.app.state` is the app's
        return app

    lifespan = _lifespan(proxy, loop_sink, writer, owned, hub, reloader, cursor, config, home, mcp, telemetry)
    inner = Inner(build, lifespan, state)
    gate = SecurityMiddleware(
        inner,
        bound_host=bound_host if bound_host is not None else settings.server.host,
        allowed_hosts=settings.server.allowed_hosts,
        token=env.get("GLIDER_TOKEN") or None,
    )
    return GliderApp(inner, endpoints=endpoints, gate=gate, deadlines=Deadlines(gate, limits))


def _context_routes(
    home: Paths, settings: ContextSettings, live: EventWriter | None, current: LiveConfig
) -> list[BaseRoute]:
    from glider_cli.server.context_api import context_routes

    return context_routes(home, settings, live, lambda: current.config.settings.pricing)


def _dashboard_routes(config: Config, router: Decider, home: Paths) -> list[BaseRoute]:
    from glider_cli.server.dashboard_api import dashboard_routes

    return dashboard_routes(config, router, home)


def _ui_routes(token: str | None) -> list[BaseRoute]:
    from glider_cli.server.ui.routes import ui_routes

    return ui_routes(token)


def _mcp_tools(home: Paths, current: LiveConfig, live: EventWriter | None) -> WorkerTools:
    """The MCP tools over the server's home and its config file or bundled profile, answered by a store
    worker of their own (`server.mcp_server.WorkerTools`), after the live writer's flush."""
    from glider_cli.server.mcp_server import WorkerTools
    from glider_cli.server.store_worker import StoreWorker
    from glider_cli.store.context_store import FLUSH_WAIT

    settings = current.config.settings
    source = current.config.source
    bundled = source.startswith("<bundled:") and source.endswith(">")
    return WorkerTools(
        StoreWorker(home, settings.context),
        None if bundled else source,
        source[len("<bundled:") : -1] if bundled else None,
        None,
        before=(lambda: live.flush(timeout=FLUSH_WAIT)) if live is not None else None,
    )


def _session_routes(home: Paths, settings: ContextSettings, live: EventWriter | None) -> list[BaseRoute]:
    from glider_cli.server.session_api import session_routes

    return session_routes(home, settings, live)


def _proxy(
    config: Config,
    env: Mapping[str, str],
    router: Decider,
    registry: BackendRegistry,
    sink: EventSink,
    loop_sink: LoopSink,
    upstream: Upstream,
    observer: Observer | None,
    refused_observer: RefusedObserver | None = None,
    tap: Callable[[EventSink], EventSink] | None = None,
) -> Engine:
    """The request engine: its events go through `loop_sink` (`server.sink`), its delegation
    workers' events straight to `sink`; `tap` (the telemetry's) wraps the request path's sinks. The
    backends' circuit breakers are built here and given to the engine and to the local path (a probe
    that answers closes an open one)."""
    import time

    from glider_cli import paths as paths_mod
    from glider_cli.protocol.parse import parse_request
    from glider_cli.router.plan import Planner
    from glider_cli.store.eventlog.events import IdGenerator
    from glider_cli.store.eventlog.writer import EventWriter
    from glider_cli.turns.lifecycle import Turns

    settings = config.settings
    # The local pack's episodes come from the live writer's ring (its events are redacted already).
    recent = sink.recent if isinstance(sink, EventWriter) else None
    ids = IdGenerator()
    local_only = config.routing.local_only
    # A strategy that operates gets its plan from Turns.open (`router.plan.Planner`).
    # (`proxy.strategies.orchestrator.planner`, inlined: the runner is imported when a strategy first runs.)
    sides = {name: registry.get(name).side for name in registry.names()}
    defaults = {
        s: (b.name if (b := registry.default_for(s)) is not None else None) for s in ("local", "cloud")
    }
    plans = Planner(settings.orchestration, sides, defaults)
    turns = Turns(
        router,
        settings.sticky,
        settings.tool_followup,
        clock=time.time,
        new_id=ids,
        local_only=local_only,
        planner=plans,
        escalate=config.routing.escalate,
    )
    from glider_cli.backends.probe_cache import FILENAME as PROBES

    request_sink = loop_sink if tap is None else tap(loop_sink)
    breakers = app_breakers(registry, request_sink)
    probes = paths_mod.resolve(env).run / PROBES
    return Engine(
        turns=turns,
        parse=functools.partial(parse_request, lowered=True),
        registry=registry,
        sink=request_sink,
        closing_sink=loop_sink.later if tap is None else tap(loop_sink.later),
        max_body_bytes=settings.server.max_body_bytes,
        upstream=upstream,
        breakers=breakers,
        # Worker threads emit delegation events: they get the thread-safe sink, not the loop-only one.
        delegation=Delegation(paths_mod.resolve(env), settings, env, sink),
        local=LocalPath(registry, settings, recent, cache=probes, reached=breakers.probed),
        orchestration=settings.orchestration,
        observer=observer,
        refused_observer=refused_observer,
    )


def _aiohttp_upstream(routes: Mapping[str, Route]) -> Upstream:
    """The default upstream (aiohttp), built in the running loop: aiohttp is imported then, not at start."""
    from glider_cli.backends.aiohttp_upstream import AiohttpUpstream

    return AiohttpUpstream(routes)


def _telemetry(config: Config, env: Mapping[str, str]) -> Telemetry | None:
    """The OTLP export when it is on (`config.telemetry.effective`); OpenTelemetry is imported only then."""
    from glider_cli.config.telemetry import effective

    wanted = effective(config.settings.telemetry, env)
    if not wanted.on:
        return None
    from glider_cli.config.pricing import PriceTable
    from glider_cli.errors import ConfigError

    try:
        from glider_cli.telemetry import Telemetry
    except ImportError as exc:
        raise ConfigError(
            f"telemetry is on but OpenTelemetry cannot be imported ({exc})",
            hint="pip install 'glider-cli[telemetry]', or turn it off (telemetry.enabled: false)",
        ) from None
    return Telemetry.start(wanted, PriceTable(config.settings.pricing), env)


async def _retention(writer: EventWriter) -> None:
    """Daily pruning of the writer's day files (`server.retention`), recorded through the writer. The
    store is imported after the first delay, not at start (issue 29's cold start)."""
    from glider_cli.server import retention

    await asyncio.sleep(retention.FIRST_DELAY)
    from glider_cli.paths import Paths
    from glider_cli.store.context_store import ContextStore

    store = ContextStore(Paths(home=writer.context_dir.parent), writer.settings)
    await retention.run_retention(store, writer, first_delay=0.0)


async def _start_cursor(
    app: Inner, proxy: Engine, slot: CursorSlot, config: Config | None, home: Paths | None
) -> Any:
    """The Cursor proxy when `cursor.port` is set; imported only then (it needs `glider[cursor]`)."""
    if config is None or home is None or config.settings.cursor.port is None:
        return None
    from glider_cli.cursor.listener import CursorService

    service = CursorService(
        config.settings.cursor, home.home, proxy, notice=getattr(app.state, "on_notice", None)
    )
    await service.start()
    slot.started(service)
    return service


async def _watch(app: Inner, local: LocalPath, first: asyncio.Task[Any]) -> None:
    """Once the first probe is over: `state.on_probed` (`glider serve` prints what it found), then
    the re-probes of the backends marked down (`LocalPath.watch`), until cancelled."""
    await asyncio.wait((first,))
    probed = getattr(app.state, "on_probed", None)
    if probed is not None and not first.cancelled():
        try:
            probed()
        except Exception:  # lines that cannot be printed never stop the re-probes
            pass
    await local.watch()


def _lifespan(
    proxy: Engine,
    loop_sink: LoopSink,
    writer: EventWriter | None,
    owned: OnDemand | None,
    hub: EventHub,
    reloader: Reloader,
    cursor_slot: CursorSlot,
    config: Config | None = None,
    home: Paths | None = None,
    mcp: McpMount | None = None,
    telemetry: Telemetry | None = None,
) -> Lifespan:
    """Start what the app owns (the upstream client unless injected, the writer, delegation) and
    close it on shutdown, after the last events were handed to the writer."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Inner) -> AsyncIterator[None]:
        if owned is not None:
            owned.open()
        retention: asyncio.Task[None] | None = None
        if writer is not None:
            # Turn families and sticky bindings survive a restart: rebuilt from the warm-loaded log
            # (the events the writer read to fill its ring, as `recent()` would give them now).
            proxy.turns.rebuild(writer.start())
            retention = asyncio.create_task(_retention(writer))
        assert proxy.delegation is not None
        proxy.delegation.start()
        probing: list[asyncio.Task[Any]] = []
        if proxy.local is not None:
            # What each local backend serves, its window and tools: asked beside the server, which
            # listens at once (a request that comes meanwhile waits for the answer: `LocalPath.ready`);
            # then re-read when a backend marked down comes back.
            first = proxy.local.start_probe(timeout=1.5)
            probing += [first, asyncio.get_running_loop().create_task(_watch(app, proxy.local, first))]
        reloader.start()
        # The Cursor proxy (`cursor.port`): on this loop, beside the gateway (`glider_cli.cursor`).
        cursor = await _start_cursor(app, proxy, cursor_slot, config, home)
        ready = getattr(app.state, "on_ready", None)
        if ready is not None:
            ready()
        try:
            yield
        finally:
            if cursor is not None:
                await cursor.close()
            if mcp is not None:
                await mcp.close()
            if retention is not None:
                retention.cancel()
            await reloader.stop()
            hub.close()
            if probing:
                # A probe still in flight (a backend slow to answer) is stopped, and both tasks are
                # over before the loop closes.
                for task in probing:
                    task.cancel()
                await asyncio.wait(probing)
            await proxy.delegation.close()
            if owned is not None:
                await owned.aclose()
            loop_sink.drain()
            if writer is not None:
                writer.close()
            if telemetry is not None:
                # What is queued goes out (bounded), off the loop: the exporter's calls block.
                await asyncio.to_thread(telemetry.shutdown)

    return lifespan
