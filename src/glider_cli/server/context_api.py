"""The context API on `glider serve`: `/api/context/*`, the same core calls as `glider context`.

`context_routes(paths, settings, writer) -> list[BaseRoute]`; `writer` is the serve lifespan's
EventWriter (recent events and episodes then come from its ring), or None to read the files only.

    GET  /api/context/recent?limit=50&before=   list of events, newest last
    GET  /api/context/turns?limit=200&before=   list of episode dicts, oldest first: a page (below)
    GET  /api/context/turns/{id}                {"turn_id", "episode", "keys", "events"}; 404 if unknown
    GET  /api/context/episodes?limit=N&before=  list of episode dicts, newest last
    GET  /api/context/egress?days=N&session=S&limit=200
                                                what `glider context egress --json` prints: the newest
                                                `limit` calls that left the machine (`omitted`: how
                                                many older ones), and per-backend totals of them all
    GET  /api/context/usage?days=N&by=day|model|rule|session
                                                what `glider context usage --json` prints: tokens and
                                                cost per side, estimated savings, local share, regret
    GET  /api/context/export                    JSONL (application/x-ndjson): events, then entity records
    GET  /api/context/query?q=<query>           what `glider context query --json` prints
    POST /api/context/index-tree    {"path", "turn_id"?}   the TreeIndexResult dict
    POST /api/context/index-symbols {"path"}               the SymbolIndexResult dict
    GET  /api/context/communities?turn_id=&algorithm=components|louvain&limit=
    GET  /api/context/explain?turn_id=&id=
    POST /api/context/prune {"days"?, "dry_run"?}   {"plan", "applied", "result"}; days defaults to
                                                    context.retain_days

Paging: `before` is a cursor to page back with. For `recent` it is an event id (the events older
than it); for `turns` and `episodes` a turn id (the turns listed before it), so the first item of a
page is the cursor of the next. `turns` answers the newest `limit` turns (default 200), reading only
the day files that page needs (`ContextStore.turns`); a full page carries `x-glider-next-before:
<turn id>`.
A bad parameter is a 400 `{"error": {"message", "position"?, "param"?}}` (`BadParam`, a QueryError:
the app's exception handlers, `server.http_json`); an unknown turn a 404.
The views that read the index files or the entity graph (turns, a turn, egress, usage, query, explain,
communities, export, index-tree, index-symbols, prune) are answered by the store's worker process
(`server.store_worker`: one view at a time, recycled beyond its memory budget), so they hold neither
the event loop nor the server's memory; `recent` and `episodes` come from the live writer's ring.
Before a view, the events the writer holds are flushed, so an answer includes what was emitted first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from glider_cli.config.pricing import Price
from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.server.http_json import BadParam, error_json, json_object, json_response
from glider_cli.server.store_worker import StoreWorker
from glider_cli.store.context_store import EGRESS_LIMIT, FLUSH_WAIT, ContextStore
from glider_cli.store.eventlog.writer import EventWriter

T = TypeVar("T")
MAX_LIMIT = 10_000
TURNS_PAGE = 200


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadParam(f"{name}={raw!r} must be a whole number from 1 to {MAX_LIMIT}", name)
    return int(raw)


def _page(items: list[dict[str, Any]], limit: int | None, before: str | None) -> list[dict[str, Any]]:
    """The `limit` turns listed before the turn `before` (all of them when it is not listed)."""
    if before is not None:
        at = next((i for i, e in enumerate(items) if e.get("turn_id") == before), None)
        if at is not None:
            items = items[:at]
    return items[-limit:] if limit is not None else items


def _cursor(request: Request) -> str | None:
    raw = request.query_params.get("before", "").strip()
    if not raw:
        return None
    if len(raw) > 200 or any(c.isspace() for c in raw):
        raise BadParam("before must be one token (no spaces)", "before")
    return raw


def _str_param(request: Request, name: str) -> str:
    raw = request.query_params.get(name, "").strip()
    if not raw or any(c.isspace() for c in raw):
        raise BadParam(f"{name} is required (one token, no spaces)", name)
    return raw


def _dir_param(body: dict[str, Any]) -> Path:
    raw = body.get("path")
    if not isinstance(raw, str) or not raw:
        raise BadParam("path is required (a directory)", "path")
    p = Path(raw).expanduser()
    if not p.is_dir():
        raise BadParam(f"path {raw!r} is not a directory", "path")
    return p


def context_routes(
    paths: Paths,
    settings: ContextSettings | None = None,
    writer: EventWriter | None = None,
    prices: Callable[[], tuple[Price, ...]] | None = None,
) -> list[BaseRoute]:
    """The `/api/context/*` routes (see the module contract); `prices` gives the `pricing:` entries of
    the config in force (read per call: a reload changes them)."""
    settings = settings or ContextSettings()
    store = ContextStore(paths, settings, writer)
    worker = StoreWorker(paths, settings)

    async def call(fn: Callable[[], T]) -> T:
        return await asyncio.to_thread(fn)

    def flushed() -> None:
        if writer is not None:
            writer.flush(timeout=FLUSH_WAIT)

    async def view(op: str, *args: Any) -> tuple[bytes, dict[str, Any]]:
        def work() -> tuple[bytes, dict[str, Any]]:
            flushed()
            return worker.call(op, *args)

        return await call(work)

    async def answer(op: str, *args: Any) -> Response:
        body, _ = await view(op, *args)
        return Response(body, media_type="application/json")

    async def recent(request: Request) -> Response:
        limit = _int_param(request, "limit", 50)
        before = _cursor(request)
        if before is None:
            return json_response(await call(lambda: store.recent(limit)))

        def older() -> list[dict[str, Any]]:
            evs = [e for e in store.recent(store.settings.max_events) if e["id"] < before]
            return evs[-limit:]

        return json_response(await call(older))

    async def turns(request: Request) -> Response:
        limit = _int_param(request, "limit", TURNS_PAGE)
        body, meta = await view("turns", limit, _cursor(request))
        reply = Response(body, media_type="application/json")
        if meta["count"] == limit:
            reply.headers["x-glider-next-before"] = meta["first"]
        return reply

    async def turn(request: Request) -> Response:
        tid = request.path_params["turn_id"]
        body, _ = await view("turn", tid)
        if body == b"null":
            return error_json(404, {"message": f"no turn {tid!r}", "param": "turn_id"})
        return Response(body, media_type="application/json")

    async def episodes(request: Request) -> Response:
        limit = _int_param(request, "limit", store.settings.max_events)
        before = _cursor(request)
        if before is None:
            return json_response(await call(lambda: store.episodes(limit)))
        return json_response(_page(await call(store.episodes), limit, before))

    async def egress(request: Request) -> Response:
        raw = request.query_params.get("days")
        days = None if raw is None or raw == "" else _int_param(request, "days", 1)
        session = request.query_params.get("session", "").strip() or None
        if session is not None and (len(session) > 200 or any(c.isspace() for c in session)):
            raise BadParam("session must be one token (no spaces)", "session")
        return await answer("egress", days, session, _int_param(request, "limit", EGRESS_LIMIT))

    async def usage(request: Request) -> Response:
        from glider_cli.store.views.usage import BY

        raw = request.query_params.get("days")
        days = None if raw is None or raw == "" else _int_param(request, "days", 1)
        by = request.query_params.get("by", "day")
        if by not in BY:
            raise BadParam(f"by={by!r} must be one of {', '.join(BY)}", "by")
        configured = [p.to_dict() for p in (prices() if prices is not None else ())]
        return await answer("usage", days, by, configured)

    async def export(request: Request) -> Response:
        def pieces() -> Iterator[bytes]:
            flushed()
            yield from worker.stream("export")

        # A plain iterator: Starlette reads it in its thread pool, a piece (about 1 MB) at a time.
        return StreamingResponse(pieces(), media_type="application/x-ndjson")

    async def query(request: Request) -> Response:
        q = request.query_params.get("q", "")
        if not q.strip():
            raise BadParam("q is required: <turn_id> [options] keyword…", "q")
        return await answer("query", q)

    async def index_tree(request: Request) -> Response:
        body = await json_object(request, empty=True)
        root = _dir_param(body)
        turn_id = body.get("turn_id")
        if turn_id is not None and (not isinstance(turn_id, str) or not turn_id.strip()):
            raise BadParam("turn_id must be a non-empty string", "turn_id")
        return await answer("index_tree", str(root), turn_id)

    async def index_symbols(request: Request) -> Response:
        root = _dir_param(await json_object(request, empty=True))
        return await answer("index_symbols", str(root))

    async def communities(request: Request) -> Response:
        turn_id = _str_param(request, "turn_id")
        algorithm = request.query_params.get("algorithm", "components")
        if algorithm not in ("components", "louvain"):
            raise BadParam(f"algorithm={algorithm!r} must be components or louvain", "algorithm")
        limit = _int_param(request, "limit", 20)
        value = "1" if algorithm == "components" else "louvain"
        return await answer("query", f"{turn_id} communities={value} limit={limit}")

    async def explain(request: Request) -> Response:
        turn_id = _str_param(request, "turn_id")
        eid = _str_param(request, "id")
        return await answer("query", f"{turn_id} explain={eid}")

    async def prune(request: Request) -> Response:
        body = await json_object(request, empty=True)
        days = body.get("days")
        if days is not None and (type(days) is not int or not 1 <= days <= 100_000):
            raise BadParam("days must be a whole number of at least 1", "days")
        dry_run = body.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise BadParam("dry_run must be true or false", "dry_run")
        return await answer("prune", days, dry_run)

    p = "/api/context"
    return [
        Route(f"{p}/recent", recent, methods=["GET"]),
        Route(f"{p}/turns", turns, methods=["GET"]),
        Route(f"{p}/turns/{{turn_id}}", turn, methods=["GET"]),
        Route(f"{p}/episodes", episodes, methods=["GET"]),
        Route(f"{p}/egress", egress, methods=["GET"]),
        Route(f"{p}/usage", usage, methods=["GET"]),
        Route(f"{p}/export", export, methods=["GET"]),
        Route(f"{p}/query", query, methods=["GET"]),
        Route(f"{p}/index-tree", index_tree, methods=["POST"]),
        Route(f"{p}/index-symbols", index_symbols, methods=["POST"]),
        Route(f"{p}/communities", communities, methods=["GET"]),
        Route(f"{p}/explain", explain, methods=["GET"]),
        Route(f"{p}/prune", prune, methods=["POST"]),
    ]
