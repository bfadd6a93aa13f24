"""The reply a client gets when every attempt failed, and the headers a retrying client needs.

Contract of `all_failed(protocol, attempts, route)`:
- `attempts` are the (call, error) pairs in the order tried. The status is the last attempt's: the
  upstream's own for an error answer, 504 for a timeout, 502 for a connection that failed, 503 with
  `retry-after` (the seconds left of its cool-down) for a backend skipped by its open breaker.
- One attempt that was an error answer from a backend speaking the client's protocol is relayed as
  the upstream wrote it: its body (the upstream's own error `type` and `code`, e.g. OpenAI's
  `insufficient_quota`) and the headers clients act on (`retry-after`, `x-should-retry`,
  `anthropic-ratelimit-*`, `x-ratelimit-*`, `request-id`, `x-request-id`).
- Otherwise the body is Glider's, in the client's protocol: the message names every backend tried
  and its real cause ("ollama: connection refused; origin: answered 529: Overloaded"), with the
  last upstream's error type kept when its protocol family is the client's, and the same headers
  from the last error answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import orjson

from glider_cli.backends.probe import describe_error
from glider_cli.errors import BackendError, BackendOpen, BackendTimeout, UpstreamStatus
from glider_cli.protocol.errors import error_body, upstream_message
from glider_cli.proxy.calls import JSON_HEADERS, Call
from glider_cli.proxy.reply import Reply

__all__ = ["KEPT_HEADERS", "all_failed", "cause", "kept_headers"]

KEPT_HEADERS = (b"retry-after", b"x-should-retry", b"request-id", b"x-request-id")
_KEPT_PREFIXES = (b"anthropic-ratelimit-", b"x-ratelimit-")


def kept_headers(raw: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    out = []
    for k, v in raw:
        name = k.lower()
        if name in KEPT_HEADERS or name.startswith(_KEPT_PREFIXES):
            out.append((name, v))
    return out


def cause(exc: BackendError) -> str:
    """What went wrong with one attempt, in a few words."""
    if isinstance(exc, UpstreamStatus):
        message, _ = upstream_message(exc.body) if exc.body else (exc.message, None)
        return f"answered {exc.status}: {message}" if exc.body else f"answered {exc.status}"
    if isinstance(exc, BackendTimeout):
        return "timeout"
    return describe_error(exc)


def all_failed(protocol: str, attempts: Sequence[tuple[Call, BackendError]], route: str) -> Reply:
    call, last = attempts[-1]
    headers = [*JSON_HEADERS, (b"x-glider-route", route.encode("latin-1"))]
    if isinstance(last, UpstreamStatus):
        status = last.status
        headers += kept_headers(last.headers)
        if len(attempts) == 1 and call.passthrough and _is_json(last.body):
            return Reply(status, headers, last.body)
        message, kind = upstream_message(last.body) if last.body else (last.message, None)
        same_family = (protocol == "anthropic") == (call.backend.wire in ("anthropic", "client"))
    else:
        status = 504 if isinstance(last, BackendTimeout) else 503 if isinstance(last, BackendOpen) else 502
        message, kind, same_family = last.message, None, False
        if isinstance(last, BackendOpen):  # when its breaker lets a request try it again
            headers.append((b"retry-after", str(max(1, math.ceil(last.retry_after))).encode()))
    if len(attempts) > 1:
        message = "every backend failed: " + "; ".join(f"{c.backend.name}: {cause(e)}" for c, e in attempts)
    body = error_body(protocol, status, message, type=kind if same_family else None)
    if isinstance(last, UpstreamStatus) and same_family and protocol != "anthropic":
        code = _upstream_code(last.body)
        if code and isinstance(body.get("error"), dict):
            body["error"]["code"] = code
    return Reply(status, headers, orjson.dumps(body))


def _is_json(body: bytes) -> bool:
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return bool(body)


def _upstream_code(body: bytes) -> str | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    err = data.get("error") if isinstance(data, dict) else None
    code = err.get("code") if isinstance(err, dict) else None
    return str(code) if code else None
