"""The ASGI side of `server.connections`: each request's connection told when its head is in and when
its answer is done, the per-client cap's 503, and the body deadline's 408.

Contract:
- `Deadlines(app, limits)` is the app's outermost layer (`create_app`) for every request but a
  model call, which `server.app.GliderApp` serves under the same limits in a frame of its own
  (`refuse_over_cap`, `answer_late`, and the connection's `watch`). For each HTTP request it
  finds the connection it came on (`limits.connections[scope["client"]]`) and tells it `begin()`
  before the app runs and `end()` after, so the head deadline is off while it is served. Under a
  server that was not given `limits.protocol_class()` there is no such connection and no limit.
- A connection over `server.max_connections_per_client` or `server.max_connections` (nothing idle
  could be shed to make room for it: `server.connections`) is answered 503 with `Retry-After: 1` and
  `connection: close` (uvicorn closes it after the reply), the message naming the key; the app
  never sees the request.
- Body deadline: a request that declares a body (a `content-length` other than 0, or a
  `transfer-encoding`) must have all of it in within `server.body_timeout` seconds of its head. At
  the deadline (the connection's watchdog, `connections.Body`) the app's pending `receive()`
  returns `http.disconnect`, so nothing acts on a partial body (no handler runs, nothing is sent
  upstream); what the app answers to that disconnect, reply or exception, is dropped, and the client
  gets 408 with `connection: close` (counted). A reply the app had started before the deadline is
  left to the app. No timer is made per request.
- The 503 and the 408 are JSON in the error shape of the path's protocol (`protocol.guess.
  error_protocol`, as every refusal of `server.security` is): Anthropic for `…/messages`, Gemini
  for `…:generateContent`, OpenAI for the rest (Chat Completions and Responses share it).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from glider_cli.protocol.error_bodies import error_bytes
from glider_cli.protocol.guess import error_protocol
from glider_cli.server.connections import Body, Connection, ConnectionLimits


def _declares_body(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"content-length":
            return value.strip() != b"0"
        if name == b"transfer-encoding":
            return True
    return False


async def _answer(send: Send, path: str, status: int, message: str, *, retry_after: bool = False) -> None:
    body = error_bytes(error_protocol(path), status, message)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    if retry_after:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Deadlines:
    """Pure ASGI middleware (it sits on the hot path: no Request objects, no timer, one dict lookup)."""

    def __init__(self, app: ASGIApp, limits: ConnectionLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client") if scope["type"] == "http" else None
        conn = self.limits.connections.get((client[0], client[1])) if client else None
        if conn is None:
            await self.app(scope, receive, send)
            return
        if conn.over_cap:
            await self.refuse_over_cap(conn, scope, send)
            return
        started = conn.begin()
        try:
            if _declares_body(scope["headers"]):
                await self._with_body(conn, started, scope, receive, send)
            else:
                await self.app(scope, receive, send)
        finally:
            conn.end()

    async def refuse_over_cap(self, conn: Connection, scope: Scope, send: Send) -> None:
        """The 503 of a connection over a cap (`conn.over_cap`)."""
        await _answer(send, scope["path"], 503, self._over_cap(conn.over_cap), retry_after=True)

    async def answer_late(self, scope: Scope, send: Send) -> None:
        """The 408 of a request whose body did not arrive in time (counted)."""
        self.limits.body_timed_out()
        timeout = self.limits.body_timeout
        message = f"the request body did not arrive within {timeout:g} seconds (server.body_timeout)"
        await _answer(send, scope["path"], 408, message)

    def _over_cap(self, key: str) -> str:
        if key == "server.max_connections":
            who, cap = "Glider has", self.limits.max_connections
        else:
            who, cap = "this client has", self.limits.max_per_client
        return (
            f"{who} too many connections open, all of them busy (more than {cap}: {key}); "
            "retry when one has closed"
        )

    async def _with_body(
        self, conn: Connection, started: float, scope: Scope, receive: Receive, send: Send
    ) -> None:
        body = Body(receive, send, started + self.limits.body_timeout)
        conn.awaits(body)
        try:
            await self.app(scope, body.receive, body.send)
        except Exception:
            if not body.expired:
                raise
            # The app failed on the disconnect that stood for the deadline (Starlette's
            # ClientDisconnect): the client is answered below.
        if body.expired and not body.started:
            await self.answer_late(scope, send)
