"""backends.native: the wire details the shared client tests do not reach, each against a real socket.

Small raw asyncio servers on 127.0.0.1 play the upstream where a behaviour needs exact bytes (a
close-delimited body, a 100 Continue, a server that drops an idle connection, gzip, TLS); the fake
upstream plays it where the real wire format matters (keep-alive reuse, the pool).
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import Awaitable, Callable

import pytest

from fake_upstream import FakeUpstream
from glider_cli.backends.native import NativeUpstream
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

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


def test_keep_alive_connections_are_reused_and_the_request_is_framed(fake: FakeUpstream) -> None:
    fake.reset()

    async def go() -> int:
        up = NativeUpstream()
        try:
            for _ in range(5):
                r = await up.send("POST", fake.url + "/v1/messages?beta=true", HEADERS, BODY, Timeout())
                assert r.status == 200 and b'"type":"message"' in await r.read()
                await r.aclose()
            return sum(p.count for p in up._pools.values())
        finally:
            await up.aclose()

    assert asyncio.run(go()) == 1
    last = fake.requests[-1]
    assert last.path == "/v1/messages" and last.query == {"beta": "true"}
    assert last.headers["x-api-key"] == "sk-test"
    assert last.headers["content-length"] == str(len(BODY))
    assert last.raw == BODY


def test_an_unfinished_response_closes_its_connection(fake: FakeUpstream) -> None:
    stream_body = BODY[:-1] + b',"stream":true}'

    fake.set_reply(text="word " * 40, event_delay=0.05)

    async def go() -> int:
        up = NativeUpstream()
        try:
            r = await up.send("POST", fake.url + "/v1/messages", HEADERS, stream_body, Timeout())
            it = r.aiter_bytes().__aiter__()
            await it.__anext__()
            await r.aclose()  # not read to the end: the upstream must be told to stop
            return sum(p.count for p in up._pools.values())
        finally:
            await up.aclose()

    assert asyncio.run(go()) == 0


def test_a_stale_pooled_connection_is_retried_once_on_a_fresh_one() -> None:
    """The server answers one request per connection and closes it without `Connection: close`
    (as a keep-alive timeout does): the next request on the pooled connection fails before any
    byte arrives and is sent again on a new connection."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _, body = await _read_request(reader)
        seen.append(body)
        writer.write(_reply(b"ok %d" % len(seen)))
        await writer.drain()
        writer.close()

    async def go() -> list[bytes]:
        server, url = await _serve(handler)
        up = NativeUpstream()
        out = []
        try:
            for _ in range(3):
                r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
                out.append(await r.read())
                await r.aclose()
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
        up = NativeUpstream()
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

    async def go() -> tuple[int, bytes, list[tuple[str, str]]]:
        server, url = await _serve(handler)
        up = NativeUpstream()
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            data = await r.read()
            await r.aclose()
            return r.status, data, r.headers
        finally:
            await up.aclose()
            server.close()

    status, data, _ = asyncio.run(go())
    assert (status, data) == (200, b"hello world")


def test_an_unknown_content_encoding_is_a_backend_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(_reply(b"\x00\x01", extra=b"content-encoding: br\r\n"))
        await writer.drain()

    async def go() -> None:
        server, url = await _serve(handler)
        up = NativeUpstream()
        try:
            with pytest.raises(BackendError, match="unsupported encoding 'br'"):
                await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())


def test_a_malformed_response_is_a_backend_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()

    async def go() -> None:
        server, url = await _serve(handler)
        up = NativeUpstream()
        try:
            with pytest.raises(BackendError, match="malformed"):
                await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())


@pytest.mark.parametrize(
    "headers",
    [{"x-evil": "a\r\ninjected: 1"}, {"x-evil\n": "a"}, {"x-evil": "a\rb"}, {"x-name": "é€"}],
    ids=["crlf-in-value", "lf-in-name", "cr-in-value", "not-latin-1"],
)
def test_a_header_that_could_smuggle_another_is_refused_before_sending(headers: dict[str, str]) -> None:
    got: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.read(100))

    async def go() -> None:
        server, url = await _serve(handler)
        up = NativeUpstream()
        try:
            with pytest.raises(BackendError, match="refusing"):
                await up.send("POST", url + "/x", {**HEADERS, **headers}, BODY, Timeout(read=5))
            await asyncio.sleep(0.05)
        finally:
            await up.aclose()
            server.close()

    asyncio.run(go())
    assert got == []  # nothing was sent (not even a connection opened)


