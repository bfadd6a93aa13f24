"""Secure-by-default gate in front of every route: a Host check and the `/api/*` token.

Contract:
- DNS rebinding: a request whose `Host` (port stripped) is not the bound address, a loopback name
  (`localhost`, `127.0.0.1`, `::1`, `*.localhost`) or one of `server.allowed_hosts` gets 403 before any
  route runs. `allowed_hosts: ["*"]` turns the check off (only sensible behind another gate).
- `GLIDER_TOKEN`: when set, every `/api/*` route and `/mcp` require it as `Authorization: Bearer <token>`,
  `x-glider-token: <token>` or the dashboard's cookie `token_cookie(port)` (constant-time compare),
  else 401. The cookie is set by `/ui/?token=…` (`server.ui.routes`): HttpOnly, SameSite=Strict,
  named by the server's port because cookies are shared by every port of a host. `/api/hello` is
  exempt: Claude Code warms its connection with `HEAD /api/hello` and must not be refused. The model
  endpoints (`/v1/*`) are not gated by the token: they carry the client's own provider credentials.
- Cross-site calls: a state-changing method (anything but GET, HEAD, OPTIONS) on `/api/*` from a
  browser must come from the page's own origin (`same_origin`: its `Origin` is `http://<Host>`, or
  with no Origin its `Sec-Fetch-Site` is same-origin or none), else 403, token or not. A client that
  sends neither header is not a browser (curl, the SDKs, the CLI) and is not refused for it.
- Any web page can reach 127.0.0.1, so on every endpoint, the model API included (a page's `fetch`
  or form would otherwise spend the user's cloud credits through `api_key_env`): a request that
  carries an `Origin` other than Glider's own (`http://<Host>`) is refused (403), and so is a
  state-changing one whose `Sec-Fetch-Site` is `cross-site` or `same-site`; a body sent with one of
  the content types a browser may send cross-site without a preflight (`text/plain`,
  `application/x-www-form-urlencoded`, `multipart/form-data`) is refused (415) — every endpoint that
  takes a body takes JSON. A preflight (`OPTIONS`) gets no CORS headers, so a browser never sends
  the real request. Agent CLIs and SDKs send no `Origin` and send `application/json`: unaffected.
- The token value is held in memory only; nothing here logs headers.
- Refusals are JSON in the caller's protocol shape (`protocol.error_bodies`), chosen from the path.
"""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from glider_cli.protocol.error_bodies import error_bytes
from glider_cli.protocol.guess import error_protocol

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "ip6-localhost"})
_TOKEN_EXEMPT = frozenset({"/api/hello"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The content types a browser sends cross-site without asking first (a CORS "simple" request).
_SIMPLE_TYPES = frozenset({b"text/plain", b"application/x-www-form-urlencoded", b"multipart/form-data"})
_CROSS_SITE = (403, "permission_error", "cross-site request refused")

# Why a request is refused: its status, the error's type, the message.
Refusal = tuple[int, str, str]


def token_cookie(port: int | None) -> str:
    """The dashboard's token cookie for the server listening on `port`."""
    return f"glider_token_{port}" if port else "glider_token"


def cookie_value(header: bytes, name: bytes) -> bytes | None:
    for part in header.split(b";"):
        k, sep, v = part.strip().partition(b"=")
        if sep and k == name:
            return v.strip()
    return None


def same_origin(origin: bytes | None, fetch_site: bytes | None, host: bytes | None) -> bool:
    """True unless a browser says the call comes from another origin (see the contract)."""
    if origin is not None:
        if host is None:
            return False
        o = origin.decode("latin-1").strip().lower()
        h = host.decode("latin-1").strip().lower()
        return o in (f"http://{h}", f"https://{h}") or (h.endswith(":80") and o == f"http://{h[:-3]}")
    if fetch_site is not None:
        return fetch_site.strip().lower() in (b"same-origin", b"none")
    return True


def host_name(host_header: str) -> str:
    """`Host` value -> lower-case name without port (`[::1]:8787` -> `::1`)."""
    h = host_header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return h[1:end] if end > 0 else h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def allowed_host_names(bound_host: str, allowed_hosts: tuple[str, ...]) -> frozenset[str]:
    names = set(_LOOPBACK)
    bound = host_name(bound_host) if bound_host else ""
    if bound and bound not in ("0.0.0.0", "::"):
        names.add(bound)
    names.update(host_name(h) for h in allowed_hosts)
    return frozenset(names)


def host_allowed(host_header: str | None, allowed: frozenset[str]) -> bool:
    if "*" in allowed:
        return True
    if not host_header:
        return False
    name = host_name(host_header)
    return name in allowed or name.endswith(".localhost")


def error_shape(path: str, status: int, kind: str, message: str) -> bytes:
    """An error body in the shape the client speaking on `path` expects (`protocol.error_bodies`)."""
    return error_bytes(error_protocol(path), status, message, type=kind)


class SecurityMiddleware:
    """Pure ASGI middleware (no per-request Request objects: it sits on the hot path). `refusal` is
    its verdict on a request and `refuse` its answer, which `server.app.GliderApp` applies to a model
    call itself."""

    def __init__(
        self, app: ASGIApp, *, bound_host: str, allowed_hosts: tuple[str, ...], token: str | None
    ) -> None:
        self.app = app
        self.allowed = allowed_host_names(bound_host, allowed_hosts)
        self.token = token.encode() if token else None
        # Verdicts by the exact Host bytes: a client sends the same Host on every request.
        self._verdicts: dict[bytes | None, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await self.refuse(scope, send, refusal)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> Refusal | None:
        """Why an HTTP or WebSocket request is refused (status, error type, message); None: it may pass."""
        # ASGI gives the names lowercased; a name sent twice keeps its last value, except the
        # cookies, which are joined (one dict built in C: a model call reads four names of ~15).
        headers = scope["headers"]
        found: dict[bytes, bytes] = dict(headers)
        get = found.get
        host = get(b"host")
        ok = self._verdicts.get(host)
        if ok is None:
            ok = host_allowed(None if host is None else host.decode("latin-1"), self.allowed)
            if len(self._verdicts) < 64:
                self._verdicts[host] = ok
        if not ok:
            shown = None if host is None else host.decode("latin-1")
            return (403, "permission_error", f"host {shown!r} is not allowed")
        origin = get(b"origin")
        unsafe = scope["type"] == "http" and scope.get("method", "GET") not in _SAFE_METHODS
        if origin is not None:
            # A state-changing call from a browser is same-origin exactly when its Origin is.
            if not same_origin(origin, None, host):
                return _CROSS_SITE
        elif unsafe:
            fetch_site = get(b"sec-fetch-site")
            if fetch_site is not None and not same_origin(None, fetch_site, host):
                return _CROSS_SITE
        if unsafe:
            ctype = get(b"content-type")
            if ctype is not None and ctype.split(b";")[0].strip().lower() in _SIMPLE_TYPES:
                return (415, "invalid_request_error", "request bodies must be application/json")
        if self.token is None:
            return None
        path: str = scope["path"]
        # `/mcp` (the MCP server, `server.mcp_http`) is gated as the API is.
        if not (path.startswith(("/api/", "/mcp/")) or path == "/mcp") or path in _TOKEN_EXEMPT:
            return None
        given = get(b"x-glider-token")
        auth = get(b"authorization")
        if given is None and auth is not None and auth[:7].lower() == b"bearer ":
            given = auth[7:].strip()
        cookie = get(b"cookie")
        if given is None and cookie is not None:
            if len(found) < len(headers):
                cookie = b"; ".join([v for k, v in headers if k == b"cookie"])
            server = scope.get("server")
            name = token_cookie(server[1] if server else None).encode()
            given = cookie_value(cookie, name)
        if given is None or not hmac.compare_digest(given, self.token):
            return (401, "authentication_error", "GLIDER_TOKEN required")
        return None

    async def refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        """Answer `refusal` (a WebSocket is closed with 1008)."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        status, kind, message = refusal
        body = error_shape(scope["path"], status, kind, message)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
