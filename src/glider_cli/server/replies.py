"""Error replies in the client's own protocol: whole bodies (shaped by `protocol.errors`) and the
terminator for a stream that already started.

Contract:
- `error_body(protocol, status, message)` is `protocol.errors.error_body` as bytes: the status is kept
  as given, because clients pick their retry behaviour from it (Claude Code strips features on 400).
- `stream_error(protocol, message)` ends an SSE stream that already started, well-formed:
  Anthropic `event: error`; Chat a `data:` chunk carrying `error` (the OpenAI SDK raises on it);
  Responses an `event: error` whose data has both the Responses fields and an `error` object; Gemini
  a `data:` event carrying Google's `error` object.
"""

from __future__ import annotations

import orjson

from glider_cli.protocol import errors as perrors


def error_body(protocol: str, status: int, message: str, kind: str | None = None) -> bytes:
    return orjson.dumps(perrors.error_body(protocol, status, message, type=kind))


def stream_error(protocol: str, message: str, kind: str | None = None) -> bytes:
    if protocol == "anthropic":
        t = kind or "api_error"
        data = orjson.dumps({"type": "error", "error": {"type": t, "message": message}})
        return b"event: error\ndata: " + data + b"\n\n"
    if protocol == "gemini":
        return b"data: " + orjson.dumps(perrors.error_body(protocol, 500, message)) + b"\n\n"
    t = kind or "server_error"
    err = {"message": message, "type": t, "param": None, "code": t}
    if protocol == "openai_responses":
        payload = orjson.dumps({"type": "error", "code": t, "message": message, "param": None, "error": err})
        return b"event: error\ndata: " + payload + b"\n\n"
    return b"data: " + orjson.dumps({"error": err}) + b"\n\n"


def upstream_message(body: bytes, fallback: str) -> str:
    """The human message inside an upstream error body of any protocol, else `fallback`."""
    message, _ = perrors.upstream_message(body)
    return message if body else fallback
