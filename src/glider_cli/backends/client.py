"""The one seam between the proxy and the network: `Upstream.send(...) -> UpstreamResponse`.

Contract:
- `send` returns once the status line and headers have arrived; the body is read with
  `aiter_bytes()` (chunks as they arrive, for SSE) or `read()`, and `aclose()` always releases it
  (closing the connection when the body was not read to the end, which cancels the upstream work).
- Failures before the headers arrive are mapped to the GliderError tree: a refused or reset
  connection, a failed TLS handshake or a proxy that refuses is `BackendError`; a connect, write or
  read timeout is `BackendTimeout`. Failures while reading the body raise the same types, so the
  proxy can tell "before first byte" from "mid-stream" by where it is.
- Proxy variables are never read here: an upstream is built with the route of every origin,
  decided once from the config and the environ (`backends.network`), so a `*_PROXY` variable cannot
  loop traffic back into Glider and loopback backends never go through a proxy.
- Timeouts are the backend's (`config.settings.Timeout`), per request; what each phase bounds is in
  `backends.aiohttp_upstream`'s contract.

The one implementation is `backends.aiohttp_upstream.AiohttpUpstream(routes)` (aiohttp, for every
backend); this interface never imports it: the app picks it where it is assembled (`server.app`).
Tests that must inject an upstream pass any `Upstream` to `create_app(upstream=...)`; every other
test runs this client against real servers on 127.0.0.1.

`OnDemand(make)` is an Upstream that can be handed to the proxy before there is an event loop (when
the app is built): `open()` (the lifespan calls it) or the first `send` builds the client with `make()`
inside the running loop; `aclose()` closes it, and a later `send` builds a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from glider_cli.config.settings import Timeout


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


def host_of(url: str) -> str:
    """`host[:port]` of an absolute URL, for messages."""
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].rsplit("@", 1)[-1]


class OnDemand:
    """An Upstream built inside the running loop when first needed (see the module contract)."""

    def __init__(self, make: Callable[[], Upstream]) -> None:
        self._make = make
        self._client: Upstream | None = None

    def open(self) -> Upstream:
        if self._client is None:
            self._client = self._make()
        return self._client

    def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: Timeout
    ) -> Coroutine[Any, Any, UpstreamResponse]:
        # No coroutine of its own: the client's `send` is what the caller awaits.
        return (self._client or self.open()).send(method, url, headers, body, timeout)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
