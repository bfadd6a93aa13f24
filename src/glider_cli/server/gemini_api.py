"""The Gemini API on `glider serve`: what Gemini CLI and the google-genai SDKs call.

    POST /{v1beta|v1|v1alpha}/models/{model}:generateContent
    POST /{v1beta|v1|v1alpha}/models/{model}:streamGenerateContent[?alt=sse]
    POST /{v1beta|v1|v1alpha}/models/{model}:countTokens

Contract:
- generateContent and streamGenerateContent go through `Engine.handle` with protocol "gemini": the
  same parse (the body framed with the path's model, `protocol.gemini_request`), turn families, rules,
  fallback and bookkeeping as every other client; a translated reply is Gemini-shaped
  (`protocol.gemini`), an `origin` backend gets the request unchanged at Google's API
  (https://generativelanguage.googleapis.com unless the backend names a base URL), with the client's
  key (`x-goog-api-key` or `?key=`) and the path's model (or the decision's).
- countTokens is `Engine.count_tokens("gemini", …)`, routed like a request (placed, decided, never
  opened); an `origin` backend answers it, any other backend (or an origin that fails) gets the bytes/4
  estimate corrected by that backend's reported usage, as `{"totalTokens": N}` with
  `x-glider-estimate: 1`.
- Any other method under `models/` is a 404 in Google's error shape; every error is
  `{"error": {"code", "message", "status"}}` with the status kept.
"""

from __future__ import annotations

import functools

from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from glider_cli.protocol.gemini_request import parse_target
from glider_cli.proxy import Engine, Reply
from glider_cli.server.asgi import ProxyEndpoint

VERSIONS = ("v1beta", "v1", "v1alpha")
PROTOCOL = "gemini"


def gemini_routes(proxy: Engine, limit: int) -> list[BaseRoute]:
    """The Gemini model routes over `proxy` (`limit`: the body size cap, `server.max_body_bytes`)."""

    async def handler(scope: Scope, raw: bytes) -> Reply:
        target = parse_target(scope["path"])
        if target is None:
            return proxy.error(PROTOCOL, 404, f"Glider serves no Gemini method at {scope['path']}")
        if target[2] == "countTokens":
            return await proxy.count_tokens(PROTOCOL, scope, raw)
        return await proxy.handle(PROTOCOL, scope, raw)

    endpoint = ProxyEndpoint(handler, limit, functools.partial(proxy.error, PROTOCOL))
    return [Route(f"/{v}/models/{{target}}", endpoint, methods=["POST"]) for v in VERSIONS]
