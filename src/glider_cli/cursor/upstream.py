"""The way out to Cursor's real servers (and to any tunnelled host).

- `Network(settings)`: where a host is (`cursor.resolve`, like curl's `--resolve`: the name stays the
  TLS server name and the Host header, only the address changes), and the TLS context its
  certificates are checked with: the system trust store plus `cursor.upstream_ca_file`.
- `Network.open_tcp(host, port)`: a plain connection (a blind tunnel's other end).
- `Network.open_h2(host, port)`: a TLS connection offering only `h2` (the way to Cursor of a client's
  HTTP/2 connection, `origin_h2`).
- `Network.speaks_h2(host, port)`: whether the host agrees to HTTP/2 (ALPN `h2`), asked once and
  remembered for `ALPN_TTL` seconds (`ALPN_TTL_DOWN` when it could not be reached): the front door
  offers `h2` to a client only when it can speak it end to end.
- `Network.session()`: the aiohttp client an intercepted HTTP/1.1 request is forwarded with (bodies
  relayed as they come: no decompression, no added headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from glider_cli.config.cursor import CursorSettings


def upstream_context(ca_file: str | None, alpn: list[str] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if ca_file:
        ctx.load_verify_locations(cafile=str(Path(ca_file).expanduser()))
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


class _Resolver(AbstractResolver):
    def __init__(self, overrides: dict[str, tuple[str, int]]) -> None:
        self.overrides = overrides
        self._default = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = self.overrides.get(host.lower())
        if found is None:
            return await self._default.resolve(host, port, family)
        addr, p = found
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        return [
            ResolveResult(hostname=host, host=addr, port=p, family=fam, proto=0, flags=socket.AI_NUMERICHOST)
        ]

    async def close(self) -> None:
        await self._default.close()


ALPN_TTL = 300.0
ALPN_TTL_DOWN = 30.0
PROBE_TIMEOUT = 5.0


class Network:
    def __init__(self, settings: CursorSettings) -> None:
        self.settings = settings
        self.resolve = dict(settings.resolve)
        self.tls = upstream_context(settings.upstream_ca_file)
        self.tls_h2 = upstream_context(settings.upstream_ca_file, ["h2"])
        self.tls_probe = upstream_context(settings.upstream_ca_file, ["h2", "http/1.1"])
        self._session: aiohttp.ClientSession | None = None
        self._alpn: dict[tuple[str, int], tuple[bool, float]] = {}

    async def speaks_h2(self, host: str, port: int) -> bool:
        key = (host.lower(), port)
        known = self._alpn.get(key)
        if known is not None and known[1] > time.monotonic():
            return known[0]
        addr, p = self.address(host, port)
        ok, ttl = False, ALPN_TTL_DOWN
        try:
            _, w = await asyncio.wait_for(
                asyncio.open_connection(addr, p, ssl=self.tls_probe, server_hostname=host), PROBE_TIMEOUT
            )
        except (OSError, TimeoutError, ssl.SSLError):
            pass
        else:
            ssl_obj = w.get_extra_info("ssl_object")
            ok, ttl = ssl_obj is not None and ssl_obj.selected_alpn_protocol() == "h2", ALPN_TTL
            w.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(w.wait_closed(), 2)
        self._alpn[key] = (ok, time.monotonic() + ttl)
        return ok

    def address(self, host: str, port: int) -> tuple[str, int]:
        return self.resolve.get(host.lower(), (host, port))

    async def open_tcp(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addr, p = self.address(host, port)
        return await asyncio.wait_for(asyncio.open_connection(addr, p), 15)

    async def open_h2(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addr, p = self.address(host, port)
        return await asyncio.wait_for(
            asyncio.open_connection(addr, p, ssl=self.tls_h2, server_hostname=host), 15
        )

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.tls, resolver=_Resolver(self.resolve), limit=0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None, connect=15, sock_read=None),
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


H2_DROP = HOP_BY_HOP - {"te", "content-length"}


def h2_request_headers(headers: list[tuple[str, str]], authority: str) -> list[tuple[str, str]]:
    """An HTTP/2 request's headers as they go on to Cursor: the pseudo-headers first (`:authority` the
    host the client asked for), then the rest as the client sent them, connection-specific ones aside."""
    pseudo = [(k, v) for k, v in headers if k.startswith(":") and k != ":authority"]
    rest = [(k, v) for k, v in headers if not k.startswith(":") and k not in H2_DROP]
    te = [(k, v) for k, v in rest if k == "te" and v.strip().lower() != "trailers"]
    return [*pseudo, (":authority", authority), *[h for h in rest if h not in te]]


def h2_response_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """An HTTP/2 response's headers to relay (`:status` aside: the caller sends it)."""
    return [(k, v) for k, v in headers if not k.startswith(":") and k not in H2_DROP]


def forward_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Request headers as the client sent them (x-cursor-checksum, authorization...), hop-by-hop aside."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


def response_headers(raw: Any) -> list[tuple[bytes, bytes]]:
    """An upstream response's headers to relay (hop-by-hop aside; h11 frames the body itself)."""
    return [(k, v) for k, v in raw if k.lower().decode("latin-1") not in HOP_BY_HOP]
