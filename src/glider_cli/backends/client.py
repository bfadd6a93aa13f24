"""The one seam between the proxy and the network: `Upstream.send(...) -> UpstreamResponse`.

Contract:
- `send` returns once the status line and headers have arrived; the body is read with
  `aiter_bytes()` (chunks as they arrive, for SSE) or `read()`, and `aclose()` always releases it
  (closing the connection when the body was not read to the end, which cancels the upstream work).
- Failures before the headers arrive are mapped to the GliderError tree: a refused or reset
  connection is `BackendError`, a connect/read timeout is `BackendTimeout`. Failures while reading the
  body raise the same types, so the proxy can tell "before first byte" from "mid-stream" by where it is.
- Both implementations ignore proxy environment variables (`trust_env=False`) so a `*_PROXY`
  variable cannot loop traffic back into Glider, and use the backend's explicit timeouts (connect
  short, read long: the per-read timeout bounds the gap between chunks, not the whole generation).
- The aiohttp client keeps no cookie jar: a `Set-Cookie` reaches the client in the response headers
  and is never sent upstream again by Glider on anyone's behalf.
- Bodies are sent as given and responses are returned decoded; the proxy asks upstreams for
  `identity` encoding, so decoding is the exception.

`backends.native.NativeUpstream` is the default: chosen by measurement (bench/bench_proxy.py), it
adds ~25 µs between `send` and the request leaving the socket where aiohttp added ~380 µs.
`AiohttpUpstream` and `HttpxUpstream` stay selectable (`create_app(upstream_kind=...)`) and pass the
same tests; `HttpxUpstream` takes an `httpx` transport, the seam tests use for `httpx.MockTransport`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

if TYPE_CHECKING:
    import aiohttp
    import httpx


class UpstreamResponse(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> list[tuple[str, str]]: ...

    @property
    def raw_headers(self) -> Sequence[tuple[bytes, bytes]]:
        """The headers as received (bytes), for passing on without decoding and encoding them again."""
        ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def read(self) -> bytes: ...

    async def aclose(self) -> None: ...


class Upstream(Protocol):
    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> UpstreamResponse: ...

    async def aclose(self) -> None: ...


# ---------------------------------------------------------------------------------------- aiohttp


class _AiohttpResponse:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.headers = [(k, v) for k, v in resp.headers.items()]
        self.raw_headers = resp.raw_headers
        self._done = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        import aiohttp

        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
            self._done = True
        except TimeoutError as exc:
            raise BackendTimeout("upstream stopped sending (read timeout)") from exc
        except aiohttp.ClientError as exc:
            raise BackendError(f"upstream stream broke: {type(exc).__name__}: {exc}") from exc

    async def read(self) -> bytes:
        import aiohttp

        try:
            data = await self._resp.read()
        except TimeoutError as exc:
            raise BackendTimeout("upstream body timed out") from exc
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


class AiohttpUpstream:
    """aiohttp-based upstream client. Build it inside the running event loop (the lifespan does)."""

    def __init__(self, *, limit: int = 256) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            # A proxy keeps no cookies: one client's Set-Cookie must never ride on another's request
            # (and skipping the jar is measurably cheaper per request).
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            auto_decompress=True,
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self._timeouts: dict[Timeout, aiohttp.ClientTimeout] = {}

    def _timeout(self, t: Timeout) -> aiohttp.ClientTimeout:
        ct = self._timeouts.get(t)
        if ct is None:
            ct = self._aiohttp.ClientTimeout(
                total=None, connect=t.pool + t.connect, sock_connect=t.connect, sock_read=t.read
            )
            self._timeouts[t] = ct
        return ct

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> UpstreamResponse:
        aiohttp = self._aiohttp
        try:
            resp = await self._session.request(
                method,
                url,
                headers=dict(headers),
                data=body if body else None,
                timeout=self._timeout(timeout),
                allow_redirects=False,
            )
        except TimeoutError as exc:
            raise BackendTimeout(f"upstream {_host(url)} timed out before answering") from exc
        except aiohttp.ClientConnectorError as exc:
            raise BackendError(f"upstream {_host(url)} refused the connection: {exc.os_error}") from exc
        except aiohttp.ClientError as exc:
            raise BackendError(f"upstream {_host(url)} failed: {type(exc).__name__}: {exc}") from exc
        return _AiohttpResponse(resp)

    async def aclose(self) -> None:
        await self._session.close()


# ------------------------------------------------------------------------------------------ httpx


class _HttpxResponse:
    def __init__(self, resp: httpx.Response) -> None:
        self._resp = resp
        self.status = resp.status_code
        self.headers = [(k, v) for k, v in resp.headers.multi_items()]
        self.raw_headers = resp.headers.raw

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        import httpx

        try:
            async for chunk in self._resp.aiter_bytes():
                yield chunk
        except httpx.TimeoutException as exc:
            raise BackendTimeout("upstream stopped sending (read timeout)") from exc
        except httpx.HTTPError as exc:
            raise BackendError(f"upstream stream broke: {type(exc).__name__}: {exc}") from exc

    async def read(self) -> bytes:
        import httpx

        try:
            return await self._resp.aread()
        except httpx.TimeoutException as exc:
            raise BackendTimeout("upstream body timed out") from exc
        except httpx.HTTPError as exc:
            raise BackendError(f"upstream body broke: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._resp.aclose()


class HttpxUpstream:
    """httpx-based upstream client; `transport` is the test seam (e.g. httpx.MockTransport)."""

    def __init__(self, *, transport: httpx.AsyncBaseTransport | None = None, limit: int = 256) -> None:
        from http.cookiejar import CookieJar, DefaultCookiePolicy

        import httpx

        self._httpx = httpx
        # A proxy shared by many clients must not keep one client's Set-Cookie and replay it for another:
        # a jar whose policy accepts no domain stores nothing.
        no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
        self._client = httpx.AsyncClient(
            transport=transport,
            cookies=no_cookies,
            trust_env=False,
            timeout=httpx.Timeout(connect=5.0, read=600.0, write=60.0, pool=10.0),
            limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
            follow_redirects=False,
        )

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> UpstreamResponse:
        httpx = self._httpx
        t = httpx.Timeout(connect=timeout.connect, read=timeout.read, write=timeout.write, pool=timeout.pool)
        request = self._client.build_request(method, url, headers=dict(headers), content=body, timeout=t)
        try:
            resp = await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise BackendTimeout(f"upstream {_host(url)} timed out before answering") from exc
        except httpx.ConnectError as exc:
            raise BackendError(f"upstream {_host(url)} refused the connection: {exc}") from exc
        except httpx.HTTPError as exc:
            raise BackendError(f"upstream {_host(url)} failed: {type(exc).__name__}: {exc}") from exc
        return _HttpxResponse(resp)

    async def aclose(self) -> None:
        await self._client.aclose()


def _host(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0]


def make_upstream(kind: str = "native", **kwargs: Any) -> Upstream:
    """Build an upstream client: "native" (the default, backends.native), "aiohttp" or "httpx"."""
    if kind == "native":
        from glider_cli.backends.native import NativeUpstream

        return NativeUpstream(**kwargs)
    if kind == "httpx":
        return HttpxUpstream(**kwargs)
    if kind == "aiohttp":
        return AiohttpUpstream(**kwargs)
    raise ValueError(f"unknown upstream client {kind!r}")
