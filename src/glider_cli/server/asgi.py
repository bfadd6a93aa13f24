"""Raw-ASGI plumbing for the model endpoints: read the body, send a `Reply`, watch for disconnects.

The model endpoints are plain ASGI callables (no Request/Response objects, no task group per
stream): they are the hot path. Contract:
- `read_body` stops at `limit` bytes (RequestError 413), trusting neither Content-Length nor chunks.
- `Reply` (`proxy.reply`) is either whole (`body`, sent with Content-Length) or a stream (`stream`,
  sent chunk by chunk as it comes, with no Content-Length, so uvicorn frames it chunked and each SSE
  event is flushed as soon as it is produced); its `close`, when given, is awaited after the stream is closed,
  however sending ended (a generator that never started runs no `finally` of its own). A whole
  reply's `after` (bookkeeping: usage, outcome event, who answered) runs as soon as the reply was
  handed to the server (its bytes are with the transport), before `send_reply` returns, or at once
  when sending it failed: never on the client's wait, and always before the connection's next
  request is read. It is called, not scheduled: a loop pass of its own would cost a handle per
  reply.
- `ProxyEndpoint` runs the handler and cancels it when the client disconnects before the reply is
  complete (and with it the upstream request, whose response is closed in the relay's `finally`).
  A handler that raises anything else is logged (`uvicorn.error`, with the traceback) and answered
  with `on_error(500, ...)`, the client protocol's error shape. A stream is always closed
  (`aclose`), so its `finally` — where the outcome event is written — runs on completion, failure
  and disconnect. Called as an ASGI app, under any server, it sees a disconnect the ASGI way: a
  watcher task waits on `receive()` for `http.disconnect` while the handler runs and the reply is
  sent. `watched(scope, receive, send, watch)` serves a request that a `Watch` already watches (its
  connection under `glider serve`: `server.connections`), which cancels the task itself: no task
  is made, and the caller absorbs the cancellation (`server.app.GliderApp`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from starlette.types import Receive, Scope, Send

from glider_cli.errors import RequestError
from glider_cli.proxy import Reply

__all__ = ["ClientGone", "ProxyEndpoint", "Reply", "Watch", "read_body", "send_reply"]

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


class Watch(Protocol):
    """What watches one request for its client leaving: told when its body is in and when its reply
    is complete (a disconnect after that cancels nothing)."""

    def body_in(self) -> None: ...

    def replied(self) -> None: ...


class _Watch:
    """A request watched the ASGI way (`_watch`, a task waiting on `receive()`): whether its reply is
    complete (`replied()`) and whether its client left before (`left()`, which the watcher calls)."""

    __slots__ = ("disconnected", "done")

    def __init__(self) -> None:
        self.done = False
        self.disconnected = False

    def body_in(self) -> None:
        """The watcher starts once the body is in: nothing to do."""

    def replied(self) -> None:
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


async def send_reply(reply: Reply, send: Send, watch: Watch | None = None) -> None:
    if reply.stream is None:
        headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
        if watch is not None:
            watch.replied()
        try:
            await send({"type": "http.response.start", "status": reply.status, "headers": headers})
            await send({"type": "http.response.body", "body": reply.body})
        except BaseException:
            if reply.after is not None:
                reply.after()
            raise
        if reply.after is not None:
            # Now: the reply's bytes are with the transport (the client has its answer), and the
            # connection's next request is not read yet (this task has not returned to the server).
            reply.after()
        return
    stream = reply.stream
    try:
        await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
        async for chunk in stream:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if watch is not None:
            watch.replied()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await stream.aclose()
        if reply.close is not None:
            await reply.close()


Handler = Callable[[Scope, bytes], Awaitable[Reply]]


class ProxyEndpoint:
    """An ASGI app for one model endpoint: body -> `handler(scope, body)` -> Reply -> the client.
    `on_error(status, message)` is the protocol's error reply: for a RequestError while reading the
    body, and a 500 when the handler fails unexpectedly (logged with its traceback)."""

    def __init__(self, handler: Handler, limit: int, on_error: Callable[[int, str], Reply]) -> None:
        self.handler = handler
        self.limit = limit
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Under any ASGI server: a watcher task sees the client leave."""
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
            state.replied()
            watcher.cancel()

    async def watched(self, scope: Scope, receive: Receive, send: Send, watch: Watch) -> None:
        """Serve a request that `watch` (its connection: `server.connections`) already watches: it
        cancels this task when the client leaves, and its caller absorbs that cancellation."""
        try:
            body = await read_body(receive, scope, self.limit)
        except RequestError as exc:
            watch.body_in()
            await send_reply(self.on_error(exc.status, exc.message), send)
            return
        except ClientGone:
            return
        watch.body_in()
        try:
            reply = await self.handler(scope, body)
        except Exception:
            _log.exception("Glider failed on %s %s", scope["method"], scope["path"])
            reply = self.on_error(500, "Glider failed on this request; its log has the details")
        await send_reply(reply, send, watch)
