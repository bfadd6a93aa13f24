"""The way to Cursor of one client's HTTP/2 connection, and the relay of a stream over it.

- `OriginH2(network, host, port)`: an HTTP/2 client connection to the host (TLS offering only `h2`,
  `upstream.Network.open_h2`), opened when a stream first needs it and again after it ended (GOAWAY,
  connection loss). `open(headers)` starts a stream on it; `exchange(request)` sends a request read
  whole (what `relay.relay` does for one that came over HTTP/2); `close()` ends it.
- `pipe(client, origin, authority, head=, watch=, on_end=)`: one client stream relayed to Cursor in
  both directions, each chunk as it arrives (no envelope is waited for, nothing of the stream is
  held): the request's headers (`upstream.h2_request_headers`), `head` (bytes already read from the
  client, sent first), then the rest of the request body and its trailers; the response's status,
  headers, body (through `watch`, which passes each chunk on as it reads it) and trailers. Flow
  control carries over: a chunk is read from one side only when the other side's window took the
  previous one. A reset on either side resets the other; Cursor out of reach is answered 502 with a
  Connect error (`unavailable`). `on_end(status, complete, ms)` is called once at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Callable

import h2.errors

from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.h2link import Gone, H2Link, Headers, Stream
from glider_cli.cursor.upstream import Network, h2_request_headers, h2_response_headers
from glider_cli.protocol.cursor.writers import unary_error

End = Callable[[int, bool, float], None]
Watch = Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]]


class Unreachable(Exception):
    """Cursor's host could not be reached over HTTP/2."""


class OriginH2:
    def __init__(self, network: Network, host: str, port: int) -> None:
        self.network = network
        self.host = host
        self.port = port
        self._link: H2Link | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def open(self, headers: Headers, *, end: bool = False) -> Stream:
        link = await self._connected()
        try:
            return await link.open(headers, end=end)
        except Gone as exc:
            raise Unreachable(f"{self.host}: {exc}") from exc

    async def _connected(self) -> H2Link:
        async with self._lock:
            link = self._link
            if link is not None and not link.closed and not link.goaway:
                return link
            try:
                reader, writer = await self.network.open_h2(self.host, self.port)
            except (OSError, TimeoutError, ssl.SSLError) as exc:
                raise Unreachable(f"{self.host}: {exc.__class__.__name__}") from exc
            ssl_obj = writer.get_extra_info("ssl_object")
            if ssl_obj is None or ssl_obj.selected_alpn_protocol() != "h2":
                writer.close()
                raise Unreachable(f"{self.host} did not agree to HTTP/2")
            link = H2Link(reader, writer, client_side=True)
            try:
                await link.start()
            except Gone as exc:
                raise Unreachable(f"{self.host}: {exc}") from exc
            self._link = link
            self._task = asyncio.get_running_loop().create_task(link.serve())
            return link

    @property
    def authority(self) -> str:
        return self.host if self.port == 443 else f"{self.host}:{self.port}"

    async def exchange(self, req: HttpRequest, on_end: End | None = None) -> HttpResponse:
        """`req` (its body read whole) sent to Cursor on this connection, the answer relayed as it
        comes (see `relay.relay`: the same answer shape, over HTTP/2)."""
        started = time.perf_counter()

        def ended(status: int, complete: bool) -> None:
            if on_end is not None:
                on_end(status, complete, (time.perf_counter() - started) * 1000)

        pseudo = [(":method", req.method), (":scheme", "https"), (":path", req.path)]
        try:
            up = await self.open(
                h2_request_headers([*pseudo, *req.headers], self.authority), end=not req.body
            )
            if req.body:
                await up.send(req.body)
                await up.end()
            headers = await up.response()
        except (Unreachable, Gone) as exc:
            ended(502, False)
            return HttpResponse(
                502, [(b"content-type", b"application/json")], unary_error("unavailable", f"glider: {exc}")
            )
        out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in h2_response_headers(headers)]

        async def body() -> AsyncIterator[bytes]:
            complete = False
            try:
                while (chunk := await up.read()) is not None:
                    yield chunk
                complete = True
            except Gone:
                pass
            finally:
                if not complete:
                    up.reset(h2.errors.ErrorCodes.CANCEL)
                ended(up.status, complete)

        return HttpResponse(up.status, out, stream=body())

    async def close(self) -> None:
        if self._link is not None:
            await self._link.close()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5)


def unavailable_headers() -> Headers:
    return [("content-type", "application/json")]


async def pipe(
    client: Stream,
    origin: OriginH2,
    authority: str,
    *,
    head: bytes = b"",
    ended: bool = False,
    watch: Watch | None = None,
    on_end: End | None = None,
) -> None:
    """Relays `client` to Cursor and back (see the module contract); `ended`: its body is all in `head`."""
    started = time.perf_counter()
    status, complete = 502, False
    try:
        try:
            up = await origin.open(h2_request_headers(client.headers, authority))
        except Unreachable as exc:
            body = unary_error("unavailable", f"glider could not reach {exc}")
            await client.respond(502, unavailable_headers())
            await client.send(body)
            await client.end()
            return
        pump = asyncio.get_running_loop().create_task(_upward(client, up, head, ended))
        try:
            headers = await up.response()
            status = up.status
            await client.respond(status, h2_response_headers(headers))
            chunks = _chunks(up)
            if watch is not None:
                chunks = watch(chunks)
            async for chunk in chunks:
                await client.send(chunk)
            await client.end(h2_response_headers(up.trailers) or None)
            complete = True
        except Gone:
            if client.gone is None:  # Cursor's side went: so does the client's stream
                client.reset(up.gone.code if up.gone is not None else h2.errors.ErrorCodes.CANCEL)
            up.reset(h2.errors.ErrorCodes.CANCEL)
        finally:
            if not pump.done():
                pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Gone):
                await pump
    finally:
        if on_end is not None:
            on_end(status, complete, (time.perf_counter() - started) * 1000)


async def _upward(client: Stream, up: Stream, head: bytes, ended: bool) -> None:
    """The client's request body (after `head`) and its trailers, to Cursor as each chunk comes."""
    try:
        if head:
            await up.send(head)
        if not ended:
            while (chunk := await client.read()) is not None:
                await up.send(chunk)
        await up.end(h2_response_headers(client.trailers) or None)
        await client.wait_gone()  # the client's stop after its body ended still stops Cursor's stream
    except Gone:
        pass
    if client.gone is not None:
        up.reset(h2.errors.ErrorCodes.CANCEL)


async def _chunks(up: Stream) -> AsyncIterator[bytes]:
    while (chunk := await up.read()) is not None:
        yield chunk
