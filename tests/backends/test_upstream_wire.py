"""The upstream client's wire behaviour, each against a real socket: what any upstream client of a model
proxy must get right (framings, keep-alive, closing, smuggling, backpressure, TLS).

Small raw asyncio servers on 127.0.0.1 play the upstream where a behaviour needs exact bytes (a
close-delimited body, a 100 Continue, a server that drops an idle connection, gzip, TLS).
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from glider_cli.backends.aiohttp_upstream import AiohttpUpstream
from glider_cli.backends.client import Upstream
from glider_cli.backends.network import Route
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"])]

BODY = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await reader.readexactly(length)


async def _serve(handler: Handler, ssl_ctx: ssl.SSLContext | None = None) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=ssl_ctx)
    port = server.sockets[0].getsockname()[1]
    return server, f"{'https' if ssl_ctx else 'http'}://127.0.0.1:{port}"


def _reply(body: bytes, *, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n" % (len(body), extra) + body


async def _one(up: Upstream, url: str, headers: dict[str, str] = HEADERS) -> tuple[int, bytes]:
    r = await up.send("POST", url + "/x", headers, BODY, Timeout(read=5))
    try:
        return r.status, await r.read()
    finally:
        await r.aclose()


def test_keep_alive_connections_are_reused() -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(_reply(b"ok"))
            await writer.drain()

    async def go() -> list[tuple[int, bytes]]:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            return [await _one(up, url) for _ in range(5)]
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(go()) == [(200, b"ok")] * 5
    assert connections == 1


def test_an_unfinished_response_closes_its_connection() -> None:
    """Closing a stream before its end drops the connection: that is what tells the upstream to stop."""
    closed = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        if await reader.read(1) == b"":  # EOF: the client hung up
            closed.set()

    async def go() -> None:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            it = r.aiter_bytes().__aiter__()
            assert await it.__anext__() == b"first"
            await r.aclose()  # not read to the end
            await asyncio.wait_for(closed.wait(), 5)
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())


def test_a_server_that_closes_after_each_reply_is_answered_on_a_fresh_connection() -> None:
    """The server answers one request per connection and closes it without `Connection: close` (as a
    keep-alive timeout does): the next request must not be lost on the dead pooled connection."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _, body = await _read_request(reader)
        seen.append(body)
        writer.write(_reply(b"ok %d" % len(seen)))
        await writer.drain()
        writer.close()

    async def go() -> list[bytes]:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        out = []
        try:
            for _ in range(3):
                out.append((await _one(up, url))[1])
                await asyncio.sleep(0.05)
        finally:
            await up.aclose()
            server.close()
        return out

    assert asyncio.run(go()) == [b"ok 1", b"ok 2", b"ok 3"]
    assert seen == [BODY, BODY, BODY]


def test_a_connection_that_breaks_after_bytes_arrived_is_not_retried() -> None:
    calls = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        await _read_request(reader)
        calls += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
        await writer.drain()
        writer.close()

    async def go() -> None:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            with pytest.raises(BackendError, match="broke"):
                await r.read()
            await r.aclose()
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())
    assert calls == 1


@pytest.mark.parametrize(
    "wire",
    [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nhello world",  # ends at close
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world",
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s"
        % (len(gzip.compress(b"hello world")), gzip.compress(b"hello world")),
    ],
    ids=["chunked", "close-delimited", "100-continue", "gzip"],
)
def test_response_framings_and_encodings(wire: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(wire)
        await writer.drain()
        if b"HTTP/1.0" in wire:
            writer.close()

    async def go() -> tuple[int, bytes]:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            return await _one(up, url)
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(go()) == (200, b"hello world")


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        (_reply(b"\x00\x01", extra=b"content-encoding: zstd-nonsense\r\n"), "content-encoding|decode"),
        (b"NOT HTTP AT ALL\r\n\r\n", "status line"),
    ],
    ids=["unknown-content-encoding", "malformed"],
)
def test_a_reply_that_cannot_be_read_is_a_backend_error(wire: bytes, match: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(wire)
        await writer.drain()

    async def go() -> None:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            with pytest.raises(BackendError, match=match):
                await _one(up, url)
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())


