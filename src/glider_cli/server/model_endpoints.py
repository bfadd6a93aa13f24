"""The model endpoints as plain ASGI apps (`server.asgi.ProxyEndpoint`), without Starlette: what
`server.app.GliderApp` serves `POST` on, and what `server.model_routes` names as routes. See
`server.model_routes` for the contract.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from glider_cli.server.asgi import ProxyEndpoint

if TYPE_CHECKING:
    from glider_cli.proxy import Engine

PREFIXES = ("/v1", "")


def model_endpoints(proxy: Engine, limit: int) -> dict[str, ProxyEndpoint]:
    def endpoint(protocol: str) -> ProxyEndpoint:
        # A partial, not a coroutine of its own: one frame less per request.
        return ProxyEndpoint(
            functools.partial(proxy.handle, protocol), limit, functools.partial(proxy.error, protocol)
        )

    messages = endpoint("anthropic")
    chat = endpoint("openai_chat")
    responses = endpoint("openai_responses")
    count = functools.partial(proxy.count_tokens, "anthropic")
    count_tokens = ProxyEndpoint(count, limit, functools.partial(proxy.error, "anthropic"))
    hot: dict[str, ProxyEndpoint] = {}
    for prefix in PREFIXES:
        hot[f"{prefix}/messages"] = messages
        hot[f"{prefix}/messages/count_tokens"] = count_tokens
        hot[f"{prefix}/chat/completions"] = chat
        hot[f"{prefix}/responses"] = responses
    return hot
