"""Streams in the client's protocol: upstream stream bytes translated event by event, and the frames
that end a client stream after a failure. Pure: bytes in, bytes out, no I/O.

    StreamTranslator(client_proto, backend_proto, *, model, include_usage=False, input_estimate=None,
                     sse=True)
        .feed(bytes) -> list[bytes]: upstream bytes (SSE or NDJSON, cut anywhere) in, complete
        client events out, one item per event. In passthrough mode (equal protocols) the input
        chunks come back unchanged and are only scanned for usage and the stop reason.
        .finish() -> list[bytes]: flush at the end of the upstream body; if the upstream ended
        before its terminal event, the client stream is ended with the protocol's error event.
        .error(message, type=) -> list[bytes]: end the client stream after a mid-stream failure.
        .usage, .stop_reason (Anthropic vocabulary), .started, .complete; .text_bytes: the bytes
        of text, thinking and tool arguments sent (None in passthrough).
        `input_estimate`: the input tokens an Anthropic client's `message_start` reports when the
        backend counts the input only at the end (OpenAI-compatible and Ollama servers), which
        `message_delta` then carries; `sse=False`: a Gemini stream as one JSON array.
    stream_converter(client_proto, backend_proto, *, model, body, input_estimate=None) -> StreamConverter
        A StreamTranslator as the proxy relays it: `feed(bytes) -> bytes`, `close() -> bytes`,
        `error(message) -> bytes`; Chat clients get usage when the request's
        `stream_options.include_usage` asks for it; a Gemini client gets SSE when its framed body's
        `alt` is `sse` (`protocol.gemini_request`), else one JSON array.
    stream_error(client_proto, message, *, type="api_error", model="") -> bytes
        The end of a passthrough stream that failed mid-way (the client has the upstream's own
        opening frames): the frames a translated stream ends with, from the same encoder.

The error frames, one spelling per protocol (the encoders' `error`): Anthropic `event: error` with
`{"type":"error","error":{"type","message"}}`; Chat a `data:` chunk `{"error":{"message","type",
"param","code"}}` (the OpenAI SDK raises on it); Responses `event: response.failed` with the response
`status: "failed"` and `error: {"code","message"}`, the terminal event the OpenAI Responses API sends
when a response fails. After a passthrough stream the failed response has Glider's own id and its
`sequence_number` starts again from 0: the upstream's frames are relayed unparsed.
"""

from __future__ import annotations

import re
from typing import Any

from glider_cli.errors import ConfigError
from glider_cli.protocol import anthropic, ir, ollama, openai_chat, openai_responses
from glider_cli.protocol.sse import NDJSONDecoder, SSEDecoder, SSEEvent, parse_block
from glider_cli.protocol.translate import CLIENT_PROTOCOLS, Encoder, canonical, check_pair, encoder_for

_ANTHROPIC_TAPPED = {b"message_start", b"message_delta", b"message_stop", b"error"}
_RESPONSES_TAPPED = {b"response.completed", b"response.incomplete", b"response.failed", b"error"}
_CHAT_USAGE = re.compile(rb'"usage":\s*\{')
_CHAT_NO_FINISH = re.compile(rb'"finish_reason":\s*null')


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
        self.client, self.backend = check_pair(client_proto, backend_proto)
        self.passthrough = self.client == self.backend
        self.model = model
        self.usage: ir.Usage | None = None
        self.stop_reason: str | None = None
        self.started = False
        self.complete = False
        # The upstream's own mid-stream error (Ollama's `{"error": ...}` line, an SSE error event).
        self.failure: str | None = None
        self._sse = SSEDecoder() if self.backend != "ollama" else None
        self._ndjson = NDJSONDecoder() if self.backend == "ollama" else None
        self._decoder: Any = {
            "anthropic": anthropic.StreamDecoder,
            "openai_chat": openai_chat.StreamDecoder,
            "ollama": ollama.StreamDecoder,
        }.get(self.backend, lambda: None)()
        self._encoder: Encoder = encoder_for(
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

    @property
    def text_bytes(self) -> int | None:
        """A translated stream's bytes of text, thinking and tool arguments sent to the client (what
        the output estimate is made from: the encoder's); None in passthrough (nothing is encoded)."""
        return None if self.passthrough else self._encoder.text_bytes

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
                self.failure = ev.message
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
            nl = block.find(b"\n")  # not `in`: on 3.11 bytes `in` first tries an int (~1k more)
            name = block[6:nl].strip() if nl >= 0 else block[6:].strip()
            if self.client == "anthropic" and name not in _ANTHROPIC_TAPPED:
                return
            if self.client == "openai_responses" and name not in _RESPONSES_TAPPED:
                return
        elif self.client == "openai_chat" and not (
            block.find(b"[DONE]") >= 0
            or block.find(b'"error"') >= 0
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
                    self.failure = item.message  # an error chunk, or a cut: [DONE] with no finish_reason


class StreamConverter:
    """A StreamTranslator as bytes: each call's events joined, ready for one write."""

    __slots__ = ("translator",)

    def __init__(self, translator: StreamTranslator) -> None:
        self.translator = translator

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(self.translator.feed(chunk))

    def close(self) -> bytes:
        return b"".join(self.translator.finish())

    def error(self, message: str) -> bytes:
        return b"".join(self.translator.error(message))

    @property
    def failure(self) -> str | None:
        """The upstream's own mid-stream error, once the stream carried one."""
        return self.translator.failure

    @property
    def text_bytes(self) -> int | None:
        return self.translator.text_bytes


def stream_converter(
    client_proto: str,
    backend_proto: str,
    *,
    model: str,
    body: dict[str, Any],
    input_estimate: int | None = None,
) -> StreamConverter:
    opts = body.get("stream_options")
    include_usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
    sse = body.get("alt") != "json"
    translator = StreamTranslator(
        client_proto,
        backend_proto,
        model=model,
        include_usage=include_usage,
        input_estimate=input_estimate,
        sse=sse,
    )
    return StreamConverter(translator)


def stream_error(client_proto: str, message: str, *, type: str = "api_error", model: str = "") -> bytes:
    client = canonical(client_proto)
    if client not in CLIENT_PROTOCOLS:
        raise ConfigError(f"{client_proto!r} is not a client protocol")
    encoder = encoder_for(client, model, False)
    encoder.assume_started()
    return b"".join(encoder.error(message, type=type))