@pytest.mark.parametrize(
    "headers",
    [
        {"x-evil": "a\r\ninjected: 1"},
        {"x-evil\n": "a"},
        {"x-evil": "a\rb"},
        {"x-nul": "a\0b"},
        {"x-name": "é€"},
    ],
    ids=["crlf-in-value", "lf-in-name", "cr-in-value", "nul-in-value", "not-latin-1"],
)
def test_a_header_that_could_smuggle_another_is_refused_before_sending(headers: dict[str, str]) -> None:
    got: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.read(100))

    async def go() -> None:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            with pytest.raises(BackendError, match="refusing"):
                await up.send("POST", url + "/x", {**HEADERS, **headers}, BODY, Timeout(read=5))
            await asyncio.sleep(0.05)
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())
    assert got == []  # nothing was sent (not even a connection opened)


def test_a_non_ascii_header_leaves_as_the_bytes_it_arrived_as() -> None:
    """Header text is the wire's bytes decoded as latin-1 (as ASGI gives them): UTF-8 bytes from a client
    must reach the upstream unchanged, not encoded a second time."""
    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _read_request(reader)
        heads.append(head)
        writer.write(_reply(b"ok"))
        await writer.drain()

    async def go() -> None:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            wire_text = "café ☕".encode().decode("latin-1")
            assert await _one(up, url, {**HEADERS, "x-title": wire_text}) == (200, b"ok")
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())
    assert "x-title: café ☕\r\n".encode() in heads[0]


def test_a_slow_reader_pauses_the_socket() -> None:
    """The consumer reads nothing for a while: the client stops reading the socket, so the upstream's
    writes block long before the whole body is sent (no unbounded buffering in the proxy)."""
    size = 64 << 20
    sent = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
        chunk = b"x" * 65536
        for _ in range(size // len(chunk)):
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)

    async def go() -> tuple[int, int]:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            await asyncio.sleep(0.5)  # read nothing for a while
            sent_while_idle = sent
            total = len(await r.read())
            await r.aclose()
            return sent_while_idle, total
        finally:
            await up.aclose()
            server.close()

    sent_while_idle, total = asyncio.run(go())
    assert total == size
    assert sent_while_idle < 32 << 20  # the socket was paused long before the whole body was sent


def test_https_checks_the_certificate_and_a_ca_file_adds_a_private_ca(tmp_path: Path) -> None:
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "private-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head, _ = await _read_request(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        host = next(ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"host:"))
        writer.write(_reply(host))
        await writer.drain()

    async def go() -> bytes:
        server, url = await _serve(handler, server_ctx)
        try:
            trusting = AiohttpUpstream({url: Route(ca_file=str(ca_file))})
            try:
                _, data = await _one(trusting, url)
            finally:
                await trusting.aclose()
            stranger = AiohttpUpstream()  # the system trust store does not know this CA
            try:
                with pytest.raises(BackendError, match="TLS"):
                    await _one(stranger, url)
            finally:
                await stranger.aclose()
            return data
        finally:
            server.close()

    data = asyncio.run(go())
    assert data.lower().startswith(b"host: 127.0.0.1:")


def test_bytes_on_an_idle_pooled_connection_are_never_taken_as_a_later_reply() -> None:
    """A server that answers, then sends an unsolicited 408 on the idle keep-alive connection and hangs
    up (as some do on their idle timeout): the next request must get its own answer."""
    answered = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        await _read_request(reader)
        answered += 1
        writer.write(_reply(b"answer %d" % answered))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()

    async def go() -> list[tuple[int, bytes]]:
        server, url = await _serve(handler)
        up = AiohttpUpstream()
        out = []
        try:
            for _ in range(2):
                out.append(await _one(up, url))
                await asyncio.sleep(0.1)  # the 408 arrives while the connection sits in the pool
        finally:
            await up.aclose()
            server.close()
        return out

    assert asyncio.run(go()) == [(200, b"answer 1"), (200, b"answer 2")]


def test_a_response_dropped_without_aclose_gives_its_connection_back() -> None:
    import gc

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            await writer.drain()

    async def go() -> int:
        server, url = await _serve(handler)
        up = AiohttpUpstream(limit=1)
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            assert r.status == 200
            del r  # a caller's bug: never closed
            gc.collect()
            # The slot is free again: with limit=1 this would time out in the pool otherwise.
            r2 = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5, connect=0.5, pool=0.5))
            await r2.aclose()
            return r2.status
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(go()) == 200
