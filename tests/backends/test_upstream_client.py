"""The upstream client against a real fake upstream on 127.0.0.1: bodies, streams, every failure mode and
every timeout phase (backends.client, backends.aiohttp_upstream)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from fake_upstream import FakeUpstream, closed_port_url
from glider_cli.backends.aiohttp_upstream import AiohttpUpstream
from glider_cli.backends.client import Upstream
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"])]

BODY = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":true}'
HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


async def _with(fn, **kwargs):  # type: ignore[no-untyped-def]
    up: Upstream = AiohttpUpstream(**kwargs)
    try:
        return await fn(up)
    finally:
        await up.aclose()


def test_stream_arrives_in_chunks_and_headers_first(fake: FakeUpstream) -> None:
    async def go(up: Upstream) -> tuple[int, list[bytes]]:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        chunks = [c async for c in r.aiter_bytes()]
        await r.aclose()
        return r.status, chunks

    status, chunks = asyncio.run(_with(go))
    assert status == 200
    joined = b"".join(chunks)
    assert joined.startswith(b"event: message_start")
    assert b"event: message_stop" in joined
    assert fake.requests[-1].headers["x-api-key"] == "sk-test"


def test_the_request_is_framed_and_sent_as_given(fake: FakeUpstream) -> None:
    body = BODY.replace(b',"stream":true', b"")

    async def go(up: Upstream) -> bytes:
        r = await up.send("POST", fake.url + "/v1/messages?beta=true", HEADERS, body, Timeout())
        data = await r.read()
        await r.aclose()
        return data

    assert b'"type":"message"' in asyncio.run(_with(go))
    last = fake.requests[-1]
    assert last.path == "/v1/messages" and last.query == {"beta": "true"}
    assert last.headers["content-length"] == str(len(body))
    assert last.raw == body
    # Only the headers given, plus framing: no User-Agent, Accept or Accept-Encoding of the library's.
    assert set(last.headers) == {*HEADERS, "host", "content-length"}


def test_error_status_is_returned_not_raised(fake: FakeUpstream) -> None:
    fake.set_fault(status=503)

    async def go(up: Upstream) -> tuple[int, bytes]:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        data = await r.read()
        await r.aclose()
        return r.status, data

    status, data = asyncio.run(_with(go))
    assert status == 503
    assert b"injected fault" in data


def test_refused_connection_is_backend_error() -> None:
    async def go(up: Upstream) -> None:
        await up.send("POST", closed_port_url() + "/v1/messages", HEADERS, BODY, Timeout())

    with pytest.raises(BackendError, match="refused"):
        asyncio.run(_with(go))


def test_a_name_that_does_not_resolve_is_backend_error() -> None:
    async def go(up: Upstream) -> None:
        await up.send("POST", "http://nowhere.glider.invalid/v1/messages", HEADERS, BODY, Timeout())

    with pytest.raises(BackendError, match="could not be resolved"):
        asyncio.run(_with(go))


def test_timeout_before_first_byte_is_backend_timeout(fake: FakeUpstream) -> None:
    fake.set_fault(delay=2.0)

    async def go(up: Upstream) -> None:
        await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout(read=0.3))

    with pytest.raises(BackendTimeout, match="read timeout"):
        asyncio.run(_with(go))


def test_read_timeout_bounds_the_gap_between_chunks_not_the_whole_stream(fake: FakeUpstream) -> None:
    """Events 0.2 s apart with a 0.5 s read timeout: the stream (~2 s in all) is not cut."""
    fake.set_reply(text="word " * 10, event_delay=0.2)

    async def go(up: Upstream) -> bytes:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout(read=0.5))
        data = b"".join([c async for c in r.aiter_bytes()])
        await r.aclose()
        return data

    assert b"event: message_stop" in asyncio.run(_with(go))


def test_stream_cut_midway_raises_backend_error(fake: FakeUpstream) -> None:
    fake.set_fault(cut_after=2)

    async def go(up: Upstream) -> list[bytes]:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        got: list[bytes] = []
        try:
            async for c in r.aiter_bytes():
                got.append(c)
        finally:
            await r.aclose()
        return got

    with pytest.raises(BackendError):
        asyncio.run(_with(go))


def test_connect_timeout_is_backend_timeout() -> None:
    """A listening socket whose accept queue is full: the SYN goes unanswered, so connecting hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(8):  # fill the backlog (Linux takes backlog + 1 before it drops SYNs)
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        fillers.append(s)

    async def go(up: Upstream) -> None:
        await up.send("POST", f"http://127.0.0.1:{port}/x", HEADERS, BODY, Timeout(connect=0.3, pool=0.1))

    try:
        with pytest.raises(BackendTimeout, match="connect"):
            asyncio.run(asyncio.wait_for(_with(go), 5))
    finally:
        for s in fillers:
            s.close()
        server.close()


