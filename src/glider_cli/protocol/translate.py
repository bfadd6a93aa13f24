"""The translation entry points the proxy calls for whole bodies. Pure: no I/O, no clock-dependent decisions.
Streams are translated by `protocol.translate_stream`.

Protocol names: "anthropic", "openai_chat", "openai_responses" (client side and backend side),
"ollama" (backend side) and "gemini" (client side: Gemini's generateContent, `protocol.gemini`);
"openai" is accepted as an alias of "openai_chat". A Responses backend only serves Responses clients
(same-protocol passthrough).

    request_to(backend_proto, client_proto, body, *, model, max_tokens_cap=None, num_ctx=None) -> dict
        Client body -> backend body. Equal protocols: the same body (a shallow copy) with only
        "model" replaced, so unknown fields, `thinking`, `cache_control`, `context_management`,
        `metadata` survive untouched. `max_tokens_cap` bounds a translated request's output
        tokens: Claude Code asks for 32k-128k, which a vLLM server with a smaller context
        answers with a 400 (for Ollama it bounds `options.num_predict`). `num_ctx` is the window
        an Ollama request asks for (`options.num_ctx`): Ollama otherwise runs a model with its
        own small default and silently drops the start of a long prompt.
    response_to(client_proto, backend_proto, body, *, model) -> dict
        A non-streaming backend reply -> the client's reply shape (unchanged when equal).
    response_bytes_to(client_proto, backend_proto, data, *, model, backend) -> dict
        The same for a reply as received: BackendError (naming `backend`) when it is not a JSON object.
    upstream_path(backend_proto) -> str
        Where a translated request goes: `/api/chat` (Ollama), `/v1/chat/completions`, `/v1/messages`.
    synthesize_stream(client_proto, body, *, model, body_proto=None) -> list[bytes]
        A whole non-streaming reply (in `body_proto`, default the client's) as client SSE events.
    text_reply(client_proto, text, *, model, stream, usage=None) -> dict | list[bytes]
        An ordinary assistant reply carrying `text` (the delegate feature answers through it).
`check_pair`, `encoder_for` (each client protocol's StreamEncoder) and `events_of` (a whole reply as
stream events) are shared with `protocol.translate_stream`.

Thinking / reasoning rule:
  - Passthrough (equal protocols) never touches thinking blocks or reasoning items, and
    synthesize_stream of an Anthropic body for an Anthropic client keeps its signed thinking.
  - When a request is translated, thinking blocks and reasoning items in the history are
    dropped (their signatures / encrypted content are only valid for the provider that made
    them), and thinking settings (`thinking`, `reasoning`, `reasoning_effort`) are not forwarded.
  - Reasoning a translated backend produces (Anthropic thinking, OpenAI-compatible
    `reasoning_content`/`reasoning`, Ollama `thinking`) reaches OpenAI Chat clients as
    `reasoning_content`, and is dropped for Anthropic and Responses clients: they send thinking
    blocks / reasoning items back in the next request, and an unsigned block would make the real
    Anthropic or OpenAI API reject the conversation if a later turn is routed to the cloud.

Tool call ids: kept as they are when they match [A-Za-z0-9_-] (else sanitised the same way both
ways, so a tool_result always finds its call); synthesised as `call_…` for Ollama, which has none.
An Anthropic client sees every id `toolu_`-shaped: another backend's `call_x` is written `toolu_g_call_x`
and read back as `call_x` when the tool_result is translated, so the backend gets its own ids back.
A Gemini client gets the backend's id in `functionCall.id`, which Gemini CLI echoes in the
functionResponse; calls without ids are paired by name and order (`protocol.gemini_request`).

Model names: a translated reply carries the `model` the caller passes (`proxy.dispatch` passes the
client's requested one; the backend's is in the reply's `x-glider-route` header).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import orjson

from glider_cli.errors import BackendError, ConfigError, RequestError
from glider_cli.protocol import anthropic, gemini, ir, ollama, openai_chat, openai_responses

CLIENT_PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "gemini")
BACKEND_PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "ollama")
_UPSTREAM_PATHS = {"ollama": "/api/chat", "openai_chat": "/v1/chat/completions", "anthropic": "/v1/messages"}


class Encoder(Protocol):
    """What every protocol's StreamEncoder offers."""

    def encode(self, ev: ir.StreamEvent) -> list[bytes]: ...

    def error(self, message: str, *, type: str = "api_error") -> list[bytes]: ...

    def assume_started(self) -> None: ...

    @property
    def text_bytes(self) -> int: ...


