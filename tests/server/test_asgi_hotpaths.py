"""server.app and server.asgi: a model call's dispatch and its connection's watch, a whole Reply's
`after` hook, disconnects and closing a stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from glider_cli.config.settings import ServerSettings
from glider_cli.server.app import GliderApp
from glider_cli.server.asgi import Reply, send_reply
from glider_cli.server.connections import ConnectionLimits
from glider_cli.server.deadlines import Deadlines
from glider_cli.server.inner import Inner, State
from glider_cli.server.security import SecurityMiddleware


def _scope(method: str, path: str, root_path: str = "", host: bytes = b"127.0.0.1:8787") -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": root_path,
        "headers": [(b"host", host), (b"content-type", b"application/json")],
    }


async def _noop_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


async def _noop_send(message: Any) -> None:
    return None


def _glider_app(
    app: Any, endpoints: dict[str, Any], settings: ServerSettings | None = None
) -> tuple[GliderApp, ConnectionLimits]:
    """A `GliderApp` over `app` (standing for the Starlette app) and `endpoints`, as `create_app`
    composes one, and its connection limits."""
    inner = Inner(lambda: app, _no_lifespan, State())
    gate = SecurityMiddleware(inner, bound_host="127.0.0.1", allowed_hosts=(), token=None)
    limits = ConnectionLimits(settings or ServerSettings())
    return GliderApp(inner, endpoints=endpoints, gate=gate, deadlines=Deadlines(gate, limits)), limits


@contextlib.asynccontextmanager
async def _no_lifespan(app: Any) -> AsyncIterator[None]:
    yield


def test_post_on_a_model_endpoint_goes_to_it_under_the_gate_and_the_rest_to_the_app() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(f"app {scope.get('method', scope['type'])} {scope.get('path', '')}".strip())

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        seen.append(f"endpoint {scope['path']}")

    glider, _ = _glider_app(app, {"/v1/messages": endpoint})
    refused: list[Any] = []

    async def send(message: Any) -> None:
        refused.append(message)

    async def run() -> None:
        for scope in (
            _scope("POST", "/v1/messages"),
            _scope("GET", "/v1/messages"),
            _scope("POST", "/v1/messages/"),
            _scope("POST", "/v1/messages", root_path="/proxy"),
        ):
            await glider(scope, _noop_receive, _noop_send)
        # The gate's checks hold on a model call as on every other request.
        await glider(_scope("POST", "/v1/messages", host=b"evil.example"), _noop_receive, send)

    asyncio.run(run())
    assert seen == [
        "endpoint /v1/messages",
        "app GET /v1/messages",
        "app POST /v1/messages/",
        "app POST /v1/messages",
    ]
    assert refused[0]["status"] == 403


class _Transport(asyncio.Transport):
    """A connected transport of the peer 127.0.0.1:50000 that never writes."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


def _slow_handler(events: list[str]) -> Any:
    """A handler that takes 30 s to answer, saying in `events` that it ran and when it is cancelled."""

    async def handler(scope: Any, body: bytes) -> Reply:
        events.append(f"handler {body.decode()}")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return Reply(200, body=b"late")

    return handler


