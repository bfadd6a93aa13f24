"""The model API's routes: what Claude Code, Codex and the SDKs call, under `/v1` and without it.

Contract:
- `model_endpoints(proxy, limit)`: path -> `ProxyEndpoint` for `POST` on `/v1/messages`,
  `/v1/messages/count_tokens`, `/v1/chat/completions` and `/v1/responses`, each also without the
  `/v1` prefix (for base URLs that already end in `/v1`). `limit` is the largest body read (413
  beyond); an error is answered in the endpoint's protocol (`Engine.error`). It lives in
  `server.model_endpoints`, which imports no Starlette: the app builds the endpoints at start, its
  Starlette app on the first request that is not a model call.
- `model_routes(config, endpoints)`: those endpoints as Starlette routes (the same objects, so a
  request that `server.app.GliderApp` does not serve itself behaves the same), `GET /v1/models`
  (Anthropic's list shape when the request carries `anthropic-version`, else OpenAI's;
  `glider-auto` and every backend's model), and the Responses WebSocket transport refused: a
  WebSocket upgrade on `GET /v1/responses` is answered at once with a 404 in OpenAI shape (Codex
  then uses HTTP), or closed with 1008 when the ASGI server speaks WebSocket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from glider_cli.server.asgi import ProxyEndpoint
from glider_cli.server.http_json import error_response, json_response
from glider_cli.server.model_endpoints import PREFIXES, model_endpoints

if TYPE_CHECKING:
    from glider_cli.config.model import Config

__all__ = ["PREFIXES", "model_endpoints", "model_list", "model_routes"]
_NO_WEBSOCKET = "Glider serves the Responses API over HTTP POST only; WebSocket transport is not supported"


def model_list(config: Config, anthropic: bool) -> dict[str, Any]:
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


def model_routes(config: Config, endpoints: dict[str, ProxyEndpoint]) -> list[BaseRoute]:
    async def responses_get(request: Request) -> Response:
        return error_response("openai_responses", 404, _NO_WEBSOCKET)

    async def responses_ws(websocket: WebSocket) -> None:
        await websocket.close(code=1008)

    async def models(request: Request) -> Response:
        return json_response(model_list(config, "anthropic-version" in request.headers))

    routes: list[BaseRoute] = [WebSocketRoute("/v1/responses", responses_ws)]
    routes += [Route(path, endpoint, methods=["POST"]) for path, endpoint in endpoints.items()]
    for prefix in PREFIXES:
        routes += [
            Route(f"{prefix}/responses", responses_get, methods=["GET"]),
            Route(f"{prefix}/models", models, methods=["GET"]),
        ]
    return routes
