"""The session API on `glider serve`: what one client session was last routed to.

    GET /api/sessions/{session_id}/route   -> {session_id, turn_id, side, rule, backend, model, delegate, ts}
                                              (`app.statusline.last_route`), 404 for a session the
                                              recent events do not know

It reads the live writer's ring when the app has one, else the event files of the warm-load window
(in the thread pool). Claude Code's statusline command asks it (`glider setup claude-code --statusline`).
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from glider_cli.app.statusline import last_route
from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.server.http_json import json_response
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog.writer import EventWriter


def session_routes(paths: Paths, settings: ContextSettings, writer: EventWriter | None) -> list[BaseRoute]:
    store = ContextStore(paths, settings, writer)

    async def route(request: Request) -> Response:
        sid = request.path_params["session_id"]
        found = await asyncio.to_thread(lambda: last_route(store.recent(settings.max_events), sid))
        if found is None:
            body = {
                "error": {
                    "message": f"no route for session {sid!r} in the recent events",
                    "param": "session_id",
                }
            }
            return json_response(body, 404)
        return json_response(found)

    return [Route("/api/sessions/{session_id}/route", route, methods=["GET"])]
