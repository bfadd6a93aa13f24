"""The dashboard's event API on `glider serve`: live events, the requests of the last days, their counts.

`events_routes(paths, settings, hub, clock=time.time) -> list[BaseRoute]`; `hub` is the app's
`EventHub` (`server.event_hub`, importable from here too; over the serve lifespan's EventWriter, or
None when the app was given another sink).

    GET /api/events/stream?after=<id>&backlog=N&types=A,B
        Server-sent events: one `id:` + `data:` frame per event of the writer's ring (the redacted
        event as the log holds it), oldest first, from `after` (or the `Last-Event-ID` header the
        browser sends when it reconnects), else the newest `backlog` (default 0) then everything new.
        The hub wakes a stream as soon as the request path's events are written, and every
        `poll` seconds regardless (events written by other threads). A stream ends by itself after
        `max_age` seconds (default 3) and tells the browser to reconnect after `retry` ms (default
        200), which it does with `Last-Event-ID`, so nothing is lost: a stream that never ended
        would hold `glider serve` past uvicorn's graceful-shutdown timeout on Ctrl-C, which cancels it
        with an error. `EventHub.close()` (`app.state.events`) ends every stream at once.
        404 when the app has no live event log.
    GET /api/events/requests?limit=50&before=<id>&session=<id>&turn_id=<id>
        {"requests": [...], "next": <cursor or null>, "since": <oldest id kept>}: request records
        (`store.views.feed.Request`), newest first, paged.
    GET /api/events/sessions?limit=30&before=<cursor>  {"sessions": [...], "next", "since"}
    GET /api/events/stats?window=hour|day              `store.views.feed_views.window_stats` + each
                                                       backend's `state` (ok, failing, idle)

Requests, sessions and stats read a `store.views.feed.Feed` over the last `context.warm_load_days` days of
the log (at least one), refreshed incrementally per call in the thread pool after the writer's
queue is flushed. A bad parameter is a 400 `{"error": {"message", "param"}}`.
"""

from __future__ import annotations

import asyncio
import time
from asyncio import to_thread as run_in_threadpool
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.server.event_hub import EventHub
from glider_cli.server.http_json import BadParam, json_response

__all__ = ["EventHub", "events_routes"]

WINDOWS = {"hour": (3600, 12), "day": (86_400, 24)}
MAX_LIMIT = 500
FLUSH_WAIT = 1.0


def _limit(request: Request, name: str, default: int, low: int = 1) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= MAX_LIMIT:
        raise BadParam(f"{name}={raw!r} must be a whole number from {low} to {MAX_LIMIT}", name)
    return int(raw)


def _token(request: Request, name: str) -> str | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if len(raw) > 200 or any(c.isspace() for c in raw):
        raise BadParam(f"{name} must be one token (no spaces)", name)
    return raw


def _frame(event: dict[str, Any]) -> bytes:
    return b"id: " + str(event["id"]).encode() + b"\ndata: " + orjson.dumps(event, default=str) + b"\n\n"


async def _stream(hub: EventHub, cursor: str, types: frozenset[str] | None) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    end = loop.time() + hub.max_age
    yield b"retry: %d\n\n" % hub.retry_ms
    while not hub.closed:
        batch = hub.after(cursor, 200)
        if batch:
            cursor = str(batch[-1]["id"])
            frames = [_frame(e) for e in batch if types is None or e.get("type") in types]
            if frames:
                yield b"".join(frames)
            if len(batch) == 200:
                continue
        left = end - loop.time()
        if left <= 0:
            return
        await hub.wait(min(hub.poll, left))


def events_routes(
    paths: Paths,
    settings: ContextSettings,
    hub: EventHub,
    *,
    clock: Callable[[], float] = time.time,
) -> list[BaseRoute]:
    """The `/api/events/*` routes (see the module contract). The feed's modules are imported here, not
    at start (`create_app` defers these routes: issue 29's cold start)."""
    from glider_cli.store.views import feed_views
    from glider_cli.store.views.feed import Feed

    feed = Feed(paths.context, days=max(settings.warm_load_days, 1))

    def refreshed() -> Feed:
        if hub.writer is not None:
            hub.writer.flush(timeout=FLUSH_WAIT)
        feed.refresh()
        return feed

    async def stream(request: Request) -> Response:
        if hub.writer is None:
            msg = "no live event log: this server writes its events to another sink"
            return json_response({"error": {"message": msg}}, 404)
        cursor = request.headers.get("last-event-id") or _token(request, "after")
        if cursor is None:
            cursor = hub.start_cursor(_limit(request, "backlog", 0, low=0))
        raw_types = request.query_params.get("types", "")
        types = frozenset(t for t in raw_types.split(",") if t) or None
        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        return StreamingResponse(_stream(hub, cursor, types), media_type="text/event-stream", headers=headers)

    async def requests(request: Request) -> Response:
        limit = _limit(request, "limit", 50)
        before, session, turn = (_token(request, n) for n in ("before", "session", "turn_id"))
        f = await run_in_threadpool(refreshed)
        page, nxt = f.requests(limit, before=before, session=session, turn=turn)
        return json_response({"requests": page, "next": nxt, "since": f.since})

    async def sessions(request: Request) -> Response:
        limit = _limit(request, "limit", 30)
        before = _token(request, "before")

        def work() -> dict[str, Any]:
            f = refreshed()
            page, nxt = feed_views.sessions(f.records(), limit, before=before)
            return {"sessions": page, "next": nxt, "since": f.since}

        return json_response(await run_in_threadpool(work))

    async def stats(request: Request) -> Response:
        name = request.query_params.get("window", "hour")
        if name not in WINDOWS:
            raise BadParam(f"window={name!r} must be one of {', '.join(WINDOWS)}", "window")
        window_s, buckets = WINDOWS[name]

        def work() -> dict[str, Any]:
            f = refreshed()
            now_ms = int(clock() * 1000)
            out = feed_views.window_stats(
                f.records(), window_s=window_s, now_ms=now_ms, buckets=buckets, dropped=f.dropped > 0
            )
            for entry in out["backends"].values():
                entry["state"] = feed_views.backend_state(entry)
            return {"window": name, **out}

        return json_response(await run_in_threadpool(work))

    p = "/api/events"
    return [
        Route(f"{p}/stream", stream, methods=["GET"]),
        Route(f"{p}/requests", requests, methods=["GET"]),
        Route(f"{p}/sessions", sessions, methods=["GET"]),
        Route(f"{p}/stats", stats, methods=["GET"]),
    ]
