"""`NativeUpstream`: a small HTTP/1.1 client on asyncio protocols and httptools, for the proxy's hot path.

Why it exists: a proxied request pays its client library twice (request out, response in). Measured
on `glider serve` (bench/bench_proxy.py), aiohttp spent ~380 µs between `send` and the bytes leaving
the socket; this client writes the request in the same call, from one buffer, with no per-request
objects beyond the response. It does only what an upstream of a model proxy needs.

Contract (the `backends.client` seam's, plus):
- One request at a time per connection (no pipelining); keep-alive connections are pooled per
  (scheme, host, port), newest first, at most `limit` per pool; a caller waits up to `Timeout.pool`
  for a free slot. An idle connection is dropped after `keepalive_expiry` seconds or as soon as the
  server closes it. A request that fails on a *reused* connection before any response byte arrived
  (the server closed it as we wrote) is retried once on a new connection; nothing else is retried.
  Bytes that arrive on an idle pooled connection (a server's 408 before it hangs up) drop it.
- Requests carry `Host`, the given headers and `Content-Length` (hop-by-hop framing headers given by
  the caller are dropped: the client frames the body). A header name or value with CR/LF, or one
  that is not latin-1, is refused as `BackendError` before anything is sent.
- Responses: Content-Length, chunked and close-delimited bodies; 1xx interim responses skipped;
  `gzip`/`deflate` bodies are decoded (the proxy asks for `identity`, so this is the exception), any
  other content-encoding is a `BackendError`. A connection goes back to the pool only when its
  response was read to the end and both sides allow keep-alive; `aclose()` on an unfinished
  response closes the connection, which is what tells the upstream to stop generating (so does a
  response dropped without `aclose()`, when it is collected).
- Timeouts: `connect` bounds the TCP (and TLS) handshake, `read` each wait for the head or the next
  body bytes (`BackendTimeout`); a cancelled send or read closes the connection.
- Backpressure: a consumer that stops reading pauses the socket once `high_water` bytes wait.
- `https://` uses `ssl.create_default_context()` (the system's trust store) unless given a context.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as ssl_mod
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})


class _Lost(BackendError):
    """The connection closed or broke; `got_bytes` says whether any response byte had arrived."""

    def __init__(self, message: str, *, got_bytes: bool) -> None:
        super().__init__(message)
        self.got_bytes = got_bytes


class _Conn(asyncio.Protocol):
    """One HTTP/1.1 connection: the parser's callbacks fill the current response's state."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: _Pool, high_water: int) -> None:
        self.loop = loop
        self.pool = pool
        self.high_water = high_water
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.idle_since = 0.0
        self.in_use = True  # from connect (or from leaving the pool) until released to the pool
        self.reset()

    def reset(self) -> None:
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.body: deque[bytes] = deque()
        self.buffered = 0
        self.complete = False
        self.keep_alive = False
        self.got_bytes = False
        self.framed = False  # Content-Length or chunked: the end is known without EOF
        self.error: BackendError | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass

    def data_received(self, data: bytes) -> None:
        if not self.in_use:
            # Bytes on an idle pooled connection (a server's 408 before it closes): never a reply to
            # a request of ours. Drop the connection so no later request reads them as its answer.
            self.abort()
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(BackendError(f"upstream sent a malformed HTTP response: {exc}"))
            self.abort()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.complete:
            return
        if self.head_done and not self.framed and exc is None:
            self.complete = True  # a close-delimited body ends here
            self._wake()
            return
        reason = f"{type(exc).__name__}: {exc}" if exc else "the connection was closed"
        self._fail(_Lost(f"upstream closed the connection ({reason})", got_bytes=self.got_bytes))

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            self.raw_headers = []  # interim response: the real one follows
            return
        self.status = status
        for name, value in self.raw_headers:
            n = name.lower()
            if n == b"content-length" or (n == b"transfer-encoding" and b"chunked" in value.lower()):
                self.framed = True
        self.head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)
        if self.buffered > self.high_water and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if not self.head_done:
            return  # the end of a 1xx
        self.complete = True
        # llhttp answers this only inside the callback (it resets once the message is done).
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    # -- the response side
    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _fail(self, error: BackendError) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _timed_out(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(BackendTimeout("upstream stopped sending (read timeout)"))

    async def wait(self, timeout: float) -> None:
        """Wait for parser progress (head, body bytes, the end) or an error, at most `timeout`."""
        waiter = self.loop.create_future()
        self.waiter = waiter
        handle = self.loop.call_later(timeout, self._timed_out, waiter)
        try:
            await waiter
        finally:
            handle.cancel()
            self.waiter = None

    def take(self) -> bytes:
        chunks = self.body
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self.buffered = 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        return data

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self.error is None

    def abort(self) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.transport is not None:
            self.transport.abort()


class _Pool:
    """Connections to one (scheme, host, port)."""

    def __init__(self, limit: int) -> None:
        self.idle: list[_Conn] = []
        self.count = 0
        self.limit = limit
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.members: set[_Conn] = set()

    def forget(self, conn: _Conn) -> None:
        if conn in self.members:
            self.members.discard(conn)
            self.count -= 1
            if conn in self.idle:
                self.idle.remove(conn)
            self._notify()

    def _notify(self) -> None:
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def release(self, conn: _Conn, now: float) -> None:
        conn.idle_since = now
        conn.in_use = False
        self.idle.append(conn)
        self._notify()


class _Target:
    __slots__ = ("host", "key", "port", "server_hostname", "tls")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendError(f"unsupported upstream URL {url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.server_hostname = self.host if self.tls else None
        self.key = (parts.scheme, self.host, self.port)


class _NativeResponse:
    def __init__(self, conn: _Conn, read_timeout: float) -> None:
        self._conn = conn
        self._read_timeout = read_timeout
        self.status = conn.status
        self.raw_headers = conn.raw_headers
        self._headers: list[tuple[str, str]] | None = None
        self._released = False
        self._decoder: zlib._Decompress | None = None
        for k, v in conn.raw_headers:
            if k.lower() == b"content-encoding":
                enc = v.strip().lower()
                if enc in (b"gzip", b"x-gzip", b"deflate"):
                    self._decoder = zlib.decompressobj(47)  # zlib or gzip header, detected
                elif enc and enc != b"identity":
                    conn.abort()
                    raise BackendError(f"upstream answered with unsupported encoding {enc.decode()!r}")

    @property
    def headers(self) -> list[tuple[str, str]]:
        if self._headers is None:
            self._headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in self.raw_headers]
        return self._headers

    async def _next(self) -> bytes | None:
        """The bytes that arrived since the last call (waiting if none), or None at the end."""
        conn = self._conn
        while True:
            if conn.body:
                data = conn.take()
                return self._decoder.decompress(data) if self._decoder is not None else data
            if conn.complete:
                return None
            if conn.error is not None:
                error = conn.error
                conn.abort()
                if isinstance(error, _Lost):
                    raise BackendError(f"upstream stream broke: {error.message}")
                raise error
            try:
                await conn.wait(self._read_timeout)
            except BaseException:
                conn.abort()
                raise

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        while True:
            data = await self._next()
            if data is None:
                break
            if data:
                yield data
        if self._decoder is not None:
            tail = self._decoder.flush()
            if tail:
                yield tail

    async def read(self) -> bytes:
        conn = self._conn
        if conn.complete and self._decoder is None:
            return conn.take()  # the whole body is here already (the usual case for a small reply)
        parts = [chunk async for chunk in self.aiter_bytes()]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def __del__(self) -> None:
        # A response dropped without aclose() (a caller's bug) must not keep its pool slot forever.
        if not self._released and not self._conn.closed:
            with contextlib.suppress(Exception):
                self._conn.abort()

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        conn = self._conn
        if conn.reusable():
            conn.reset()
            conn.pool.release(conn, time.monotonic())
        elif not conn.closed:
            # Not read to the end (or not reusable): drop it, so the upstream stops generating.
            conn.abort()


class NativeUpstream:
    """The default upstream client; see the module contract. Build it inside the running loop."""

    def __init__(
        self,
        *,
        limit: int = 256,
        keepalive_expiry: float = 15.0,
        high_water: int = 1 << 20,
        ssl_context: ssl_mod.SSLContext | None = None,
    ) -> None:
        self._limit = limit
        self._expiry = keepalive_expiry
        self._high_water = high_water
        self._ssl = ssl_context
        self._pools: dict[tuple[str, str, int], _Pool] = {}
        self._targets: dict[str, _Target] = {}

    def _target(self, url: str) -> tuple[_Target, str]:
        """(where to connect, the request target) for an absolute URL."""
        scheme_end = url.find("://")
        path_start = url.find("/", scheme_end + 3) if scheme_end >= 0 else -1
        origin = url if path_start < 0 else url[:path_start]
        target = self._targets.get(origin)
        if target is None:
            target = _Target(origin)
            if len(self._targets) > 64:
                self._targets.clear()
            self._targets[origin] = target
        return target, "/" if path_start < 0 else url[path_start:]

    def _ssl_context(self) -> ssl_mod.SSLContext:
        if self._ssl is None:
            self._ssl = ssl_mod.create_default_context()
        return self._ssl

    async def _connect(self, target: _Target, pool: _Pool, timeout: Timeout) -> _Conn:
        loop = asyncio.get_running_loop()
        conn = _Conn(loop, pool, self._high_water)
        pool.members.add(conn)
        pool.count += 1
        try:
            async with asyncio.timeout(timeout.connect):
                # uvloop may call connection_made after this returns: take the transport from here.
                transport, _ = await loop.create_connection(
                    lambda: conn,
                    target.host,
                    target.port,
                    ssl=self._ssl_context() if target.tls else None,
                    server_hostname=target.server_hostname,
                )
        except TimeoutError as exc:
            pool.forget(conn)
            raise BackendTimeout(f"upstream {target.host}:{target.port} timed out connecting") from exc
        except OSError as exc:
            pool.forget(conn)
            raise BackendError(f"upstream {target.host}:{target.port} refused the connection: {exc}") from exc
        except BaseException:
            pool.forget(conn)
            if conn.transport is not None:
                conn.transport.abort()
            raise
        conn.transport = transport
        return conn

    async def _acquire(self, target: _Target, timeout: Timeout) -> tuple[_Conn, bool]:
        """A connection for one request and whether it was reused from the pool."""
        pool = self._pools.get(target.key)
        if pool is None:
            pool = self._pools[target.key] = _Pool(self._limit)
        now = time.monotonic()
        while True:
            while pool.idle:
                conn = pool.idle.pop()
                if conn.closed or now - conn.idle_since > self._expiry:
                    conn.abort()
                    continue
                conn.in_use = True
                return conn, True
            if pool.count < pool.limit:
                return await self._connect(target, pool, timeout), False
            waiter = asyncio.get_running_loop().create_future()
            pool.waiters.append(waiter)
            try:
                async with asyncio.timeout(timeout.pool):
                    await waiter
            except TimeoutError as exc:
                raise BackendTimeout(f"no free connection to upstream {target.host} (pool timeout)") from exc
            now = time.monotonic()

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> _NativeResponse:
        target, path = self._target(url)
        head = _head(method, path, target, headers, len(body))
        for attempt in (1, 2):
            conn, reused = await self._acquire(target, timeout)
            try:
                return await self._exchange(conn, head, body, timeout)
            except _Lost as exc:
                if reused and not exc.got_bytes and attempt == 1:
                    continue  # the server closed an idle connection as we wrote: once more, fresh
                raise BackendError(f"upstream {target.host} failed: {exc.message}") from None
        raise AssertionError("unreachable")

    async def _exchange(self, conn: _Conn, head: bytes, body: bytes, timeout: Timeout) -> _NativeResponse:
        transport = conn.transport
        assert transport is not None
        try:
            if len(body) < 65536:
                transport.write(head + body)
            else:
                transport.writelines((head, body))
            while not conn.head_done:
                if conn.error is not None:
                    raise conn.error
                await conn.wait(timeout.read)
        except BackendTimeout:
            conn.abort()
            raise BackendTimeout("upstream timed out before answering") from None
        except BaseException:
            conn.abort()
            raise
        return _NativeResponse(conn, timeout.read)

    async def aclose(self) -> None:
        for pool in self._pools.values():
            for conn in list(pool.members):
                conn.abort()
        self._pools.clear()


def _head(method: str, path: str, target: _Target, headers: Mapping[str, str], length: int) -> bytes:
    host = target.host if ":" not in target.host else f"[{target.host}]"
    if target.port != (443 if target.tls else 80):
        host = f"{host}:{target.port}"
    parts = [method, " ", path, " HTTP/1.1\r\nhost: ", host, "\r\n"]
    lines = 2
    for k, v in headers.items():
        if k.lower() not in _FRAMING:
            parts += (k, ": ", v, "\r\n")
            lines += 1
    text = "".join(parts)
    # Exactly one CRLF per line, no other CR or LF anywhere: no header can smuggle in another.
    if text.count("\r") != lines or text.count("\n") != lines or " " in path:
        raise BackendError("refusing to send a request line or header with a line break in it")
    try:
        return f"{text}content-length: {length}\r\n\r\n".encode("latin-1")
    except UnicodeEncodeError:
        raise BackendError("refusing to send a header that is not latin-1") from None
