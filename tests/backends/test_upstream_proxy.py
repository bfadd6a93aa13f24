"""Corporate networks, through a real forward proxy (proxy.py) on 127.0.0.1: HTTPS_PROXY / HTTP_PROXY
with `trust_env`, a backend's own `proxy:`, CONNECT tunnels with a private CA, proxy credentials, and
loopback backends that never go through a proxy (backends.network + backends.aiohttp_upstream).

`upstream.glider.test` resolves only inside the proxy, so a request that reaches it went through it.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_upstream import FakeUpstream
from forward_proxy import ForwardProxy
from glider_cli.backends.aiohttp_upstream import AiohttpUpstream
from glider_cli.backends.network import STRAIGHT, routes
from glider_cli.backends.registry import Backend
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"])]

BODY = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
HIDDEN = "upstream.glider.test"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForwardProxy]:
    with ForwardProxy(tmp_path_factory.mktemp("proxy")) as p:
        yield p


def _backend(
    base_url: str, *, side: str = "cloud", proxy: str | None = None, ca: str | None = None
) -> Backend:
    return Backend("b", "anthropic", side, base_url, "anthropic", proxy=proxy, ca_file=ca)


async def _post(route_map: dict, url: str) -> tuple[int, bytes]:  # type: ignore[type-arg]
    up = AiohttpUpstream(route_map)
    try:
        r = await up.send("POST", url, HEADERS, BODY, Timeout(connect=5, read=10))
        try:
            return r.status, await r.read()
        finally:
            await r.aclose()
    finally:
        await up.aclose()


def test_trust_env_sends_a_cloud_backend_through_http_proxy(proxy: ForwardProxy, fake: FakeUpstream) -> None:
    fake.reset()
    base = f"http://{HIDDEN}:{fake.port}"
    plan = routes([_backend(base)], trust_env=True, environ={"HTTP_PROXY": proxy.url})
    status, data = asyncio.run(_post(plan, base + "/v1/messages"))
    assert status == 200 and b'"type":"message"' in data
    seen = proxy.requests()[-1]
    assert (seen["method"], seen["host"], seen["port"]) == ("POST", HIDDEN, fake.port)
    assert fake.requests[-1].headers["x-api-key"] == "sk-test"


def test_without_trust_env_the_variables_are_not_used(proxy: ForwardProxy, fake: FakeUpstream) -> None:
    base = f"http://{HIDDEN}:{fake.port}"
    plan = routes([_backend(base)], trust_env=False, environ={"HTTP_PROXY": proxy.url})
    assert plan == {base: STRAIGHT}
    before = len(proxy.requests())
    with pytest.raises(BackendError, match="could not be resolved"):  # straight: the name is unknown here
        asyncio.run(_post(plan, base + "/v1/messages"))
    assert len(proxy.requests()) == before


def test_a_loopback_backend_bypasses_the_proxy_even_with_trust_env(
    proxy: ForwardProxy, fake: FakeUpstream
) -> None:
    fake.reset()
    env = {"HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url, "ALL_PROXY": proxy.url}
    bases = [fake.url, f"http://localhost:{fake.port}"]
    before = len(proxy.requests())
    for base in bases:
        plan = routes([_backend(base)], trust_env=True, environ=env)
        assert plan == {base: STRAIGHT}
        assert asyncio.run(_post(plan, base + "/v1/messages"))[0] == 200
    assert len(proxy.requests()) == before
    assert len(fake.requests) == len(bases)


def _tls_upstream(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    import trustme

    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HIDDEN).configure_cert(server_ctx)
    ca_file = tmp_path / "corp-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return server_ctx, ca_file


async def _tls_server(ctx: ssl.SSLContext) -> tuple[asyncio.Server, int]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            return
        host = next(ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"host:"))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(host), host))
        await writer.drain()

    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=ctx)
    return server, server.sockets[0].getsockname()[1]


def test_a_backends_own_proxy_tunnels_https_and_trusts_its_ca_file(
    proxy: ForwardProxy, tmp_path: Path
) -> None:
    server_ctx, ca_file = _tls_upstream(tmp_path)

    async def go() -> tuple[tuple[int, bytes], str]:
        server, port = await _tls_server(server_ctx)
        base = f"https://{HIDDEN}:{port}"
        try:
            trusting = routes([_backend(base, proxy=proxy.url, ca=str(ca_file))], trust_env=False, environ={})
            answer = await _post(trusting, base + "/v1/messages")
            stranger = routes([_backend(base, proxy=proxy.url)], trust_env=False, environ={})
            with pytest.raises(BackendError, match="TLS") as failed:
                await _post(stranger, base + "/v1/messages")
            return answer, str(failed.value)
        finally:
            server.close()

    (status, data), _ = asyncio.run(go())
    assert status == 200 and data.lower().startswith(f"host: {HIDDEN}:".encode())
    seen = proxy.requests()[-2:]
    assert [s["method"] for s in seen] == ["CONNECT", "CONNECT"]
    assert all(s["host"] == HIDDEN for s in seen)


def test_proxy_credentials_come_from_the_proxy_url_and_are_never_shown(tmp_path: Path) -> None:
    server_ctx, ca_file = _tls_upstream(tmp_path)
    with ForwardProxy(tmp_path, basic_auth="corp:s3cret-pass") as locked:
        port_url = locked.url.removeprefix("http://")

        async def go() -> tuple[int, str]:
            server, port = await _tls_server(server_ctx)
            base = f"https://{HIDDEN}:{port}"
            try:
                ok = routes(
                    [_backend(base, ca=str(ca_file))],
                    trust_env=True,
                    environ={"HTTPS_PROXY": f"http://corp:s3cret-pass@{port_url}"},
                )
                status, _ = await _post(ok, base + "/x")
                anonymous = routes(
                    [_backend(base, ca=str(ca_file))],
                    trust_env=True,
                    environ={"https_proxy": f"http://corp:wrong-pass@{port_url}"},
                )
                with pytest.raises(BackendError, match="answered 407") as refused:
                    await _post(anonymous, base + "/x")
                return status, str(refused.value)
            finally:
                server.close()

        status, message = asyncio.run(go())
        assert status == 200
        assert "wrong-pass" not in message and "corp:***@" in message
        assert [r["method"] for r in locked.requests()] == ["CONNECT"]  # the refused one never got through
