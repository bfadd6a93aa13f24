"""The front door: an HTTP CONNECT proxy on 127.0.0.1, run on `glider serve`'s own event loop.

Per CONNECT `host:port`:
- a host no `cursor.hosts` pattern matches: a blind tunnel (bytes both ways, no TLS termination: the
  client sees the real server's certificate); `cursor.resolve` applies;
- an intercepted host: TLS terminated with a leaf certificate of Glider's CA (`ca`). ALPN offers
  `h2` and `http/1.1` when Glider can speak HTTP/2 end to end (an `H2Server` is given and the host
  itself agrees to `h2`: `Network.speaks_h2`), else `http/1.1` only. HTTP/1.1 (the RunSSE +
  BidiAppend transport) is read request by request with h11 and each request handed to the
  `Handler` (`exchange`), whose answer is written back chunk by chunk as it comes. HTTP/2
  (`AgentService/Run` and the unary calls) goes to the `H2Server` (`h2_front`).
Anything but CONNECT is answered 405. A request body over `MAX_BODY` is answered 413. At most
`max_connections` client connections are open at once (tunnels included): a CONNECT past that is
answered 503 and closed, so the memory of what is open stays bounded (per HTTP/2 connection by its
settings, see `h2link`).

Why not mitmproxy: its last release for Python 3.11 (11.0.2) pins h11 <= 0.14 (below httpx's
httpcore, and with the request-smuggling fix of 0.16 missing), cryptography < 44.1 and tornado <=
6.4.2; the releases that lift the pins need Python 3.12. So the pieces are used directly: TLS from
the standard library, HTTP/1.1 from h11, the upstream side from aiohttp, certificates from
cryptography.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import h11

from glider_cli.cursor.ca import ALPN, HTTP1, CertAuthority
from glider_cli.cursor.upstream import Network
from glider_cli.values import Frozen

MAX_BODY = 64 * 1024 * 1024
MAX_CONNECTIONS = 512
log = logging.getLogger(__name__)
READ = 65536


class HttpRequest(Frozen):
    host: str
    port: int
    method: str
    path: str
    headers: list[tuple[str, str]]  # names lower-case, in order
    body: bytes
    origin: Origin | None  # the way to Cursor of the client's HTTP/2 connection; None: HTTP/1.1

    def __init__(
        self,
        host: str,
        port: int,
        method: str,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        origin: Origin | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.host = host
        s.port = port
        s.method = method
        s.path = path
        s.headers = headers
        s.body = body
        s.origin = origin

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None


class HttpResponse:
    """An answer: a whole body, or `stream` (chunks written as they come); `close` runs at the end."""

    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        body: bytes = b"",
        stream: AsyncIterator[bytes] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.stream = stream
        self.close = close

    def with_stream(self, stream: AsyncIterator[bytes]) -> HttpResponse:
        """This answer with `stream` for its own (one that passes its chunks on: a watch of them)."""
        return HttpResponse(self.status, self.headers, self.body, stream, self.close)


class Origin(Protocol):
    """Sends a request to Cursor on the transport its client used (`origin_h2.OriginH2`: HTTP/2)."""

    async def exchange(
        self, request: HttpRequest, on_end: Callable[[int, bool, float], None] | None
    ) -> HttpResponse: ...


class Handler(Protocol):
    async def handle(self, request: HttpRequest) -> HttpResponse: ...


class H2Server(Protocol):
    """Serves one decrypted client connection that chose `h2` (`h2_front.H2Front`)."""

    async def serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None: ...

    async def close(self) -> None: ...


def intercepted(host: str, patterns: tuple[str, ...]) -> bool:
    """`host` matches one of the glob patterns (`*` also matches across dots)."""
    h = host.lower().rstrip(".")
    return any(fnmatch.fnmatchcase(h, p) for p in patterns)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(READ):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 2)


class FrontDoor:
    def __init__(
        self,
        patterns: tuple[str, ...],
        ca: CertAuthority,
        network: Network,
        handler: Handler,
        h2: H2Server | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.max_connections = max_connections
        self.patterns = patterns
        self.ca = ca
        self.network = network
        self.handler = handler
        self.h2 = h2
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._client, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        if self.h2 is not None:
            await self.h2.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if len(self._tasks) > self.max_connections:
                conn = h11.Connection(h11.SERVER)
                if isinstance(await _next(conn, reader), h11.Request):
                    await _send_simple(conn, writer, 503, b"glider's Cursor proxy: too many connections\n")
                return
            await self._connect(reader, writer)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, h11.ProtocolError):
            pass
        finally:
            self._tasks.discard(task)
            await _close(writer)

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        event = await _next(conn, reader)
        if not isinstance(event, h11.Request):
            return
        if event.method != b"CONNECT":
            await _send_simple(conn, writer, 405, b"glider's Cursor proxy takes CONNECT only\n")
            return
        target = event.target.decode("latin-1")
        host, _, port_s = target.rpartition(":")
        host = host.strip("[]")
        if not host or not port_s.isdigit():
            await _send_simple(conn, writer, 400, b"CONNECT needs host:port\n")
            return
        port = int(port_s)
        if not intercepted(host, self.patterns):
            await self._tunnel(conn, reader, writer, host, port)
            return
        # Asked before the 200: once it is sent the client's ClientHello must find the TLS layer.
        end_to_end = self.h2 is not None and await self.network.speaks_h2(host, port)
        writer.write(conn.send(h11.Response(status_code=200, headers=[], reason=b"Connection Established")))
        await writer.drain()
        rest = conn.trailing_data[0]
        if rest:  # a client that sent its ClientHello before reading our 200: not supported, close
            return
        await writer.start_tls(self.ca.context_for(host, ALPN if end_to_end else HTTP1))
        ssl_obj = writer.get_extra_info("ssl_object")
        if self.h2 is not None and ssl_obj is not None and ssl_obj.selected_alpn_protocol() == "h2":
            await self.h2.serve(reader, writer, host, port)
            return
        await self._serve_http1(reader, writer, host, port)

    async def _tunnel(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
    ) -> None:
        try:
            up_r, up_w = await self.network.open_tcp(host, port)
        except (OSError, TimeoutError):
            await _send_simple(conn, writer, 502, b"cannot reach " + host.encode() + b"\n")
            return
        writer.write(conn.send(h11.Response(status_code=200, headers=[], reason=b"Connection Established")))
        await writer.drain()
        rest = conn.trailing_data[0]
        if rest:
            up_w.write(rest)
        try:
            await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))
        finally:
            await _close(up_w)

    async def _serve_http1(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
        while True:
            event = await _next(conn, reader)
            if not isinstance(event, h11.Request):
                return
            headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers]
            body = bytearray()
            too_big = False
            while True:
                ev = await _next(conn, reader)
                if isinstance(ev, h11.Data):
                    if len(body) + len(ev.data) > MAX_BODY:
                        too_big = True
                    else:
                        body += ev.data
                elif isinstance(ev, h11.EndOfMessage):
                    break
                else:
                    return
            if too_big:
                await _send_simple(conn, writer, 413, b"request body too large\n")
                return
            req = HttpRequest(
                host, port, event.method.decode(), event.target.decode("latin-1"), headers, bytes(body)
            )
            try:
                resp = await self.handler.handle(req)
            except Exception as exc:  # a bug here must not take the connection down unanswered
                log.exception("cursor proxy: %s %s failed", req.method, req.path)
                msg = f'{{"code":"internal","message":"glider: {exc.__class__.__name__}"}}'.encode()
                resp = HttpResponse(502, [(b"content-type", b"application/json")], msg)
            await self._write(conn, writer, resp)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _write(self, conn: h11.Connection, writer: asyncio.StreamWriter, resp: HttpResponse) -> None:
        try:
            writer.write(conn.send(h11.Response(status_code=resp.status, headers=resp.headers)))
            if resp.stream is None:
                if resp.body:
                    writer.write(conn.send(h11.Data(data=resp.body)))
            else:
                await writer.drain()
                async for chunk in resp.stream:
                    if chunk:
                        writer.write(conn.send(h11.Data(data=chunk)))
                        await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
        finally:
            if resp.stream is not None:
                with contextlib.suppress(Exception):
                    await resp.stream.aclose()  # type: ignore[attr-defined]
            if resp.close is not None:
                await resp.close()


async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(READ)
            conn.receive_data(data)
            continue
        return event


async def _send_simple(conn: h11.Connection, writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"text/plain"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
    writer.write(conn.send(h11.Data(data=body)))
    writer.write(conn.send(h11.EndOfMessage()))
    await writer.drain()
