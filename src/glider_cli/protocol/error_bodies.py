"""Protocol-shaped error bodies, and upstream errors re-shaped for the client's protocol.

Shapes (what the official SDKs and Claude Code/Codex parse):
    anthropic                        {"type": "error", "error": {"type": T, "message": M}}
    openai_chat / openai_responses   {"error": {"message": M, "type": T, "param": null, "code": T}}
    ollama                           {"error": M}
    gemini                           {"error": {"code": S, "message": M, "status": "INVALID_ARGUMENT"...}}

`anthropic_error` and `openai_error` are the two shapes; the stream encoders write the same objects
as the data of their error frames (Anthropic `event: error`, a Chat `data:` chunk), so each is spelled
here once. A Responses stream ends with `response.failed` instead (`openai_responses.StreamEncoder`).
Error types: the encoders' default is Anthropic's generic `api_error`; `openai_kind` says it in
OpenAI's words (`server_error`).

The status is kept as given (clients decide to retry from it: 408/409/429/5xx are retried, 400 is
"drop a feature and retry" for Claude Code), so never invent a 400. `error_bytes` is `error_body`
encoded; `upstream_text(body, fallback)` is the message an upstream error body carries, `fallback`
when the body is empty.
"""

from __future__ import annotations

from typing import Any

import orjson

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "invalid_request_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout",
    409: "conflict",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}


def anthropic_type(status: int) -> str:
    return _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def openai_type(status: int) -> str:
    return _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def openai_kind(kind: str) -> str:
    return "server_error" if kind == "api_error" else kind


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def error_body(client_proto: str, status: int, message: str, *, type: str | None = None) -> dict[str, Any]:
    if client_proto == "anthropic":
        return anthropic_error(message, type or anthropic_type(status))
    if client_proto == "ollama":
        return {"error": message}
    if client_proto == "gemini":
        from glider_cli.protocol.gemini import error_json

        return error_json(status, message)
    return openai_error(message, type or openai_type(status))


def error_bytes(client_proto: str, status: int, message: str, *, type: str | None = None) -> bytes:
    return orjson.dumps(error_body(client_proto, status, message, type=type))


def error_response(
    client_proto: str, status: int, message: str, *, type: str | None = None
) -> tuple[int, dict[str, Any]]:
    """The (status, JSON body) to answer a client of `client_proto` with."""
    return status, error_body(client_proto, status, message, type=type)


def upstream_message(body: bytes) -> tuple[str, str | None]:
    """The message and type an upstream error body carries, whatever its protocol."""
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            kind = err.get("type")
            return (str(message) if message else orjson.dumps(err).decode(), str(kind) if kind else None)
        if isinstance(err, str):
            return err, None
        if isinstance(data.get("message"), str):
            return data["message"], None
    text = body.decode("utf-8", errors="replace").strip()
    return (text[:2000] or "upstream error", None)


def upstream_text(body: bytes, fallback: str) -> str:
    return upstream_message(body)[0] if body else fallback


def translate_error(client_proto: str, backend_proto: str, status: int, body: bytes) -> tuple[int, bytes]:
    """An upstream error answer made fit for the client: unchanged when the protocols match,
    otherwise the upstream's message in the client's shape, with the same status."""
    if client_proto == backend_proto:
        try:
            orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            return status, body
    message, kind = upstream_message(body)
    same_family = (client_proto == "anthropic") == (backend_proto == "anthropic")
    return status, orjson.dumps(error_body(client_proto, status, message, type=kind if same_family else None))