def test_read_timeout_between_chunks() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await asyncio.sleep(3)

    async def go() -> list[bytes]:
        server, url = await _serve(handler)
        up = NativeUpstream()
        got: list[bytes] = []
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=0.3))
            with pytest.raises(BackendTimeout, match="read timeout"):
                async for chunk in r.aiter_bytes():
                    got.append(chunk)
            await r.aclose()
        finally:
            await up.aclose()
            server.close()
        return got

    assert asyncio.run(go()) == [b"first"]


def test_a_full_pool_makes_the_next_request_wait_then_times_out() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:  # keep-alive: one request after another on this connection
            try:
                await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            await release.wait()
            writer.write(_reply(b"done"))
            await writer.drain()

    async def go() -> bytes:
        server, url = await _serve(handler)
        up = NativeUpstream(limit=1)
        try:
            first = asyncio.create_task(up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5)))
            await asyncio.sleep(0.05)
            with pytest.raises(BackendTimeout, match="pool"):
                await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5, pool=0.2))
            waiting = asyncio.create_task(up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5)))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            release.set()
            r1 = await first
            assert await r1.read() == b"done"
            await r1.aclose()  # frees the slot: the waiting request goes out on the same connection
            r2 = await asyncio.wait_for(waiting, 5)
            data = await r2.read()
            await r2.aclose()
            return data
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(go()) == b"done"


def test_a_slow_reader_pauses_the_socket() -> None:
    size = 8 << 20

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
        chunk = b"x" * 65536
        for _ in range(size // len(chunk)):
            writer.write(chunk)
            await writer.drain()

    async def go() -> tuple[int, int]:
        server, url = await _serve(handler)
        up = NativeUpstream(high_water=1 << 16)
        try:
            r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            await asyncio.sleep(0.3)  # read nothing for a while
            buffered = r._conn.buffered
            total = len(await r.read())
            await r.aclose()
            return buffered, total
        finally:
            await up.aclose()
            server.close()

    buffered, total = asyncio.run(go())
    assert total == size
    assert buffered < 4 << 20  # the socket was paused long before the whole body was buffered


def test_https_uses_tls_and_checks_the_certificate() -> None:
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head, _ = await _read_request(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        host = next(ln for ln in head.split(b"\r\n") if ln.startswith(b"host:"))
        writer.write(_reply(host))
        await writer.drain()

    async def go() -> bytes:
        server, url = await _serve(handler, server_ctx)
        trusting = ssl.create_default_context()
        ca.configure_trust(trusting)
        try:
            up = NativeUpstream(ssl_context=trusting)
            try:
                r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
                data = await r.read()
                await r.aclose()
            finally:
                await up.aclose()
            stranger = NativeUpstream()  # the system trust store does not know this CA
            try:
                with pytest.raises(BackendError):
                    await stranger.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
            finally:
                await stranger.aclose()
            return data
        finally:
            server.close()

    data = asyncio.run(go())
    assert data.startswith(b"host: 127.0.0.1:")


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
        up = NativeUpstream()
        out = []
        try:
            for _ in range(2):
                r = await up.send("POST", url + "/x", HEADERS, BODY, Timeout(read=5))
                out.append((r.status, await r.read()))
                await r.aclose()
                await asyncio.sleep(0.1)  # the 408 arrives while the connection sits in the pool
        finally:
            await up.aclose()
            server.close()
        return out

    assert asyncio.run(go()) == [(200, b"answer 1"), (200, b"answer 2")]


def test_a_response_dropped_without_aclose_gives_its_connection_back(fake: FakeUpstream) -> None:
    import gc

    fake.reset()
    fake.set_reply(text="word " * 40, event_delay=0.05)
    stream_body = BODY[:-1] + b',"stream":true}'

    async def go() -> int:
        up = NativeUpstream(limit=1)
        try:
            r = await up.send("POST", fake.url + "/v1/messages", HEADERS, stream_body, Timeout())
            assert r.status == 200
            del r  # a caller's bug: never closed
            gc.collect()
            # The slot is free again: with limit=1 this would time out in the pool otherwise.
            r2 = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout(pool=1.0))
            await r2.read()
            await r2.aclose()
            return r2.status
        finally:
            await up.aclose()

    assert asyncio.run(go()) == 200