def test_a_model_call_is_watched_by_its_connection() -> None:
    """Under the connection limits' protocol, the connection, not a task of the request's own, sees
    the client leave: the handler is cancelled, nothing is sent, the call returns normally. A body
    that is not in by `server.body_timeout` gets the 408 (counted) and the handler never runs."""
    from glider_cli.server.asgi import ProxyEndpoint

    events: list[str] = []

    handler = _slow_handler(events)

    endpoint = ProxyEndpoint(handler, 1024, lambda status, message: Reply(400))
    glider, limits = _glider_app(None, {"/v1/messages": endpoint}, ServerSettings(body_timeout=0.1))

    async def run() -> tuple[list[Any], list[Any], int]:
        scope = {**_scope("POST", "/v1/messages"), "client": ("127.0.0.1", 50000)}
        conn = limits.opened(_Transport())
        assert conn is not None
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        messages = [{"type": "http.request", "body": b"hi", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        task = asyncio.create_task(glider(scope, receive, send))
        await asyncio.sleep(0.05)
        assert events == ["handler hi"]
        limits.closed(conn)  # the connection is lost (`Guarded.connection_lost`)
        await asyncio.wait({task}, timeout=5)
        assert task.done() and not task.cancelled()  # returns normally: the cancellation was absorbed
        assert task.result() is None

        # A body that never comes: the 408.
        conn = limits.opened(_Transport())
        assert conn is not None
        late: list[Any] = []

        async def late_send(message: Any) -> None:
            late.append(message)

        task = asyncio.create_task(glider(scope, receive, late_send))
        await asyncio.wait({task}, timeout=3)
        assert task.done() and task.result() is None
        limits.closed(conn)
        return sent, late, limits.body_timeouts

    sent, late, timeouts = asyncio.run(run())
    assert events == ["handler hi", "cancelled"]
    assert sent == []
    assert late[0]["status"] == 408 and timeouts == 1


def test_after_runs_once_the_reply_is_sent_and_at_once_when_sending_fails() -> None:
    order: list[str] = []

    async def send(message: Any) -> None:
        order.append(message["type"])

    async def go() -> None:
        reply = Reply(
            200, [(b"content-type", b"application/json")], b"{}", after=lambda: order.append("after")
        )
        await send_reply(reply, send)
        order.append("returned")
        await asyncio.sleep(0)

    asyncio.run(go())
    # Once the body is with the server, before `send_reply` returns to the server (which reads the
    # connection's next request only then): no loop pass of its own.
    assert order == ["http.response.start", "http.response.body", "after", "returned"]

    async def broken(message: Any) -> None:
        raise OSError("client went away")

    ran: list[bool] = []
    with pytest.raises(OSError):
        asyncio.run(send_reply(Reply(200, [], b"x", after=lambda: ran.append(True)), broken))
    assert ran == [True]


def test_a_client_that_leaves_cancels_the_handler() -> None:
    """A watcher task sees `http.disconnect` from `receive()` and cancels the handler; nothing is sent
    afterwards."""
    from glider_cli.server.asgi import ProxyEndpoint

    scope = _scope("POST", "/v1/messages")
    events: list[str] = []
    sent: list[Any] = []

    handler = _slow_handler(events)

    async def run() -> None:
        gone = asyncio.Event()
        messages = [{"type": "http.request", "body": b"hi", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            sent.append(message)

        endpoint = ProxyEndpoint(handler, 1024, lambda status, message: Reply(400))
        task = asyncio.create_task(endpoint(scope, receive, send))
        await asyncio.sleep(0.05)
        assert events == ["handler hi"]
        gone.set()
        await asyncio.wait_for(task, 5)  # returns normally: the cancellation was ours, and absorbed
        assert not task.cancelled()

    asyncio.run(run())
    assert events == ["handler hi", "cancelled"]
    assert sent == []


def test_the_disconnect_watcher_ends_with_the_reply() -> None:
    """The watcher task lives as long as its request: once the reply is sent no task is left behind,
    and a `receive()` that never returns does not keep the endpoint waiting."""
    from glider_cli.server.asgi import ProxyEndpoint

    sent: list[Any] = []
    calls = 0

    async def handler(scope: Any, body: bytes) -> Reply:
        await asyncio.sleep(0.01)  # the watcher is waiting on receive() meanwhile
        return Reply(200, body=body)

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": b"echo", "more_body": False}
        await asyncio.Event().wait()  # the client neither sends nor leaves
        raise AssertionError("unreachable")

    async def send(message: Any) -> None:
        sent.append(message)

    async def go() -> set[asyncio.Task[Any]]:
        endpoint = ProxyEndpoint(handler, 1024, lambda status, message: Reply(400))
        await asyncio.wait_for(endpoint(_scope("POST", "/v1/messages"), receive, send), 5)
        await asyncio.sleep(0)
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    left = asyncio.run(go())
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"echo" and calls == 2 and left == set()


def test_a_stream_reply_that_fails_before_its_first_chunk_is_still_closed() -> None:
    """An async generator that never started runs no `finally`: `Reply.close` is what releases the
    upstream then. It runs after the stream is closed, however sending ended, and exactly once."""
    events: list[str] = []

    async def stream() -> Any:
        try:
            events.append("started")
            yield b"chunk"
        finally:
            events.append("stream finally")

    async def close() -> None:
        events.append("close")

    async def failing_send(message: Any) -> None:
        raise ConnectionResetError("client gone while the headers were sent")

    async def run() -> None:
        reply = Reply(200, [(b"content-type", b"text/event-stream")], stream=stream(), close=close)
        with pytest.raises(ConnectionResetError):
            await send_reply(reply, failing_send)
        assert events == ["close"]  # the generator never ran; close did
        events.clear()
        sent: list[Any] = []

        async def ok_send(message: Any) -> None:
            sent.append(message)

        reply = Reply(200, [], stream=stream(), close=close)
        await send_reply(reply, ok_send)
        assert events == ["started", "stream finally", "close"]
        assert [m.get("body") for m in sent[1:]] == [b"chunk", b""]

    asyncio.run(run())


def test_a_pipelined_request_stays_watched_when_the_one_before_it_ends() -> None:
    """uvicorn starts a pipelined request once the reply before it is complete, maybe before that
    request's task has returned: the task that ends takes only its own watch away."""

    async def run() -> list[str]:
        limits = ConnectionLimits(ServerSettings())
        conn = limits.opened(_Transport())
        assert conn is not None
        seen: list[str] = []

        async def request(name: str, hold: asyncio.Event) -> None:
            task = asyncio.current_task()
            assert task is not None
            conn.watch(task, conn.begin() + 30)
            conn.body_in()
            try:
                await hold.wait()
            except asyncio.CancelledError:
                seen.append(f"{name} cancelled")
                raise
            finally:
                conn.end(task)

        first_done, second_hold = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(request("first", first_done))
        await asyncio.sleep(0)
        conn.replied()  # the first reply is complete: the pipelined request starts
        second = asyncio.create_task(request("second", second_hold))
        await asyncio.sleep(0)
        first_done.set()
        await first
        limits.closed(conn)  # the client leaves while the second is served
        await asyncio.wait({second}, timeout=5)
        assert second.cancelled() and conn.lost
        return seen

    assert asyncio.run(run()) == ["second cancelled"]
