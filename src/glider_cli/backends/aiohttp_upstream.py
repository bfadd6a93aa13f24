"""`AiohttpUpstream`: the upstream client of `glider serve` (the `backends.client` seam, on aiohttp).

Contract (the seam's, plus):
- One `aiohttp.ClientSession` per app, built inside the running loop (the lifespan does) and closed
  with it. Its connector pools keep-alive connections per (host, port, TLS context, proxy), at most
  `limit` in all and per host.
- Routes (`backends.network.routes`): each request goes through its origin's forward proxy, if any
  (https:// targets through a CONNECT tunnel, with credentials from the proxy URL's user info), and
  trusts its origin's `ca_file` on top of the system store. aiohttp's own `trust_env` stays off: it
  would read the environment (and ~/.netrc, whose passwords it would send upstream) on every request
  in a worker thread; Glider decides once, when the app is built.
- Timeouts (`config.settings.Timeout`, the backend's, per request), as aiohttp can bound each phase:
    connect -> `ClientTimeout.sock_connect`: opening one new connection (TCP and the TLS handshake;
               to the proxy when there is one).
    pool    -> `ClientTimeout.connect = pool + connect`: aiohttp bounds the wait for a free pooled
               connection and the opening of a new one (DNS, proxy CONNECT) together, with one
               timer; `pool` is the share of that bound the wait may take, not a bound of its own.
    write   -> each write of a piece (at most 256 KiB) of the request body, which waits while the
               socket buffers are full: the body is an aiohttp Payload that writes it piece by piece
               under one `asyncio.timeout` moved on after each piece. So a slow upload that keeps
               moving is fine, and an upstream that stops taking the body fails after `write` s;
               aiohttp starts its read timer only once the body is written, so without this such an
               upstream would hold the request for ever.
    read    -> `ClientTimeout.sock_read`: from the end of the body to the first response bytes, then
               each gap between body chunks (a long generation is fine while it keeps streaming).
    total   -> none: no bound on a whole exchange.
  Each expiry is a `BackendTimeout` that names its phase. aiohttp fires its own timers (connect, pool,
  read) at the next whole second when they are over 5 s (`ceil_threshold`), to batch its wake-ups.
- Headers are str holding the wire's bytes decoded as latin-1 (as ASGI gives them, and as
  `backends.headers` writes the configured ones). aiohttp writes str as UTF-8, so a non-ASCII value is
  re-encoded to leave as the same bytes it arrived as; one whose bytes are not UTF-8, and any CR, LF or
  NUL in a name or value, is refused (`BackendError`) before a connection is opened.
- No cookie jar (a `Set-Cookie` reaches the client, and is never replayed by Glider on anyone's
  behalf), no redirects followed, no User-Agent/Accept/Accept-Encoding/Content-Type of aiohttp's own.
  Responses are decoded (gzip/deflate, br/zstd when their packages are installed; the proxy asks
  for `identity`, so that is the exception); any other content-encoding is a `BackendError`, never
  bytes passed on as if they were plain.
- A 408 answer is sent once more on a fresh connection (RFC 9110 §15.5.9 allows repeating it): it is
  what a server sends on an idle keep-alive connection before it hangs up, and aiohttp would take
  those bytes as the answer to the next request on that connection. Nothing else is retried.
- A response dropped without `aclose()` (a caller's bug) closes its connection when collected, so it
  does not hold a pool slot for ever (aiohttp's own response stays referenced by its connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from aiohttp.abc import AbstractStreamWriter
from aiohttp.payload import BytesPayload

from glider_cli.backends.client import UpstreamResponse, host_of
from glider_cli.backends.network import STRAIGHT, Route, origin_of, redact
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

_PIECE = 256 * 1024
# The most Timeouts whose aiohttp ClientTimeout is remembered; past it they are forgotten.
_MEMO = 256
# What aiohttp decodes (br and zstd only with their packages; without them it fails on its own).
_DECODED = frozenset({"identity", "gzip", "x-gzip", "deflate", "br", "zstd"})


class _WriteTimeout(TimeoutError):
    """The upstream stopped taking the request body for longer than the write timeout."""


class _Deadline:
    """The write timeout of one body, as `asyncio.timeout` bounds a block (its deadline moved on with
    `move`), for the task that writes it: when the deadline passes, the task is cancelled, and `end`
    turns that cancellation into _WriteTimeout. One timer handle and no state machine: every request's
    body is written under one, where `asyncio.timeout` costs twice as much."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_loop", "_task")

    def __init__(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._loop, self._task = loop, task
        self._cancelling = task.cancelling()  # as asyncio.timeout: a cancel from elsewhere stays one
        self._expired = False
        self._handle = loop.call_at(loop.time() + seconds, self._expire)

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()

    def move(self, seconds: float) -> None:
        """The deadline is now `seconds` from now (unless it passed already)."""
        if not self._expired:
            self._handle.cancel()
            self._handle = self._loop.call_at(self._loop.time() + seconds, self._expire)

    def end(self, exc: BaseException | None) -> None:
        """The bounded block ended, raising `exc` (None: it did not): _WriteTimeout when `exc` is the
        deadline's own cancellation (as `asyncio.timeout` raises TimeoutError then)."""
        self._handle.cancel()
        if (
            self._expired
            and self._task.uncancel() <= self._cancelling
            and isinstance(exc, asyncio.CancelledError)
        ):
            raise _WriteTimeout from None


class _Body(BytesPayload):
    """The request body; each write of it to the socket is bounded by the backend's write timeout."""

    def __init__(self, value: bytes, write_timeout: float) -> None:
        super().__init__(value, content_type=None)
        self._write_timeout = write_timeout

    async def write_with_length(self, writer: AbstractStreamWriter, content_length: int | None) -> None:
        data = self._value if content_length is None else self._value[:content_length]
        seconds = self._write_timeout
        deadline = _Deadline(seconds)
        try:
            if len(data) <= _PIECE:
                await writer.write(data)
            else:
                view = memoryview(data)
                for start in range(0, len(view), _PIECE):
                    deadline.move(seconds)
                    await writer.write(view[start : start + _PIECE])
        except BaseException as exc:
            deadline.end(exc)
            if isinstance(exc, TimeoutError):
                raise _WriteTimeout from None
            raise
        deadline.end(None)

    async def write(self, writer: AbstractStreamWriter) -> None:
        await self.write_with_length(writer, None)


class _Response:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.raw_headers = resp.raw_headers
        self._headers: list[tuple[str, str]] | None = None
        self._done = False  # read to the end, or closed

    @property
    def headers(self) -> list[tuple[str, str]]:
        if self._headers is None:
            self._headers = list(self._resp.headers.items())
        return self._headers

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
            self._done = True
        except TimeoutError as exc:
            raise BackendTimeout("upstream stopped sending (read timeout)") from exc
        except aiohttp.ClientError as exc:
            raise BackendError(f"upstream stream broke: {type(exc).__name__}: {exc}") from exc

    async def read(self) -> bytes:
        try:
            data = await self._resp.read()
        except TimeoutError as exc:
            raise BackendTimeout("upstream body timed out (read timeout)") from exc
        except aiohttp.ClientError as exc:
            raise BackendError(f"upstream body broke: {type(exc).__name__}: {exc}") from exc
        self._done = True
        return data

    async def aclose(self) -> None:
        if self._done:
            self._resp.release()
        else:
            # Not read to the end: drop the connection so the upstream stops generating.
            self._resp.close()
        self._done = True

    def __del__(self) -> None:
        if not self._done:
            with contextlib.suppress(Exception):
                self._resp.close()


def _as_utf8(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers whose latin-1 text aiohttp's UTF-8 writer turns back into the bytes they came as."""
    out = {}
    for k, v in headers.items():
        try:
            out[k.encode("latin-1").decode()] = v.encode("latin-1").decode()
        except UnicodeError:
            raise BackendError(
                f"refusing to send header {k!r}: not the latin-1 text of UTF-8 bytes"
            ) from None
    return out


def _ssl_context(ca_file: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.load_verify_locations(cafile=ca_file)
    return ctx


class AiohttpUpstream:
    """See the module contract. Build it inside the running event loop."""

    def __init__(self, routes: Mapping[str, Route] | None = None, *, limit: int = 256) -> None:
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            # A proxy keeps no cookies: one client's Set-Cookie must never ride on another's request
            # (and skipping the jar is measurably cheaper per request).
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            auto_decompress=True,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        contexts = {r.ca_file: _ssl_context(r.ca_file) for r in (routes or {}).values() if r.ca_file}
        # origin -> the request options of its route; an origin of no backend goes straight.
        self._options: dict[str, dict[str, Any]] = {
            origin: self._request_options(route, contexts) for origin, route in (routes or {}).items()
        }
        self._straight = self._request_options(STRAIGHT, contexts)
        # Each backend's Timeout (by identity: hashing it is not free) -> its aiohttp ClientTimeout.
        self._timeouts: dict[int, tuple[Timeout, aiohttp.ClientTimeout]] = {}

    @staticmethod
    def _request_options(route: Route, contexts: Mapping[str, ssl.SSLContext]) -> dict[str, Any]:
        options: dict[str, Any] = {"allow_redirects": False}
        if route.proxy is not None:
            options["proxy"] = route.proxy
        if route.ca_file is not None:
            options["ssl"] = contexts[route.ca_file]
        return options

    def _timeout(self, t: Timeout) -> aiohttp.ClientTimeout:
        known = self._timeouts.get(id(t))
        if known is not None and known[0] is t:
            return known[1]
        ct = aiohttp.ClientTimeout(
            total=None, connect=t.pool + t.connect, sock_connect=t.connect, sock_read=t.read
        )
        if len(self._timeouts) >= _MEMO:
            self._timeouts.clear()
        self._timeouts[id(t)] = (t, ct)
        return ct

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> UpstreamResponse:
        options = self._options.get(origin_of(url), self._straight)
        text = "".join(headers) + "".join(headers.values())
        if "\r" in text or "\n" in text or "\0" in text:
            raise BackendError("refusing to send a header with a line break or NUL in it")
        if not text.isascii():
            headers = _as_utf8(headers)
        request = self._session.request
        ct = self._timeout(timeout)
        try:
            for retry in (False, True):  # a 408 is asked once more; the second answer is the answer
                resp = await request(
                    method,
                    url,
                    headers=headers,
                    data=_Body(body, timeout.write) if body else None,
                    timeout=ct,
                    **options,
                )
                if resp.status != 408 or retry:
                    break
                resp.close()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _failure(exc, url, options) from exc
        encoding = resp.headers.get("Content-Encoding")
        if encoding is not None and encoding.strip().lower() not in _DECODED:
            resp.close()
            raise BackendError(f"upstream {host_of(url)} answered with content-encoding {encoding!r}")
        return _Response(resp)

    async def aclose(self) -> None:
        await self._session.close()


def _failure(exc: BaseException, url: str, options: Mapping[str, Any]) -> BackendError:
    """The GliderError for a request that failed before its response's headers arrived."""
    if isinstance(exc, _WriteTimeout):
        return BackendTimeout(f"upstream {host_of(url)} stopped taking the request body (write timeout)")
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return BackendTimeout(f"upstream {host_of(url)}: no connection in time (connect + pool timeout)")
    if isinstance(exc, TimeoutError):
        return BackendTimeout(f"upstream {host_of(url)} timed out before answering (read timeout)")
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        proxy = redact(str(options.get("proxy")))
        return BackendError(f"proxy {proxy} for {host_of(url)} refused the connection")
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        proxy = redact(str(options.get("proxy")))
        return BackendError(f"proxy {proxy} answered {exc.status} for {host_of(url)}")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return BackendError(f"upstream {host_of(url)} could not be resolved: {exc.os_error}")
    if isinstance(exc, aiohttp.ClientSSLError):
        return BackendError(f"upstream {host_of(url)}: TLS failed: {exc}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return BackendError(f"upstream {host_of(url)} refused the connection: {exc.os_error}")
    return BackendError(f"upstream {host_of(url)} failed: {type(exc).__name__}: {exc}")
