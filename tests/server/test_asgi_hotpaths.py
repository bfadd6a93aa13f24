"""server.asgi: HotPaths dispatch and a whole Reply's `after` hook."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from glider_cli.server.asgi import HotPaths, Reply, send_reply


def _scope(method: str, path: str, root_path: str = "") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": root_path, "headers": []}


async def _noop_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


async def _noop_send(message: Any) -> None:
    return None


def test_post_on_a_hot_path_skips_the_app_and_the_rest_falls_through() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(f"app {scope.get('method', scope['type'])} {scope.get('path', '')}".strip())

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        seen.append(f"endpoint {scope['path']}")

    hot = HotPaths(app, endpoints={"/v1/messages": endpoint})

    async def run() -> None:
        for scope in (
            _scope("POST", "/v1/messages"),
            _scope("GET", "/v1/messages"),
            _scope("POST", "/v1/messages/"),
            _scope("POST", "/v1/messages", root_path="/proxy"),
            {"type": "lifespan"},
        ):
            await hot(scope, _noop_receive, _noop_send)

    asyncio.run(run())
    assert seen == [
        "endpoint /v1/messages",
        "app GET /v1/messages",
        "app POST /v1/messages/",
        "app POST /v1/messages",
        "app lifespan",
    ]


def test_after_runs_on_the_next_loop_pass_and_at_once_when_sending_fails() -> None:
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
    assert order == ["http.response.start", "http.response.body", "returned", "after"]

    async def broken(message: Any) -> None:
        raise OSError("client went away")

    ran: list[bool] = []
    with pytest.raises(OSError):
        asyncio.run(send_reply(Reply(200, [], b"x", after=lambda: ran.append(True)), broken))
    assert ran == [True]


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def test_coalescing_transport_holds_a_head_for_its_body_and_writes_body_bytes_at_once() -> None:
    from glider_cli.server.http_protocol import CoalescingTransport

    async def go() -> _Transport:
        real = _Transport()
        t = CoalescingTransport(real, asyncio.get_running_loop())  # type: ignore[arg-type]
        # A whole reply: the head waits, the body takes it along in one write, at once.
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.write(b"")
        assert real.writes == [] and t.get_write_buffer_size() == 19
        t.write(b"body")
        assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        await asyncio.sleep(0)
        assert len(real.writes) == 1
        # A stream: its head leaves on the next loop pass even with no body yet; each event at once.
        t.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        await asyncio.sleep(0)
        assert real.writes[1] == b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        t.write(b"event: one\n\n")
        assert real.writes[2] == b"event: one\n\n"
        t.write(bytearray(b"event: two\n\n"))
        assert real.writes[3] == b"event: two\n\n"
        t.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        t.close()  # writes what is held, then closes
        assert t.get_extra_info("peername") == "info:peername"
        return real

    real = asyncio.run(go())
    assert real.writes[4:] == [b"HTTP/1.1 204 No Content\r\n\r\n"]
    assert real.closed


@pytest.mark.parametrize("with_hooks", [True, False])
def test_a_client_that_leaves_cancels_the_handler(with_hooks: bool) -> None:
    """Under Glider's protocol the lost-connection hook cancels the handler; under any other server a
    watcher task sees `http.disconnect` from `receive()`. Either way nothing is sent afterwards."""
    from glider_cli.server.asgi import ON_CONNECTION_LOST, ProxyEndpoint

    hooks: list[Any] = []
    scope = _scope("POST", "/v1/messages")
    if with_hooks:
        scope["extensions"] = {ON_CONNECTION_LOST: hooks}
    events: list[str] = []
    sent: list[Any] = []

    async def handler(scope: Any, body: bytes) -> Reply:
        events.append(f"handler {body.decode()}")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        return Reply(200, body=b"late")

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
        assert len(hooks) == (1 if with_hooks else 0)
        if with_hooks:
            for hook in list(hooks):
                hook()
        else:
            gone.set()
        await asyncio.wait_for(task, 5)  # returns normally: the cancellation was ours, and absorbed
        assert not task.cancelled()

    asyncio.run(run())
    assert events == ["handler hi", "cancelled"]
    assert sent == []
    assert hooks == []  # unregistered when the request ended


def test_the_lost_connection_hooks_are_unregistered_after_a_reply() -> None:
    from glider_cli.server.asgi import ON_CONNECTION_LOST, ProxyEndpoint

    hooks: list[Any] = []
    scope = {**_scope("POST", "/v1/messages"), "extensions": {ON_CONNECTION_LOST: hooks}}
    sent: list[Any] = []

    async def handler(scope: Any, body: bytes) -> Reply:
        assert len(hooks) == 1
        return Reply(200, body=body)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"echo", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(ProxyEndpoint(handler, 1024, lambda status, message: Reply(400))(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"echo" and hooks == []


def test_glider_protocol_writes_a_whole_reply_at_once_and_calls_the_lost_hooks() -> None:
    """uvicorn driven through Glider's protocol on a recording transport: head and body of a whole
    reply leave in one write as the response completes (no extra loop pass), and a lost connection
    calls the hook the endpoint registered."""
    import uvicorn
    from uvicorn.server import ServerState

    from glider_cli.server.asgi import ON_CONNECTION_LOST
    from glider_cli.server.http_protocol import CoalescingHttpToolsProtocol

    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        hooks = scope["extensions"][ON_CONNECTION_LOST]
        seen["hooks"] = hooks
        if scope["path"] == "/wait":
            lost = asyncio.Event()
            hooks.append(lost.set)
            await lost.wait()
            seen["lost"] = True
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        seen["writes_when_done"] = list(real.writes)

    async def go() -> None:
        config = uvicorn.Config(app, lifespan="off", log_level="warning")
        proto = CoalescingHttpToolsProtocol(config=config, server_state=ServerState(), app_state={})
        proto.connection_made(real)  # type: ignore[arg-type]
        proto.data_received(b"POST /x HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n")
        for _ in range(3):
            await asyncio.sleep(0)
        proto.data_received(b"POST /wait HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n")
        for _ in range(3):
            await asyncio.sleep(0)
        proto.connection_lost(None)
        for _ in range(3):
            await asyncio.sleep(0)

    class _SocketTransport(_Transport):
        def get_extra_info(self, name: str) -> Any:
            return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(name)

        def pause_reading(self) -> None: ...

        def resume_reading(self) -> None: ...

    real = _SocketTransport()
    asyncio.run(go())
    first = seen["writes_when_done"]
    assert len(first) == 1 and first[0].startswith(b"HTTP/1.1 200 OK") and first[0].endswith(b"\r\n\r\nok")
    assert seen["lost"] is True


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
