"""Raw-ASGI plumbing for the model endpoints: read the body, send a `Reply`, watch for disconnects.

The model endpoints are plain ASGI callables (no Request/Response objects, no task group per
stream): they are the hot path. Contract:
- `read_body` stops at `limit` bytes (RequestError 413), trusting neither Content-Length nor chunks.
- `Reply` (`proxy.reply`) is either whole (`body`, sent with Content-Length) or a stream (`stream`,
  sent chunk by chunk as it comes, with no Content-Length, so uvicorn frames it chunked and each SSE
  event is flushed as soon as it is produced); its `close`, when given, is awaited after the stream is closed,
  however sending ended (a generator that never started runs no `finally` of its own). A whole
  reply's `after` (bookkeeping: usage, outcome event,
  who answered) runs on the loop pass after the reply was handed to the server (so after its bytes
  were written), or at once when sending it failed: never on the client's wait, and always before
  the connection's next request is read.
- `HotPaths` sends `POST` on the model endpoints straight to their `ProxyEndpoint`, past Starlette's
  middleware and route matching (which still serve every other path and method).
- `ProxyEndpoint` runs the handler and cancels it when the client disconnects before the reply is
  complete (and with it the upstream request, whose response is closed in the relay's `finally`).
  A handler that raises anything else is logged (`uvicorn.error`, with the traceback) and answered
  with `on_error(500, ...)`, the client protocol's error shape.
  A disconnect is seen the ASGI way, under any server: a watcher task waits on `receive()` for
  `http.disconnect` while the handler runs and the reply is sent. A stream is always closed
  (`aclose`), so its `finally` — where the outcome event is written — runs on completion, failure
  and disconnect.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from glider_cli.errors import RequestError
from glider_cli.proxy import Reply

__all__ = ["ClientGone", "HotPaths", "ProxyEndpoint", "Reply", "read_body", "send_reply"]

_log = logging.getLogger("uvicorn.error")  # where uvicorn reports failures of the app it runs


class ClientGone(Exception):
    """The client disconnected before its request body was complete."""


async def read_body(receive: Receive, scope: Scope, limit: int) -> bytes:
    for k, v in scope["headers"]:
        if k == b"content-length" and v.isdigit() and int(v) > limit:
            raise RequestError(f"request body is larger than {limit} bytes", status=413)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise RequestError(f"request body is larger than {limit} bytes", status=413)
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class _Watch:
    """Whether one request's reply is complete (`complete()`) and whether its client left before
    (`left()`, which the watcher calls)."""

    __slots__ = ("disconnected", "done")

    def __init__(self) -> None:
        self.done = False
        self.disconnected = False

    def complete(self) -> None:
        self.done = True

    def left(self) -> bool:
        """The client disconnected: True when that was before the reply was complete."""
        if self.done:
            return False
        self.disconnected = True
        return True


async def _watch(receive: Receive, task: asyncio.Task[None], state: _Watch) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if state.left():
                task.cancel()
            return


async def send_reply(reply: Reply, send: Send, state: _Watch | None = None) -> None:
    if reply.stream is None:
        headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
        if state is not None:
            state.complete()
        try:
            await send({"type": "http.response.start", "status": reply.status, "headers": headers})
            await send({"type": "http.response.body", "body": reply.body})
        except BaseException:
            if reply.after is not None:
                reply.after()
            raise
        if reply.after is not None:
            # Next loop pass: the reply's bytes are with the transport, and the connection's next
            # request is not read yet.
            asyncio.get_running_loop().call_soon(reply.after)
        return
    stream = reply.stream
    try:
        await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
        async for chunk in stream:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if state is not None:
            state.complete()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await stream.aclose()
        if reply.close is not None:
            await reply.close()


Handler = Callable[[Scope, bytes], Awaitable[Reply]]


class HotPaths:
    """Pure ASGI: `POST` on a path in `endpoints` goes straight to its endpoint, the rest to `app`."""

    def __init__(self, app: ASGIApp, *, endpoints: Mapping[str, ASGIApp]) -> None:
        self.app = app
        self.endpoints = dict(endpoints)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            endpoint = self.endpoints.get(scope["path"])
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ProxyEndpoint:
    """An ASGI app for one model endpoint: body -> `handler(scope, body)` -> Reply -> the client.
    `on_error(status, message)` is the protocol's error reply: for a RequestError while reading the
    body, and a 500 when the handler fails unexpectedly (logged with its traceback)."""

    def __init__(self, handler: Handler, limit: int, on_error: Callable[[int, str], Reply]) -> None:
        self.handler = handler
        self.limit = limit
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await read_body(receive, scope, self.limit)
        except RequestError as exc:
            await send_reply(self.on_error(exc.status, exc.message), send)
            return
        except ClientGone:
            return
        task = asyncio.current_task()
        assert task is not None
        state = _Watch()
        watcher = asyncio.create_task(_watch(receive, task, state))
        try:
            try:
                reply = await self.handler(scope, body)
            except Exception:
                _log.exception("Glider failed on %s %s", scope["method"], scope["path"])
                reply = self.on_error(500, "Glider failed on this request; its log has the details")
            await send_reply(reply, send, state)
        except asyncio.CancelledError:
            if not state.disconnected:
                raise
            # The client left: the handler (and the upstream request) was cancelled, nothing to send.
            task.uncancel()
        finally:
            state.complete()
            watcher.cancel()
