"""The translation entry points the proxy calls. Pure: no I/O, no clock-dependent decisions.

Protocol names: "anthropic", "openai_chat", "openai_responses" (client side and backend side),
"ollama" (backend side) and "gemini" (client side: Gemini's generateContent, `protocol.gemini`);
"openai" is accepted as an alias of "openai_chat". A Responses backend only serves Responses clients
(same-protocol passthrough).

    request_to(backend_proto, client_proto, body, *, model, max_tokens_cap=None) -> dict
        Client body -> backend body. Equal protocols: the same body (a shallow copy) with only
        "model" replaced, so unknown fields, `thinking`, `cache_control`, `context_management`,
        `metadata` survive untouched. `max_tokens_cap` bounds a translated request's output
        tokens: Claude Code asks for 32k-128k, which a vLLM server with a smaller context
        answers with a 400.
    response_to(client_proto, backend_proto, body, *, model) -> dict
        A non-streaming backend reply -> the client's reply shape (unchanged when equal).
    StreamTranslator(client_proto, backend_proto, *, model, include_usage=False, input_estimate=None,
                     sse=True)
        .feed(bytes) -> list[bytes]: upstream bytes (SSE or NDJSON, cut anywhere) in, complete
        client events out, one item per event. In passthrough mode (equal protocols) the input
        chunks come back unchanged and are only scanned for usage and the stop reason.
        .finish() -> list[bytes]: flush at the end of the upstream body; if the upstream ended
        before its terminal event, the client stream is ended with the protocol's error event.
        .error(message, type=) -> list[bytes]: end the client stream after a mid-stream failure.
        .usage, .stop_reason (Anthropic vocabulary), .started, .complete.
        `input_estimate`: the input tokens an Anthropic client's `message_start` reports when the
        backend gives none at the start of its stream (OpenAI-compatible and Ollama servers report
        usage only at the end, which `message_delta` then carries). `sse=False`: a Gemini client that
        did not ask for `alt=sse` gets the stream as one JSON array.
    synthesize_stream(client_proto, body, *, model, body_proto=None) -> list[bytes]
        A whole non-streaming reply (in `body_proto`, default the client's) as client SSE events.
    text_reply(client_proto, text, *, model, stream, usage=None) -> dict | list[bytes]
        An ordinary assistant reply carrying `text` (the delegate feature answers through it).

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

Model names: a translated reply carries the `model` the caller passes (`server.outbound` passes the
client's requested one; the backend's is in the reply's `x-glider-route` header).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from glider_cli.errors import ConfigError
from glider_cli.protocol import anthropic, gemini, ir, ollama, openai_chat, openai_responses
from glider_cli.protocol.sse import NDJSONDecoder, SSEDecoder, SSEEvent, parse_block

_ANTHROPIC_TAPPED = {b"message_start", b"message_delta", b"message_stop", b"error"}
_RESPONSES_TAPPED = {b"response.completed", b"response.incomplete", b"response.failed", b"error"}
_CHAT_USAGE = re.compile(rb'"usage":\s*\{')
_CHAT_NO_FINISH = re.compile(rb'"finish_reason":\s*null')

CLIENT_PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "gemini")
BACKEND_PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "ollama")


class Encoder(Protocol):
    """What every protocol's StreamEncoder offers."""

    def encode(self, ev: ir.StreamEvent) -> list[bytes]: ...

    def error(self, message: str, *, type: str = "api_error") -> list[bytes]: ...

    def assume_started(self) -> None: ...


def canonical(proto: str) -> str:
    name = "openai_chat" if proto == "openai" else proto
    if name not in BACKEND_PROTOCOLS and name not in CLIENT_PROTOCOLS:
        raise ConfigError(f"unknown wire protocol {proto!r}; expected one of {', '.join(BACKEND_PROTOCOLS)}")
    return name


def _check_pair(client_proto: str, backend_proto: str) -> tuple[str, str]:
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
) -> dict[str, Any]:
    client, backend = _check_pair(client_proto, backend_proto)
    if client == backend:
        out = dict(body)
        if model is not None:
            out["model"] = model
        return out
    req = parse_request(client, body)
    if model is not None:
        req.model = model
    if max_tokens_cap is not None and (req.max_tokens is None or req.max_tokens > max_tokens_cap):
        req.max_tokens = max_tokens_cap
    if backend == "anthropic":
        return anthropic.build_request(req)
    if backend == "openai_chat":
        return openai_chat.build_request(req)
    return ollama.build_request(req)


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
    client, backend = _check_pair(client_proto, backend_proto)
    if client == backend:
        return body
    return build_response(client, parse_response(backend, body), model=model)


def _encoder(
    client: str,
    model: str,
    include_usage: bool,
    *,
    same_origin: bool = False,
    input_estimate: int | None = None,
    sse: bool = True,
) -> Encoder:
    if client == "anthropic":
        return anthropic.StreamEncoder(model=model, keep_thinking=same_origin, input_estimate=input_estimate)
    if client == "openai_chat":
        return openai_chat.StreamEncoder(model=model, include_usage=include_usage)
    if client == "gemini":
        return gemini.StreamEncoder(model=model, sse=sse)
    return openai_responses.StreamEncoder(model=model)


def _events_of(resp: ir.Response) -> list[ir.StreamEvent]:
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
    encoder = _encoder(client, model, include_usage, same_origin=source == client)
    out: list[bytes] = []
    for ev in _events_of(resp):
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
    encoder = _encoder(client, model, include_usage)
    return [b for ev in _events_of(resp) for b in encoder.encode(ev)]


