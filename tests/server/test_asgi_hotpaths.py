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


def test_after_runs_once_the_reply_is_sent_and_when_sending_fails() -> None:
    order: list[str] = []

    async def send(message: Any) -> None:
        order.append(message["type"])

    reply = Reply(200, [(b"content-type", b"application/json")], b"{}", after=lambda: order.append("after"))
    asyncio.run(send_reply(reply, send))
    assert order == ["http.response.start", "http.response.body", "after"]

    async def broken(message: Any) -> None:
        raise OSError("client went away")

    ran: list[bool] = []
    with pytest.raises(OSError):
        asyncio.run(send_reply(Reply(200, [], b"x", after=lambda: ran.append(True)), broken))
    assert ran == [True]