def canonical(proto: str) -> str:
    name = "openai_chat" if proto == "openai" else proto
    if name not in BACKEND_PROTOCOLS and name not in CLIENT_PROTOCOLS:
        raise ConfigError(f"unknown wire protocol {proto!r}; expected one of {', '.join(BACKEND_PROTOCOLS)}")
    return name


def check_pair(client_proto: str, backend_proto: str) -> tuple[str, str]:
    client, backend = canonical(client_proto), canonical(backend_proto)
    if client not in CLIENT_PROTOCOLS:
        raise ConfigError(f"{client_proto!r} is not a client protocol")
    if backend == "openai_responses" and client != backend:
        raise ConfigError("an openai_responses backend can only serve openai_responses clients (passthrough)")
    if backend not in BACKEND_PROTOCOLS:
        raise ConfigError(f"{backend_proto!r} is not a backend protocol (Gemini is served as a client only)")
    return client, backend


def parse_request(client_proto: str, body: dict[str, Any]) -> ir.Request:
    proto = canonical(client_proto)
    if proto == "anthropic":
        return anthropic.parse_request(body)
    if proto == "openai_chat":
        return openai_chat.parse_request(body)
    if proto == "openai_responses":
        return openai_responses.parse_request(body)
    if proto == "gemini":
        return gemini.parse_request(body)
    raise ConfigError(f"{client_proto!r} is not a client protocol")


def request_to(
    backend_proto: str,
    client_proto: str,
    body: dict[str, Any],
    *,
    model: str | None,
    max_tokens_cap: int | None = None,
    num_ctx: int | None = None,
) -> dict[str, Any]:
    client, backend = check_pair(client_proto, backend_proto)
    if client == backend:
        out = dict(body)
        if model is not None:
            out["model"] = model
        return out
    try:
        req = parse_request(client, body)
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        # A shape the client's own parser let through but the translation cannot read: the client's
        # error (a protocol-shaped 400), never Glider's 500.
        raise RequestError(f"request body cannot be translated: {type(exc).__name__}: {exc}") from None
    changes: dict[str, Any] = {}
    if model is not None:
        changes["model"] = model
    if max_tokens_cap is not None and (req.max_tokens is None or req.max_tokens > max_tokens_cap):
        changes["max_tokens"] = max_tokens_cap
    if changes:
        req = dataclasses.replace(req, **changes)
    if backend == "anthropic":
        return anthropic.build_request(req)
    if backend == "openai_chat":
        return openai_chat.build_request(req)
    return ollama.build_request(req, num_ctx=num_ctx)


def parse_response(backend_proto: str, body: dict[str, Any]) -> ir.Response:
    proto = canonical(backend_proto)
    if proto == "anthropic":
        return anthropic.parse_response(body)
    if proto == "openai_chat":
        return openai_chat.parse_response(body)
    if proto == "openai_responses":
        return openai_responses.parse_response(body)
    if proto == "gemini":
        return gemini.parse_response(body)
    return ollama.parse_response(body)


def build_response(client_proto: str, resp: ir.Response, *, model: str) -> dict[str, Any]:
    proto = canonical(client_proto)
    if proto == "anthropic":
        return anthropic.build_response(resp, model=model)
    if proto == "openai_chat":
        return openai_chat.build_response(resp, model=model)
    if proto == "gemini":
        return gemini.build_response(resp, model=model)
    return openai_responses.build_response(resp, model=model)


