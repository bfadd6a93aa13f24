"""The upstream client keeps no cookies between requests: a proxy serves many clients."""

from __future__ import annotations

import asyncio

from glider_cli.backends.aiohttp_upstream import AiohttpUpstream
from glider_cli.config.settings import Timeout


def test_a_set_cookie_is_passed_back_but_never_replayed() -> None:
    seen: list[bytes] = []
    # `localhost`, not an IP: a default jar would keep (and replay) a cookie for a name.

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            seen.append(head)
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"set-cookie: __cf_bm=abc123; Path=/\r\ncontent-length: 2\r\n\r\n{}"
            )
            await writer.drain()

    async def go() -> list[str]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        up = AiohttpUpstream()
        cookies: list[str] = []
        try:
            for _ in range(2):
                r = await up.send("POST", f"http://localhost:{port}/v1/messages", {}, b"{}", Timeout())
                assert await r.read() == b"{}"
                cookies += [v for k, v in r.headers if k.lower() == "set-cookie"]
                await r.aclose()
        finally:
            await up.aclose()
            server.close()
        return cookies

    cookies = asyncio.run(go())
    assert cookies == ["__cf_bm=abc123; Path=/", "__cf_bm=abc123; Path=/"]
    assert len(seen) == 2
    assert all(b"cookie:" not in head.lower() for head in seen)
