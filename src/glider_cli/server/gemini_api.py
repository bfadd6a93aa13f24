"""The Gemini API on `glider serve`: what Gemini CLI and the google-genai SDKs call.

    POST /{v1beta|v1|v1alpha}/models/{model}:generateContent
    POST /{v1beta|v1|v1alpha}/models/{model}:streamGenerateContent[?alt=sse]
    POST /{v1beta|v1|v1alpha}/models/{model}:countTokens

Contract:
- generateContent and streamGenerateContent go through `Proxy.handle` with protocol "gemini": the
  same parse (the body framed with the path's model, `protocol.gemini_request`), turn families, rules,
  fallback and bookkeeping as every other client; a translated reply is Gemini-shaped
  (`protocol.gemini`), an `origin` backend gets the request unchanged at Google's API
  (https://generativelanguage.googleapis.com unless the backend names a base URL), with the client's
  key (`x-goog-api-key` or `?key=`) and the path's model (or the decision's).
- countTokens is routed like a request (placed, decided, never opened); an `origin` backend answers it,
  any other backend (or an origin that fails) gets the bytes/4 estimate corrected by that backend's
  reported usage, as `{"totalTokens": N}` with `x-glider-estimate: 1`.
- Any other method under `models/` is a 404 in Google's error shape; every error is
  `{"error": {"code", "message", "status"}}` with the status kept.
"""

from __future__ import annotations

import functools

import orjson
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from glider_cli.errors import BackendError, GliderError, RequestError
from glider_cli.protocol.gemini_request import parse_target
from glider_cli.proxy.calls import JSON_HEADERS
from glider_cli.proxy.pipeline import Proxy, route_header
from glider_cli.server.asgi import ProxyEndpoint, Reply
from glider_cli.turns.lifecycle import Served

VERSIONS = ("v1beta", "v1", "v1alpha")
PROTOCOL = "gemini"


def _total(data: bytes) -> int | None:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    n = obj.get("totalTokens") if isinstance(obj, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


async def count_tokens(proxy: Proxy, scope: Scope, raw: bytes) -> Reply:
    try:
        inb = proxy.inbound(PROTOCOL, scope, raw)
        opened = proxy.turns.open(inb.chat, inb.body, count_tokens=True)
        backend = proxy.registry.choose(opened.decision.target, opened.decision.backend)
    except RequestError as exc:
        return proxy.error(PROTOCOL, exc.status, exc.message)
    except GliderError as exc:
        return proxy.error(PROTOCOL, 500, exc.message)
    route = (
        b"x-glider-route",
        route_header(backend.side, opened.decision.rule, backend.name).encode("latin-1"),
    )
    if backend.kind == "origin":
        call = proxy._call(inb, opened.decision, backend, count_tokens=True)
        try:
            resp = await proxy._send(call)
            try:
                data = await resp.read()
            finally:
                await resp.aclose()
        except BackendError:
            data, status = b"", 0  # Google could not count: estimate below
        else:
            status = resp.status
        if 0 < status < 400:
            proxy.turns.close(opened, Served(backend.name, backend.side, call.model, status, _total(data)))
            return Reply(status, [*JSON_HEADERS, route], data)
    n = proxy.turns.estimate(backend.name, inb.chat.estimated_tokens)
    return Reply(200, [*JSON_HEADERS, route, (b"x-glider-estimate", b"1")], orjson.dumps({"totalTokens": n}))


def gemini_routes(proxy: Proxy, limit: int) -> list[BaseRoute]:
    """The Gemini model routes over `proxy` (`limit`: the body size cap, `server.max_body_bytes`)."""

    async def handler(scope: Scope, raw: bytes) -> Reply:
        target = parse_target(scope["path"])
        if target is None:
            return proxy.error(PROTOCOL, 404, f"Glider serves no Gemini method at {scope['path']}")
        if target[2] == "countTokens":
            return await count_tokens(proxy, scope, raw)
        return await proxy.handle(PROTOCOL, scope, raw)

    endpoint = ProxyEndpoint(handler, limit, functools.partial(proxy.error, PROTOCOL))
    return [Route(f"/{v}/models/{{target}}", endpoint, methods=["POST"]) for v in VERSIONS]
