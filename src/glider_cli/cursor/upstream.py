"""The way out to Cursor's real servers (and to any tunnelled host).

- `Network(settings)`: where a host is (`cursor.resolve`, like curl's `--resolve`: the name stays the
  TLS server name and the Host header, only the address changes), and the TLS context its
  certificates are checked with: the system trust store plus `cursor.upstream_ca_file`.
- `Network.open_tcp(host, port)`: a plain connection (a blind tunnel's other end).
- `Network.open_h2(host, port)`: a TLS connection offering only `h2` (an HTTP/2 client relayed as is).
- `Network.session()`: the aiohttp client an intercepted HTTP/1.1 request is forwarded with (bodies
  relayed as they come: no decompression, no added headers).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
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


class Network:
    def __init__(self, settings: CursorSettings) -> None:
        self.settings = settings
        self.resolve = dict(settings.resolve)
        self.tls = upstream_context(settings.upstream_ca_file)
        self.tls_h2 = upstream_context(settings.upstream_ca_file, ["h2"])
        self._session: aiohttp.ClientSession | None = None

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


def forward_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Request headers as the client sent them (x-cursor-checksum, authorization...), hop-by-hop aside."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


def response_headers(raw: Any) -> list[tuple[bytes, bytes]]:
    """An upstream response's headers to relay (hop-by-hop aside; h11 frames the body itself)."""
    return [(k, v) for k, v in raw if k.lower().decode("latin-1") not in HOP_BY_HOP]
