"""The session API on `glider serve`: what one client session was last routed to.

    GET /api/sessions/{session_id}/route   -> {session_id, turn_id, side, rule, backend, model, delegate, ts}
                                              (`app.statusline.last_route`), 404 for a session the
                                              recent events do not know

It reads the live writer's ring when the app has one, else the event files of the warm-load window
(in the thread pool). Claude Code's statusline command asks it (`glider setup claude-code --statusline`).
"""

from __future__ import annotations

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli.app.statusline import last_route
from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.service import ContextStore
from glider_cli.store.writer import EventWriter


def session_routes(paths: Paths, settings: ContextSettings, writer: EventWriter | None) -> list[BaseRoute]:
    store = ContextStore(paths, settings, writer)

    async def route(request: Request) -> Response:
        sid = request.path_params["session_id"]
        found = await run_in_threadpool(lambda: last_route(store.recent(settings.max_events), sid))
        if found is None:
            body = {
                "error": {
                    "message": f"no route for session {sid!r} in the recent events",
                    "param": "session_id",
                }
            }
            return Response(orjson.dumps(body), status_code=404, media_type="application/json")
        return Response(orjson.dumps(found), media_type="application/json")

    return [Route("/api/sessions/{session_id}/route", route, methods=["GET"])]
