"""Both upstream clients against a real fake upstream on 127.0.0.1: bodies, streams and every failure mode."""

from __future__ import annotations

import asyncio

import pytest

from fake_upstream import FakeUpstream, closed_port_url
from glider_cli.backends.client import Upstream, make_upstream
from glider_cli.config.settings import Timeout
from glider_cli.errors import BackendError, BackendTimeout

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["m"])]

KINDS = ("native", "aiohttp", "httpx")
BODY = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":true}'
HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


async def _with(kind: str, fn):  # type: ignore[no-untyped-def]
    up: Upstream = make_upstream(kind)
    try:
        return await fn(up)
    finally:
        await up.aclose()


@pytest.mark.parametrize("kind", KINDS)
def test_stream_arrives_in_chunks_and_headers_first(fake: FakeUpstream, kind: str) -> None:
    async def go(up: Upstream) -> tuple[int, list[bytes]]:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        chunks = [c async for c in r.aiter_bytes()]
        await r.aclose()
        return r.status, chunks

    status, chunks = asyncio.run(_with(kind, go))
    assert status == 200
    joined = b"".join(chunks)
    assert joined.startswith(b"event: message_start")
    assert b"event: message_stop" in joined
    assert fake.requests[-1].headers["x-api-key"] == "sk-test"


@pytest.mark.parametrize("kind", KINDS)
def test_error_status_is_returned_not_raised(fake: FakeUpstream, kind: str) -> None:
    fake.set_fault(status=503)

    async def go(up: Upstream) -> tuple[int, bytes]:
        r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
        data = await r.read()
        await r.aclose()
        return r.status, data

    status, data = asyncio.run(_with(kind, go))
    assert status == 503
    assert b"injected fault" in data


@pytest.mark.parametrize("kind", KINDS)
def test_refused_connection_is_backend_error(kind: str) -> None:
    async def go(up: Upstream) -> None:
        await up.send("POST", closed_port_url() + "/v1/messages", HEADERS, BODY, Timeout())

    with pytest.raises(BackendError, match="refused"):
        asyncio.run(_with(kind, go))


@pytest.mark.parametrize("kind", KINDS)
def test_timeout_before_first_byte_is_backend_timeout(fake: FakeUpstream, kind: str) -> None:
    fake.set_fault(delay=2.0)

    async def go(up: Upstream) -> None:
        await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout(read=0.3))

    with pytest.raises(BackendTimeout):
        asyncio.run(_with(kind, go))


@pytest.mark.parametrize("kind", KINDS)
def test_stream_cut_midway_raises_backend_error(fake: FakeUpstream, kind: str) -> None:
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
        asyncio.run(_with(kind, go))


def test_proxy_variables_are_ignored(fake: FakeUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy variable pointing nowhere would break the request if it were honoured.
    monkeypatch.setenv("HTTP_PROXY", closed_port_url())
    monkeypatch.setenv("ALL_PROXY", closed_port_url())
    for kind in KINDS:

        async def go(up: Upstream) -> int:
            r = await up.send("POST", fake.url + "/v1/messages", HEADERS, BODY, Timeout())
            await r.read()
            await r.aclose()
            return r.status

        assert asyncio.run(_with(kind, go)) == 200


def test_unknown_client_kind() -> None:
    with pytest.raises(ValueError, match="unknown upstream client"):
        make_upstream("curl")
