"""The Cursor proxy's front door: CA, blind tunnel, interception only of Cursor's hosts, byte-for-byte
relay of unary calls, frame-by-frame relay of streams, HTTP/2 relayed unchanged with one notice."""

from __future__ import annotations

import asyncio
import ssl
import stat
from pathlib import Path

import cursor_wire as wire
import httpx
import pytest
from cursor_client import CursorClient, texts
from cursor_harness import cursor_yaml
from fake_cursor import FakeCursor

from fake_upstream import closed_port_url

pytestmark = pytest.mark.live


def test_ca_made_at_first_start_private_key_and_healthz(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    ca_dir = tmp_path / "home" / "cursor"
    assert stat.S_IMODE(ca_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((ca_dir / "ca-key.pem").stat().st_mode) == 0o600
    assert (ca_dir / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    health = httpx.get(g.server.url + "/healthz").json()
    assert health["cursor"]["port"] == g.port
    assert health["cursor"]["ca"] == str(ca_dir / "ca.pem")
    assert "*.api5.cursor.sh" in health["cursor"]["hosts"]


def test_unintercepted_host_is_a_blind_tunnel(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    # Trusting only the fake server's CA works: the client saw the real server's certificate.
    real = CursorClient(g.port, fake_cursor.ca_file(tmp_path))
    got = asyncio.run(real.request("api4.cursor.sh", "/aiserver.v1.CppService/StreamCpp", b"\x0a\x01x"))
    assert got.status == 200 and got.body == b"\x0a\x02ok"
    assert fake_cursor.requests[-1].host == "api4.cursor.sh"
    # Trusting only Glider's CA fails there: Glider did not terminate TLS.
    glider_ca = CursorClient(g.port, g.ca)
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(glider_ca.request("api4.cursor.sh", "/x", b""))
    assert g.server.types().count("RouteDecided") == 0


def test_intercepted_unary_passes_byte_for_byte(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    client = CursorClient(g.port, g.ca)  # only Glider's CA: the connection was intercepted
    body = bytes(range(256)) * 3
    got = asyncio.run(
        client.request("api2.cursor.sh", "/aiserver.v1.ServerConfigService/GetServerConfig", body)
    )
    assert got.status == 200 and got.body == b"\x0a\x02ok" and got.headers["x-fake-origin"] == "1"
    rec = fake_cursor.requests[-1]
    assert rec.body == body
    assert rec.headers["x-cursor-checksum"] == "AbCdEf123_machineid"
    assert rec.headers["authorization"] == "Bearer test-token-not-a-secret"
    assert rec.headers["user-agent"] == "connect-es/1.6.1"
    # The fake's certificate is not Glider's: trusting the fake's CA alone fails on an intercepted host.
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(CursorClient(g.port, fake_cursor.ca_file(tmp_path)).request("api2.cursor.sh", "/x", b""))


def test_unknown_agent_host_matches_the_multi_label_glob(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    client = CursorClient(g.port, g.ca)
    got = asyncio.run(
        client.request("agentn.global.api5.cursor.sh", "/agent.v1.AgentService/GetUsableModels", b"")
    )
    assert got.status == 200 and fake_cursor.requests[-1].host == "agentn.global.api5.cursor.sh"


def test_http1_run_gets_the_load_balancers_464(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    client = CursorClient(g.port, g.ca)
    got = asyncio.run(
        client.request(
            "agent.api5.cursor.sh",
            "/agent.v1.AgentService/Run",
            wire.envelope(b""),
            content_type="application/connect+proto",
        )
    )
    assert got.status == 464


def test_alpn_offers_h2_only_when_the_origin_speaks_it(glider_for, tmp_path: Path) -> None:
    async def chosen(port: int, ca: str, host: str) -> str | None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        ctx = ssl.create_default_context(cafile=ca)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        await writer.start_tls(ctx, server_hostname=host)
        alpn = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        writer.close()
        return alpn

    # An origin that speaks only HTTP/1.1: Glider cannot carry h2 end to end, so it does not offer it.
    with FakeCursor(alpn=("http/1.1",)) as old:
        g = glider_for(cursor_yaml(old, tmp_path, closed_port_url()))
        assert asyncio.run(chosen(g.port, g.ca, "agent.api5.cursor.sh")) == "http/1.1"
    with FakeCursor() as both:
        g = glider_for(cursor_yaml(both, tmp_path, closed_port_url()))
        assert asyncio.run(chosen(g.port, g.ca, "agent.api5.cursor.sh")) == "h2"


def test_stream_frames_arrive_before_the_origin_finished(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    fake_cursor.gate = True
    client = CursorClient(g.port, g.ca)
    seen: list[bytes] = []

    def on_frame(flags: int, payload: bytes) -> None:
        seen.append(payload)
        if len(seen) == 3:  # heartbeat, first text, tokens: the origin now waits for release()
            fake_cursor.release()

    msg = wire.run_request("conv-cloud", wire.user_action("/cloud explain this repo"))
    sse, appends, _ = asyncio.run(client.turn("agent.api5.cursor.sh", msg, on_frame=on_frame))
    assert texts(sse) == ["hello from cursor", " (done)"]
    assert [a.status for a in appends] == [200]


def test_origin_stream_relayed_byte_for_byte_even_a_truncated_tail(
    fake_cursor, glider_for, tmp_path: Path
) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    # An envelope of a message Glider does not know, then half an envelope: both go on as they came.
    fake_cursor.tail = wire.envelope(wire.ld(77, b"future server message")) + wire.envelope(b"12345678")[:7]
    client = CursorClient(g.port, g.ca)
    msg = wire.run_request("conv-tail", wire.user_action("/cloud go"))
    sse, _, _ = asyncio.run(client.turn("agent.api5.cursor.sh", msg))
    assert sse.body == fake_cursor.sent[-1]


def test_connections_past_the_cap_are_answered_503(tmp_path: Path) -> None:
    from glider_cli.config.cursor import CursorSettings
    from glider_cli.cursor.ca import CertAuthority
    from glider_cli.cursor.front import FrontDoor
    from glider_cli.cursor.upstream import Network

    class NoRequests:  # the seam: this test's connections never get as far as a request
        async def handle(self, request: object) -> object:
            raise AssertionError("no request expected")

    async def connect(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        writer.close()
        return head.split(b"\r\n", 1)[0]

    async def go() -> tuple[bytes, bytes]:
        ca = CertAuthority.load_or_create(tmp_path / "ca")
        front = FrontDoor(("api2.cursor.sh",), ca, Network(CursorSettings()), NoRequests(), max_connections=2)  # type: ignore[arg-type]
        port = await front.start("127.0.0.1", 0)
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]  # connected, silent
        await asyncio.sleep(0.2)
        over = await connect(port)
        for _, w in idle:
            w.close()
        await asyncio.sleep(0.5)
        under = await connect(port)  # room again: the CONNECT is served (port 9 is closed: 502)
        await front.close()
        return over, under

    over, under = asyncio.run(go())
    assert over.startswith(b"HTTP/1.1 503")
    assert under.startswith(b"HTTP/1.1 502")
