"""The proxy's one seam onto `protocol.translate`, for requests whose client and backend protocols differ.

Contract:
- `upstream_path(backend)`: the path a translated request goes to (`/api/chat` for Ollama,
  `/v1/chat/completions` for OpenAI-compatible servers, `/v1/messages` for Anthropic).
- `request_body(client_protocol, body, chat, backend, model)`: the upstream JSON body, with `model`
  set (the decision's model or adapter, else the backend's, else the client's), `stream` kept, and
  the output-token request capped at the backend's `max_tokens` when it sets one.
- `response_body(client_protocol, backend, data, model)`: a whole upstream reply in the client's shape.
- `stream_converter(client_protocol, backend, model, body)`: an object with `feed(bytes) -> bytes`,
  `close() -> bytes` (ends the client stream; an upstream that stopped before its terminal event
  gets the protocol's error event) and `error(message) -> bytes`, turning upstream stream bytes
  into the client's SSE, event by event. Chat clients get usage when `stream_options.include_usage`;
  `input_estimate` is what an Anthropic client's `message_start` reports when the backend counts
  the input only at the end; a Gemini client's stream is SSE with `alt=sse`, else one JSON array.
- `stream_media_type(client_protocol, body)`: the content type of the converted stream.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from glider_cli.backends.registry import Backend
from glider_cli.domain import ChatRequest
from glider_cli.errors import BackendError

_PATHS = {"ollama": "/api/chat", "openai_chat": "/v1/chat/completions", "anthropic": "/v1/messages"}


class StreamConverter(Protocol):
    def feed(self, chunk: bytes) -> bytes: ...

    def close(self) -> bytes: ...

    def error(self, message: str) -> bytes: ...


def upstream_path(backend: Backend) -> str:
    return _PATHS[backend.wire]


def request_body(
    client_protocol: str, body: dict[str, Any], chat: ChatRequest, backend: Backend, model: str | None
) -> dict[str, Any]:
    from glider_cli.protocol import translate

    return translate.request_to(
        backend.wire, client_protocol, body, model=model or chat.model, max_tokens_cap=backend.max_tokens
    )


def response_body(client_protocol: str, backend: Backend, data: bytes, model: str) -> dict[str, Any]:
    from glider_cli.protocol import translate

    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BackendError(f"backend {backend.name} sent a reply that is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BackendError(f"backend {backend.name} sent a reply that is not a JSON object")
    return translate.response_to(client_protocol, backend.wire, obj, model=model)


class _Converter:
    def __init__(
        self, client_protocol: str, backend: Backend, model: str, include_usage: bool, **opts: Any
    ) -> None:
        from glider_cli.protocol.translate import StreamTranslator

        self._t = StreamTranslator(
            client_protocol, backend.wire, model=model, include_usage=include_usage, **opts
        )

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(self._t.feed(chunk))

    def close(self) -> bytes:
        return b"".join(self._t.finish())

    def error(self, message: str) -> bytes:
        return b"".join(self._t.error(message))


def stream_converter(
    client_protocol: str,
    backend: Backend,
    model: str,
    body: dict[str, Any],
    *,
    input_estimate: int | None = None,
) -> StreamConverter:
    opts = body.get("stream_options")
    include_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
    sse = body.get("alt") != "json"
    return _Converter(client_protocol, backend, model, include_usage, input_estimate=input_estimate, sse=sse)


def stream_media_type(client_protocol: str, body: dict[str, Any] | None = None) -> str:
    if client_protocol == "gemini" and body is not None and body.get("alt") == "json":
        return "application/json"
    return "text/event-stream"
