"""Cursor's agent on its own transport: `AgentService/Run` over HTTP/2 through Glider's proxy, routed
turn by turn like RunSSE. A Cursor-shaped HTTP/2 client (ALPN h2, trusting only Glider's CA) and a
strict fake Cursor origin over HTTP/2 (ALPN h2 only, 464 for an HTTP/1.1 Run)."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, all_decoded_strictly, texts, trailer
from cursor_h2_client import H2CursorClient
from cursor_harness import cursor_yaml
from fake_cursor import FakeCursor

from fake_upstream import closed_port_url

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
API = "api2.cursor.sh"


@pytest.fixture
def origin() -> Iterator[FakeCursor]:
    with FakeCursor(alpn=("h2",)) as f:
        yield f


def events(g: Any, kind: str) -> list[dict[str, Any]]:
    return [d for t, d, _ in g.server.events if t == kind]


def run_paths(fake: FakeCursor) -> list[tuple[str, str]]:
    return [(r.http, r.path) for r in fake.requests if "AgentService" in r.path or "Bidi" in r.path]


def test_the_fake_origin_refuses_http1_for_run_and_offers_only_h2(origin, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, closed_port_url()))
    # Glider offers h2 on the agent host (the origin agrees to it) ...
    conn = asyncio.run(_alpn(g, ["h2", "http/1.1"]))
    assert conn == "h2"
    # ... and a client that asks for HTTP/1.1 keeps today's path: Run there gets the origin's 464.
    client = CursorClient(g.port, g.ca)
    body = wire.envelope(wire.run_request("c", wire.user_action("/cloud hi")))
    got = asyncio.run(
        client.request(AGENT, "/agent.v1.AgentService/Run", body, content_type="application/connect+proto")
    )
    assert got.status == 464


async def _alpn(g: Any, offer: list[str]) -> str | None:
    import ssl

    reader, writer = await asyncio.open_connection("127.0.0.1", g.port)
    writer.write(f"CONNECT {AGENT}:443 HTTP/1.1\r\nHost: {AGENT}:443\r\n\r\n".encode())
    await writer.drain()
    await reader.readuntil(b"\r\n\r\n")
    ctx = ssl.create_default_context(cafile=g.ca)
    ctx.set_alpn_protocols(offer)
    await writer.start_tls(ctx, server_hostname=AGENT)
    chosen = writer.get_extra_info("ssl_object").selected_alpn_protocol()
    writer.close()
    return chosen


def test_cloud_run_is_relayed_frame_by_frame_both_ways(origin, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, closed_port_url()))
    origin.pace = 0.5  # generous: each frame must arrive before the next is sent, on a loaded machine too
    client = H2CursorClient(g.port, g.ca)
    first = wire.run_request("conv-h2-cloud", wire.user_action("/cloud explain this repo"))
    more = [wire.heartbeat(), wire.kv_ack(1), wire.heartbeat()]
    sent_at: list[float] = []

    async def go() -> Any:
        conn = await client.connect(AGENT)
        s, rid = await conn.start_run(first)

        async def rest() -> None:
            for m in more:
                await asyncio.sleep(0.5)
                sent_at.append(time.monotonic())
                await s.send(wire.envelope(m))

        sending = asyncio.create_task(rest())
        answer = await conn.read_run(s, rid=rid)
        await sending
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert answer.status == 200 and answer.headers["x-fake-origin"] == "1"
    assert texts(answer) == ["hello from cursor", " (done)"] and trailer(answer) == {}
    assert answer.trailers == {"x-fake-trailer": "run-done"}  # the origin's trailers reached the client
    [run] = origin.h2_runs
    # Origin -> client: each frame arrived before the origin sent the next one.
    arrived = [t for t, _, _ in answer.frames]
    sent = [t for t, _ in run.sent]
    assert len(arrived) == len(sent) == 6  # heartbeat, text, tokens, text, turn ended, end of stream
    assert all(arrived[i] < sent[i + 1] for i in range(len(sent) - 1)), (arrived, sent)
    # Client -> origin: the messages (heartbeats pass) arrived one by one, unchanged, as they were sent.
    payloads = [p for _, _, p in run.received]
    assert payloads == [first, *more]
    got = [t for t, _, _ in run.received]
    assert all(got[i] < sent_at[i] for i in range(len(sent_at))), (got, sent_at)
    # The run went to Cursor over HTTP/2 only, and was recorded as Cursor's.
    assert run_paths(origin) == [("2", "/agent.v1.AgentService/Run")]
    assert run.headers["authorization"] == "Bearer test-token-not-a-secret"
    assert run.headers["x-cursor-checksum"] == "AbCdEf123_machineid"
    decided = g.server.wait_for("RouteDecided")[-1]
    assert decided["target"] == "cloud" and decided["cursor"]["request_id"] == answer.rid
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["complete"] is True


def test_local_text_run_is_answered_on_the_same_stream(
    fake, origin, glider_for, tmp_path: Path, strict: Any
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)
    first = wire.run_request("conv-h2-local", wire.user_action("/local say hello"))

    async def go() -> Any:
        conn = await client.connect(AGENT)
        answer = await conn.run(first, more=[wire.heartbeat(), wire.kv_ack(1)])
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert answer.status == 200 and answer.headers["content-type"] == "application/connect+proto"
    assert "".join(texts(answer)) == "hello from fake ollama fake-model"
    assert trailer(answer) == {}
    # Every frame Glider wrote decoded as Cursor's client decodes it (text, tokens, the turn's end).
    assert all_decoded_strictly(answer)
    updates = [d["interactionUpdate"] for d in answer.decoded if "interactionUpdate" in d]
    told = "".join(u["textDelta"]["text"] for u in updates if "textDelta" in u)
    assert told == "hello from fake ollama fake-model"
    assert "turnEnded" in updates[-1]
    assert run_paths(origin) == []  # nothing of the run reached Cursor
    sent = [r for r in fake.requests if r.path == "/api/chat"][-1].body
    assert "git status: clean" not in str(sent)
    decided = g.server.wait_for("RouteDecided")[-1]
    assert decided["target"] == "local" and decided["cursor"]["request_id"] == answer.rid
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["backend"] == "ollama" and done["complete"] is True
    assert "OriginPassthrough" not in g.server.types()


def test_unary_calls_over_h2(origin, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, closed_port_url()))
    client = H2CursorClient(g.port, g.ca)
    body = bytes(range(256)) * 3

    async def go() -> Any:
        conn = await client.connect(API)
        got = await conn.unary("/aiserver.v1.ServerConfigService/GetServerConfig", body)
        title = await conn.unary("/agent.v1.AgentService/NameAgent", wire.name_agent("hello there"))
        await conn.close()
        return got, title

    got, title = asyncio.run(go())
    assert got.status == 200 and got.body == b"\x0a\x02ok" and got.headers["x-fake-origin"] == "1"
    rec = [r for r in origin.requests if r.path.endswith("GetServerConfig")][-1]
    assert rec.body == body and rec.http == "2"
    assert title.status == 200 and title.body == wire.ld(1, "Cursor title")
    # The title Glider read (and decided: Cursor's) went on to Cursor over HTTP/2 too.
    assert [r.http for r in origin.requests if r.path.endswith("/NameAgent")] == ["2"]
    assert g.server.wait_for("RouteDecided")[-1]["cursor"]["kind"] == "title"


def test_cloud_family_keeps_its_follow_ons_at_origin_then_decides_anew(
    fake, origin, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)
    conv = "conv-h2-sticky"

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        conn = await client.connect(AGENT)  # every run of the scenario on one connection
        parent = await conn.run(wire.run_request(conv, wire.user_action("/cloud plan the refactor")))
        out["cloud"] = texts(parent)
        follow = wire.run_request(conv, wire.user_action("/local continue", simulated=True, reason=3))
        out["follow"] = texts(await conn.run(follow))
        title = await conn.unary("/agent.v1.AgentService/NameAgent", wire.name_agent("/local title"))
        out["title"] = title.body
        out["summary"] = texts(await conn.run(wire.run_request(conv, wire.action(4))))
        child = wire.run_request("conv-child", wire.user_action("look around", rich=False), subagent_type="x")
        out["sub"] = texts(await conn.run(child, headers={"x-parent-request-id": parent.rid}))
        out["anew"] = texts(await conn.run(wire.run_request(conv, wire.user_action("/local hi again"))))
        await conn.close()
        return out

    out = asyncio.run(scenario())
    at_origin = ["hello from cursor", " (done)"]
    assert out["cloud"] == out["follow"] == out["summary"] == out["sub"] == at_origin
    assert out["title"] == wire.ld(1, "Cursor title")
    assert "".join(out["anew"]) == "hello from fake ollama fake-model"
    decided = g.server.wait_for("RouteDecided", 6)
    assert [d["cursor"]["kind"] for d in decided] == [
        "new_turn",
        "follow_on",
        "title",
        "summary",
        "subagent",
        "new_turn",
    ]
    assert [d["target"] for d in decided] == ["cloud"] * 5 + ["local"]
    for d in decided[1:5]:
        assert d["sticky"]["bound"] is True, d["sticky"]
    turns = [tid for t, _, tid in g.server.events if t == "RouteDecided"]
    assert len(set(turns[:5])) == 1 and turns[5] != turns[0]
    passthrough = g.server.wait_for("OriginPassthrough", 5)
    runs = passthrough[:2] + passthrough[3:]  # the title is a unary call
    assert [p["output_tokens"] for p in runs] == [4] * 4  # Cursor's own token deltas, read on the way
    assert len([r for r in origin.requests if r.path.endswith("/Run")]) == 4


def test_local_backend_down_falls_back_to_cursor_on_the_same_stream(
    origin, glider_for, tmp_path: Path
) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, closed_port_url()))
    client = H2CursorClient(g.port, g.ca)
    first = wire.run_request("conv-h2-fb", wire.user_action("/local hi"))

    async def go() -> Any:
        conn = await client.connect(AGENT)
        answer = await conn.run(first, more=[wire.heartbeat(), wire.kv_ack(2)])
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert texts(answer) == ["hello from cursor", " (done)"] and trailer(answer) == {}
    [run] = origin.h2_runs  # Cursor got the run's messages in order, the first one held back for it
    assert [p for _, _, p in run.received] == [first, wire.heartbeat(), wire.kv_ack(2)]
    assert g.server.wait_for("FallbackUsed")[-1]["to"] == "origin"
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["fallback_from"] == "ollama" and done["complete"] is True


def test_a_body_that_ends_before_its_first_message_goes_to_cursor(origin, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(origin, tmp_path, closed_port_url()))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> Any:
        conn = await client.connect(AGENT)
        s = await conn.peer.open(conn.headers("/agent.v1.AgentService/Run", "application/connect+proto"))
        await s.send(b"", end=True)
        answer = await conn.read_run(s)
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert answer.status == 200
    assert trailer(answer) == {"error": {"code": "invalid_argument", "message": "No exec result"}}
    assert "RouteDecided" not in g.server.types()


def test_a_gzip_compressed_first_message_is_read_and_routed(fake, origin, glider_for, tmp_path: Path) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)
    first = wire.run_request("conv-h2-gzip", wire.user_action("/local say hello"))

    async def go() -> Any:
        conn = await client.connect(AGENT)
        headers = conn.headers(
            "/agent.v1.AgentService/Run", "application/connect+proto", {"connect-content-encoding": "gzip"}
        )
        s = await conn.peer.open(headers)
        await s.send(wire.envelope(gzip.compress(first), 1))  # flag 0x01: compressed
        answer = await conn.read_run(s)
        await conn.close()
        return answer

    answer = asyncio.run(go())
    assert "".join(texts(answer)) == "hello from fake ollama fake-model"
    assert g.server.wait_for("RouteDecided")[-1]["target"] == "local"
    assert run_paths(origin) == []


def test_heartbeats_while_the_local_model_prefills(
    fake, origin, glider_for, tmp_path: Path, strict: Any
) -> None:
    fake.reset()
    fake.set_fault(delay=4.0, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(origin, tmp_path, fake.url))
    client = H2CursorClient(g.port, g.ca)

    async def go() -> Any:
        conn = await client.connect(AGENT)
        answer = await conn.run(wire.run_request("conv-h2-hb", wire.user_action("/local hi")))
        await conn.close()
        return answer

    answer = asyncio.run(go())
    payloads = [p for _, flags, p in answer.frames if not flags & 2]
    assert payloads[0] == bytes.fromhex("0a026a00")  # a heartbeat came before the first text
    assert answer.decoded[0] == {"interactionUpdate": {"heartbeat": {}}} and all_decoded_strictly(answer)
    assert "".join(texts(answer)) == "hello from fake ollama fake-model"
    assert run_paths(origin) == []


def test_fallback_none_ends_the_stream_with_an_error_and_sends_nothing(
    origin, glider_for, tmp_path: Path
) -> None:
    yaml = cursor_yaml(origin, tmp_path, closed_port_url()).replace(
        "model: fake-model}", "model: fake-model, fallback: none}"
    )
    g = glider_for(yaml)
    client = H2CursorClient(g.port, g.ca)

    async def go() -> Any:
        conn = await client.connect(AGENT)
        answer = await conn.run(wire.run_request("conv-h2-none", wire.user_action("/local hi")))
        await conn.close()
        return answer

    answer = asyncio.run(go())
    end = trailer(answer)
    assert answer.status == 200 and end is not None and end["error"]["code"] == "unavailable"
    assert run_paths(origin) == [] and "FallbackUsed" not in g.server.types()