class StreamTranslator:
    """Upstream stream bytes (backend protocol) -> client protocol event bytes, incrementally."""

    def __init__(
        self,
        client_proto: str,
        backend_proto: str,
        *,
        model: str,
        include_usage: bool = False,
        input_estimate: int | None = None,
        sse: bool = True,
    ) -> None:
        self.client, self.backend = _check_pair(client_proto, backend_proto)
        self.passthrough = self.client == self.backend
        self.model = model
        self.usage: ir.Usage | None = None
        self.stop_reason: str | None = None
        self.started = False
        self.complete = False
        self._sse = SSEDecoder() if self.backend != "ollama" else None
        self._ndjson = NDJSONDecoder() if self.backend == "ollama" else None
        self._decoder: Any = {
            "anthropic": anthropic.StreamDecoder,
            "openai_chat": openai_chat.StreamDecoder,
            "ollama": ollama.StreamDecoder,
        }.get(self.backend, lambda: None)()
        self._encoder: Encoder = _encoder(
            self.client, model, include_usage, input_estimate=input_estimate, sse=sse
        )
        self._tap_chat = (
            openai_chat.StreamDecoder() if self.passthrough and self.client == "openai_chat" else None
        )
        self._ended = False

    # ---- public
    def feed(self, chunk: bytes) -> list[bytes]:
        if self._ended or not chunk:
            return []
        if self.passthrough:
            for block in self._sse.feed_blocks(chunk) if self._sse is not None else []:
                self._tap_block(block)
            self.started = True
            return [chunk]
        return self._translate(self._decode(chunk, final=False))

    def finish(self) -> list[bytes]:
        if self._ended:
            return []
        if self.passthrough:
            for block in self._sse.flush_blocks() if self._sse is not None else []:
                self._tap_block(block)
            self._ended = True
            if not self.complete:
                return self._encoder_for_errors().error("upstream stream ended before completion")
            return []
        out = self._translate(self._decode(b"", final=True))
        if not self.complete and not self._ended:
            out += self.error("upstream stream ended before completion")
        self._ended = True
        return out

    def error(self, message: str, *, type: str = "api_error") -> list[bytes]:
        if self._ended:
            return []
        self._ended = True
        encoder = self._encoder_for_errors() if self.passthrough else self._encoder
        out: list[bytes] = encoder.error(message, type=type)
        self.started = self.started or bool(out)
        return out

    # ---- internals
    def _encoder_for_errors(self) -> Encoder:
        # In passthrough the client already saw the upstream's own frames; only the error frame is ours.
        self._encoder.assume_started()
        return self._encoder

    def _decode(self, chunk: bytes, *, final: bool) -> list[ir.StreamEvent]:
        events: list[ir.StreamEvent] = []
        if self._ndjson is not None:
            objs = self._ndjson.feed(chunk) + (self._ndjson.flush() if final else [])
            for obj in objs:
                events.extend(self._decoder.decode(obj))
        elif self._sse is not None:
            sse = self._sse.feed(chunk) + (self._sse.flush() if final else [])
            for ev in sse:
                events.extend(self._decoder.decode(ev))
        if final and hasattr(self._decoder, "end"):
            events.extend(self._decoder.end())
        return events

    def _translate(self, events: list[ir.StreamEvent]) -> list[bytes]:
        out: list[bytes] = []
        for ev in events:
            if isinstance(ev, ir.Start):
                self.usage = ir.merge_usage(self.usage, ev.usage)
            elif isinstance(ev, ir.Finish):
                self.usage = ir.merge_usage(self.usage, ev.usage)
                self.stop_reason = ev.stop_reason
                self.complete = True
            elif isinstance(ev, ir.Failure):
                out.extend(self.error(ev.message, type=ev.type))
                return out
            out.extend(self._encoder.encode(ev))
        if out:
            self.started = True
        return out

    def _tap_block(self, block: bytes) -> None:
        """Skip, without parsing, the frames that cannot carry usage, a stop reason or an error
        (almost all of them: the content deltas), so a passthrough stays cheap."""
        if block.startswith(b"event:"):
            name = block[6 : block.find(b"\n")].strip() if b"\n" in block else block[6:].strip()
            if self.client == "anthropic" and name not in _ANTHROPIC_TAPPED:
                return
            if self.client == "openai_responses" and name not in _RESPONSES_TAPPED:
                return

        elif self.client == "openai_chat" and not (
            b"[DONE]" in block
            or b'"error"' in block
            or _CHAT_USAGE.search(block)
            or not _CHAT_NO_FINISH.search(block)
        ):
            return
        ev = parse_block(block)
        if ev is not None:
            self._tap(ev)

    def _tap(self, ev: SSEEvent) -> None:
        """Passthrough: read usage / stop reason / completion from the frames that matter."""
        if self.client == "anthropic":
            if ev.event in ("message_start", "message_delta", "message_stop", "error"):
                for item in self._decoder.decode(ev):
                    if isinstance(item, ir.Start | ir.Finish):
                        self.usage = ir.merge_usage(self.usage, item.usage)
                    if isinstance(item, ir.Finish):
                        self.stop_reason, self.complete = item.stop_reason, True
                    if isinstance(item, ir.Failure):
                        self.complete = True
        elif self.client == "openai_responses":
            usage, status = openai_responses.usage_from_event(ev)
            if status is not None:
                self.usage = ir.merge_usage(self.usage, usage)
                self.stop_reason = "max_tokens" if status == "incomplete" else "end_turn"
                self.complete = True
        elif self._tap_chat is not None:
            for item in self._tap_chat.decode(ev):
                if isinstance(item, ir.Finish):
                    self.usage, self.stop_reason, self.complete = item.usage, item.stop_reason, True
                if isinstance(item, ir.Failure):
                    self.complete = True