def test_write_timeout_bounds_an_upload_the_upstream_stops_taking() -> None:
    """The upstream reads the request head, then nothing: once the socket buffers are full the body
    write blocks, and `Timeout.write` (not `read`, which only starts once the body is sent) ends it."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    held: list[asyncio.StreamWriter] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.readuntil(b"\r\n\r\n")  # the head, then never read again

    body = b"x" * (24 << 20)

    async def go() -> float:
        server = await asyncio.start_server(handler, sock=listener)
        up = AiohttpUpstream()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            with pytest.raises(BackendTimeout, match="write timeout"):
                await up.send(
                    "POST", f"http://127.0.0.1:{port}/x", HEADERS, body, Timeout(read=30, write=0.5)
                )
            return loop.time() - t0
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(asyncio.wait_for(go(), 20)) < 10


def test_a_slow_upload_that_keeps_moving_is_not_a_write_timeout() -> None:
    """The write timeout bounds each wait for the socket, not the whole upload: an upstream that reads
    the body slowly but steadily (well over `write` in all) gets all of it."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    body = b"y" * (12 << 20)
    took: list[float] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        got = 0
        while got < length:
            got += len(await reader.read(128 * 1024))
            await asyncio.sleep(0.02)
        took.append(loop.time() - t0)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%d" % (len(str(got)), got))
        await writer.drain()

    async def go() -> bytes:
        server = await asyncio.start_server(handler, sock=listener)
        up = AiohttpUpstream()
        try:
            r = await up.send(
                "POST", f"http://127.0.0.1:{port}/x", HEADERS, body, Timeout(read=30, write=1.0)
            )
            data = await r.read()
            await r.aclose()
            return data
        finally:
            await up.aclose()
            server.close()

    assert asyncio.run(asyncio.wait_for(go(), 30)) == str(len(body)).encode()
    assert took[0] > 1.0  # the whole upload took longer than the write timeout


def test_a_full_pool_makes_the_next_request_wait_then_times_out() -> None:
    release = asyncio.Event()
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:  # keep-alive: one request after another on this connection
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            await release.wait()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ndone")
            await writer.drain()

    async def go() -> bytes:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/x"
        up = AiohttpUpstream(limit=1)
        try:
            first = asyncio.create_task(up.send("POST", url, HEADERS, BODY, Timeout(read=5)))
            await asyncio.sleep(0.1)
            with pytest.raises(BackendTimeout, match="pool"):
                await up.send("POST", url, HEADERS, BODY, Timeout(read=5, connect=0.1, pool=0.2))
            waiting = asyncio.create_task(up.send("POST", url, HEADERS, BODY, Timeout(read=5)))
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
    assert connections == 1


def test_proxy_variables_are_ignored_without_routes(
    fake: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy variable pointing nowhere would break the request if it were honoured.
    monkeypatch.setenv("HTTP_PROXY", closed_port_url())
    monkeypatch.setenv("ALL_PROXY", closed_port_url())

    async def go(up: Upstream) -> int:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        await r.read()
        await r.aclose()
        return r.status

    assert asyncio.run(_with(go)) == 200
