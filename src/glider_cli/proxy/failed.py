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
- `no_retry(attempts, stopped)`: why a retry cannot help, when it cannot: the last attempt was
  Glider's own failure (no upstream answer) to reach a DNS name that does not resolve, a refused
  connection on this machine (nothing listens there), or the chain ended by `fallback: none`
  (`stopped`). Then (`all_failed(..., rule=, no_retry=)`) the message says it is Glider speaking and
  names the rule, the backend and why, and the reply carries the protocol's do-not-retry signal
  (`do_not_retry`): `x-should-retry: false` (the Anthropic and OpenAI SDKs and Claude Code obey it)
  and, for Gemini and Responses clients (Gemini CLI and Codex retry every 5xx, whatever the
  headers say), a 400 instead of the 5xx.
- `note` (`all_failed(..., note=)`): what Glider adds, such as why the chain stopped short of the
  cloud (`proxy.held_local`); the message is then Glider's, naming the rule and the backend, with
  the note at its end, whatever the upstream answered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import orjson

from glider_cli.backends.probe import describe_error, is_loopback
from glider_cli.errors import BackendError, BackendOpen, BackendTimeout, UpstreamStatus
from glider_cli.protocol.error_bodies import error_body, upstream_message
from glider_cli.proxy.calls import JSON_HEADERS, Call
from glider_cli.proxy.reply import Reply

__all__ = ["KEPT_HEADERS", "all_failed", "cause", "do_not_retry", "kept_headers", "no_retry"]

# Clients whose own retry loop retries every 5xx whatever the headers say: Gemini CLI (its
# isRetryableError) and Codex, the Responses client (it ignores x-should-retry).
_RETRY_EVERY_5XX = frozenset({"gemini", "openai_responses"})
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


def no_retry(attempts: Sequence[tuple[Call, BackendError]], stopped: str | None) -> str | None:
    """Why retrying the request cannot help (see the module contract), or None."""
    call, last = attempts[-1]
    if isinstance(last, UpstreamStatus):
        return None
    why = cause(last)
    if why == "DNS name not resolved":
        return f"{call.backend.name}'s host name does not resolve"
    if why == "connection refused" and is_loopback(call.backend.base_url):
        return f"nothing listens at {call.backend.base_url} on this machine"
    return stopped


def do_not_retry(protocol: str, status: int) -> tuple[int, list[tuple[bytes, bytes]]]:
    """The status and headers that tell a client of `protocol` not to retry a Glider error."""
    if protocol in _RETRY_EVERY_5XX and status >= 500:
        status = 400
    return status, [(b"x-should-retry", b"false")]


def all_failed(
    protocol: str,
    attempts: Sequence[tuple[Call, BackendError]],
    route: str,
    *,
    rule: str | None = None,
    no_retry: str | None = None,
    note: str | None = None,
) -> Reply:
    call, last = attempts[-1]
    headers = [*JSON_HEADERS, (b"x-glider-route", route.encode("latin-1"))]
    if isinstance(last, UpstreamStatus):
        status = last.status
        headers += kept_headers(last.headers)
        if len(attempts) == 1 and call.passthrough and _is_json(last.body) and note is None:
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
    if no_retry is not None or note is not None:
        named = f"rule {rule}, " if rule else ""
        message = (
            f"Glider (the router, not the model provider): {message} ({named}backend {call.backend.name})"
        )
        if no_retry is not None:
            message += f"; not worth retrying: {no_retry}"
            status, extra = do_not_retry(protocol, status)
            headers += extra
        if note is not None:
            message += f"; {note}"
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
