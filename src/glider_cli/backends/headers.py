"""Which headers cross the proxy, in each direction. Pure functions over (name, value) pairs.

Contract:
- Hop-by-hop headers (RFC 9110 §7.6.1 plus `host` and `content-length`, which the client library
  recomputes) never cross. `accept-encoding` is replaced by `identity`: upstreams answer
  uncompressed, so the proxy can read usage from the bytes and clients that advertise br/zstd are
  never sent an encoding they did not get from us.
- Same-protocol passthrough keeps every other client header verbatim (`anthropic-version`, the whole
  `anthropic-beta` list, `x-stainless-*`, `x-claude-code-*`, `originator`, `x-codex-*` ...).
- Auth: `origin` keeps the client's own auth headers untouched; every other backend has the client's
  auth removed and its own key (from `api_key_env`) added, so a client key never leaks to a third party.
- A translated request (client protocol differs from the backend's) carries only content headers,
  the user agent, the backend's configured headers and its auth.
- Responses lose hop-by-hop headers, `content-length` and `content-encoding` (the body is re-framed
  and already decoded), and `date`/`server` (Glider's server sets its own).
"""

from __future__ import annotations

from collections.abc import Iterable

from glider_cli.backends.registry import Backend

HOP_BY_HOP: frozenset[str] = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "expect",
    }
)
AUTH_HEADERS: frozenset[str] = frozenset({"x-api-key", "authorization", "x-goog-api-key"})
ANTHROPIC_VERSION = "2023-06-01"
_TRANSLATED_KEEP: frozenset[str] = frozenset({"user-agent", "accept"})
# Never sent as received: hop-by-hop headers (dropped) and auth (kept for origin only).
_NOT_AS_IS: frozenset[str] = HOP_BY_HOP | AUTH_HEADERS
# `date`/`server` are the ASGI server's to set; forwarding them would duplicate them.
_RESPONSE_DROP: frozenset[str] = HOP_BY_HOP | {"content-encoding", "date", "server"}


def upstream_headers(
    client: Iterable[tuple[str, str]], backend: Backend, *, passthrough: bool, lowered: bool = False
) -> dict[str, str]:
    """The headers to send upstream for a request that arrived with `client` headers (`lowered`:
    their names are lower-case already)."""
    out: dict[str, str] = {}
    keep_auth = backend.kind == "origin"
    for name, value in client:
        k = name if lowered else name.lower()
        if k in _NOT_AS_IS:
            if keep_auth and k in AUTH_HEADERS:
                out[k] = value
            continue
        if passthrough or k in _TRANSLATED_KEEP:
            # Repeated headers are joined per RFC 9110 §5.3.
            out[k] = f"{out[k]}, {value}" if k in out else value
    out["content-type"] = "application/json"
    out["accept-encoding"] = "identity"
    if backend.wire == "anthropic" and "anthropic-version" not in out:
        # A translated request still needs the version header the Messages API requires.
        out["anthropic-version"] = ANTHROPIC_VERSION
    out.update(backend.own_headers)  # its configured headers, then its key
    return out


_RESPONSE_DROP_RAW: frozenset[bytes] = frozenset(k.encode() for k in _RESPONSE_DROP)


def response_headers(upstream: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The upstream response headers a client may see, as received (bytes), names lowercased (as ASGI
    sends them)."""
    out = []
    for k, v in upstream:
        name = k.lower()
        if name not in _RESPONSE_DROP_RAW:
            out.append((name, v))
    return out