def response_to(client_proto: str, backend_proto: str, body: dict[str, Any], *, model: str) -> dict[str, Any]:
    client, backend = check_pair(client_proto, backend_proto)
    if client == backend:
        return body
    return build_response(client, parse_response(backend, body), model=model)


def response_bytes_to(
    client_proto: str, backend_proto: str, data: bytes, *, model: str, backend: str
) -> dict[str, Any]:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BackendError(f"backend {backend} sent a reply that is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BackendError(f"backend {backend} sent a reply that is not a JSON object")
    return response_to(client_proto, backend_proto, obj, model=model)


def upstream_path(backend_proto: str) -> str:
    name = canonical(backend_proto)
    if name not in _UPSTREAM_PATHS:
        raise ConfigError(f"{backend_proto!r} is no backend that Glider translates requests for")
    return _UPSTREAM_PATHS[name]


def encoder_for(
    client: str,
    model: str,
    include_usage: bool,
    *,
    same_origin: bool = False,
    input_estimate: int | None = None,
    sse: bool = True,
) -> Encoder:
    """`input_estimate`: what an Anthropic client's `message_start` reports when the backend gives no
    input count at the start, and what any client's closing usage reports when the backend gave none
    at all (`encoder_base`); `sse=False`: a Gemini stream as one JSON array (no `alt=sse`)."""
    if client == "anthropic":
        return anthropic.StreamEncoder(model=model, keep_thinking=same_origin, input_estimate=input_estimate)
    # The estimate is used only when the backend reports no input count.
    if client == "openai_chat":
        return openai_chat.StreamEncoder(
            model=model, include_usage=include_usage, input_estimate=input_estimate
        )
    if client == "gemini":
        return gemini.StreamEncoder(model=model, sse=sse, input_estimate=input_estimate)
    return openai_responses.StreamEncoder(model=model, input_estimate=input_estimate)


def events_of(resp: ir.Response) -> list[ir.StreamEvent]:
    events: list[ir.StreamEvent] = [
        ir.Start(
            resp.id,
            resp.model,
            ir.Usage(resp.usage.input_tokens, 0, resp.usage.cache_read_tokens, resp.usage.cache_write_tokens),
        )
    ]
    key = 0
    for part in resp.parts:
        if isinstance(part, ir.Text):
            events.append(ir.TextDelta(part.text))
        elif isinstance(part, ir.Thinking):
            events.append(ir.ThinkingDelta(part.text, part.signature))
        elif isinstance(part, ir.ToolCall):
            events.append(ir.ToolStart(key, part.id, part.name))
            events.append(ir.ToolArgs(key, part.arguments))
            key += 1
    events.append(ir.Finish(resp.stop_reason, resp.usage))
    return events


def synthesize_stream(
    client_proto: str,
    body: dict[str, Any],
    *,
    model: str,
    body_proto: str | None = None,
    include_usage: bool = False,
) -> list[bytes]:
    """A complete non-streaming reply re-told as the client protocol's stream."""
    client = canonical(client_proto)
    source = canonical(body_proto or client)
    resp = parse_response(source, body)
    encoder = encoder_for(client, model, include_usage, same_origin=source == client)
    out: list[bytes] = []
    for ev in events_of(resp):
        out.extend(encoder.encode(ev))
    return out


def text_reply(
    client_proto: str,
    text: str,
    *,
    model: str,
    stream: bool,
    usage: ir.Usage | None = None,
    include_usage: bool = False,
) -> dict[str, Any] | list[bytes]:
    resp = ir.Response("", model, [ir.Text(text)], "end_turn", usage or ir.Usage())
    client = canonical(client_proto)
    if not stream:
        return build_response(client, resp, model=model)
    encoder = encoder_for(client, model, include_usage)
    return [b for ev in events_of(resp) for b in encoder.encode(ev)]
