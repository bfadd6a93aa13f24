"""Cursor turns routed turn by turn through the real proxy: local turns never reach Cursor, cloud
turns and everything of a cloud-bound family stay at the origin, the next real user message decides
anew, a local failure falls back to Cursor, bad bytes pass through."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, texts, trailer
from cursor_harness import cursor_yaml

from fake_upstream import closed_port_url

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
API = "api2.cursor.sh"


def events(g: Any, kind: str) -> list[dict[str, Any]]:
    return [d for t, d, _ in g.server.events if t == kind]


def turn_of(g: Any, kind: str, n: int = -1) -> str | None:
    return [tid for t, _, tid in g.server.events if t == kind][n]


def cursor_requests(fake: Any) -> list[str]:
    return [r.path for r in fake.requests if "AgentService" in r.path or "BidiAppend" in r.path]


def test_local_turn_is_answered_here_and_nothing_reaches_cursor(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    msg = wire.run_request("conv-local", wire.user_action("/local say hello"))
    sse, appends, rid = asyncio.run(client.turn(AGENT, msg, more=[wire.heartbeat(), wire.kv_ack(1)]))
    assert sse.status == 200
    assert "".join(texts(sse)) == "hello from fake ollama fake-model"
    assert trailer(sse) == {}
    assert [a.status for a in appends] == [200, 200, 200] and all(a.body == b"" for a in appends)
    assert cursor_requests(fake_cursor) == []  # neither the appends nor the RunSSE left the machine
    # The local model got the pack: the person's text (command and all), no Cursor request context.
    sent = [r for r in fake.requests if r.path == "/api/chat"][-1].body
    assert any("/local say hello" in str(m.get("content")) for m in sent["messages"])
    assert "git status: clean" not in str(sent)
    # Recorded like any client's turn.
    opened = events(g, "TurnOpened")[-1]
    assert opened["client"] == "cursor" and opened["session_id"] == "conv-local"
    decided = g.server.wait_for("RouteDecided")[-1]
    assert decided["client"] == "cursor" and decided["target"] == "local"
    assert decided["cursor"]["kind"] == "new_turn" and decided["cursor"]["request_id"] == rid
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["backend"] == "ollama" and done["complete"] is True
    assert "OriginPassthrough" not in g.server.types()


def test_cloud_family_keeps_follow_ons_title_summary_subagent_at_origin_then_decides_anew(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    conv = "conv-cloud-1"

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        sse, _, parent = await client.turn(
            AGENT, wire.run_request(conv, wire.user_action("/cloud plan the refactor"))
        )
        out["cloud"] = texts(sse)
        # A synthetic follow-on whose words say /local: by field it is not the person's.
        follow = wire.run_request(conv, wire.user_action("/local continue", simulated=True, reason=3))
        out["follow"] = texts((await client.turn(AGENT, follow))[0])
        # A background task completion action.
        out["bg"] = texts((await client.turn(AGENT, wire.run_request(conv, wire.action(12))))[0])
        title = await client.request(
            AGENT, "/agent.v1.AgentService/NameAgent", wire.name_agent("/local title")
        )
        out["title"] = title.body
        out["summary"] = texts((await client.turn(AGENT, wire.run_request(conv, wire.action(4))))[0])
        child = wire.run_request(
            "conv-child", wire.user_action("look around", rich=False), subagent_type="explore"
        )
        out["sub"] = texts((await client.turn(AGENT, child, headers={"x-parent-request-id": parent}))[0])
        # The next real user message decides anew.
        sse, _, _ = await client.turn(AGENT, wire.run_request(conv, wire.user_action("/local hi again")))
        out["anew"] = texts(sse)
        return out

    out = asyncio.run(scenario())
    origin = ["hello from cursor", " (done)"]
    assert out["cloud"] == out["follow"] == out["bg"] == out["summary"] == out["sub"] == origin
    assert out["title"] == wire.ld(1, "Cursor title")
    assert "".join(out["anew"]) == "hello from fake ollama fake-model"
    decided = g.server.wait_for("RouteDecided", 7)
    kinds = [d["cursor"]["kind"] for d in decided]
    assert kinds == ["new_turn", "follow_on", "follow_on", "title", "summary", "subagent", "new_turn"]
    assert [d["target"] for d in decided] == ["cloud"] * 6 + ["local"]
    # Deny-local while bound: the follow-ons, title, summary and subagent saw the family bound.
    for d in decided[1:6]:
        assert d["sticky"]["bound"] is True and d["sticky"]["follow_on"] is True, d["sticky"]
    assert decided[6]["sticky"]["bound"] is False
    # The summary is the composer_wrapup trigger, by field, sending it to the origin.
    assert decided[4]["rule"] == "composer_wrapup_origin"
    # All of them are the cloud turn's family, until the new user message opens a new one.
    turns = [tid for t, _, tid in g.server.events if t == "RouteDecided"]
    assert len(set(turns[:6])) == 1 and turns[6] != turns[0]
    assert events(g, "StickyBound")[0]["target"] == "cloud"
    passthrough = g.server.wait_for("OriginPassthrough", 6)
    assert {p["backend"] for p in passthrough} == {"origin"}
    # Each run's usage is what Cursor's own updates said: its token delta (no counts in turn-ended).
    runs = passthrough[:3] + passthrough[4:]  # the title (index 3) is a unary call, not a run
    assert [p["output_tokens"] for p in runs] == [4] * 5
    assert all("output_tokens" not in p.get("estimated", ()) for p in runs)
    # Cursor saw every one of the cloud side's runs, and nothing of the last (local) one.
    assert len([p for p in fake_cursor.paths() if p.endswith("/RunSSE")]) == 5


def test_cursor_hint_is_complexity_source_cursor(fake, fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    asyncio.run(
        client.turn(AGENT, wire.run_request("conv-h", wire.user_action("hello there"), max_mode=True))
    )
    asyncio.run(client.turn(AGENT, wire.run_request("conv-h2", wire.user_action("hello there", mode=0))))
    first, second = g.server.wait_for("RouteDecided", 2)[:2]
    assert first["request"]["complexity_source"] == "cursor"
    assert first["request"]["complexity_score"] >= 80
    assert second["request"]["complexity_source"] == "heuristic"


def test_local_backend_down_falls_back_to_cursor_in_order(fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, closed_port_url()))
    client = CursorClient(g.port, g.ca)
    msg = wire.run_request("conv-fb", wire.user_action("/local hi"))
    sse, appends, rid = asyncio.run(client.turn(AGENT, msg, more=[wire.heartbeat(), wire.kv_ack(2)]))
    assert texts(sse) == ["hello from cursor", " (done)"] and trailer(sse) == {}
    assert [a.status for a in appends] == [200, 200, 200]
    assert fake_cursor.appends[rid] == [0, 1, 2]  # held back, then forwarded in seqno order
    assert g.server.wait_for("FallbackUsed")[-1]["to"] == "origin"
    failed = events(g, "UpstreamFailed")[-1]
    assert failed["backend"] == "ollama"
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["fallback_from"] == "ollama"


def test_fallback_none_ends_the_stream_and_sends_nothing(fake_cursor, glider_for, tmp_path: Path) -> None:
    yaml = cursor_yaml(fake_cursor, tmp_path, closed_port_url()).replace(
        "model: fake-model}", "model: fake-model, fallback: none}"
    )
    g = glider_for(yaml)
    client = CursorClient(g.port, g.ca)
    sse, appends, _ = asyncio.run(
        client.turn(AGENT, wire.run_request("conv-n", wire.user_action("/local hi")))
    )
    end = trailer(sse)
    assert end is not None and end["error"]["code"] == "unavailable"
    assert [a.status for a in appends] == [200]
    assert cursor_requests(fake_cursor) == []
    assert "FallbackUsed" not in g.server.types()


def test_bad_bytes_pass_through_and_the_proxy_stays_up(fake, fake_cursor, glider_for, tmp_path: Path) -> None:
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)

    async def go() -> list[int]:
        statuses = []
        garbage = b"\xff\x01\x02not protobuf"
        a = await client.request(API, "/aiserver.v1.BidiService/BidiAppend", garbage)
        statuses.append(a.status)
        bad_gzip = await client.request(
            API,
            "/aiserver.v1.BidiService/BidiAppend",
            b"\x1f\x8b broken",
            headers={"content-encoding": "gzip"},
        )
        statuses.append(bad_gzip.status)
        # The session-start append that is no AgentClientMessage ("foo"): forwarded as it came.
        foo = await client.append(API, "rid-foo", 0, bytes.fromhex("0a03666f6f"))
        statuses.append(foo.status)
        truncated = await client.request(
            AGENT,
            "/agent.v1.AgentService/RunSSE",
            wire.run_sse_body("rid-t")[:4],
            content_type="application/connect+proto",
        )
        statuses.append(truncated.status)
        # A gzip-compressed append with unknown fields in its run request still routes.
        msg = wire.run_request(
            "conv-u", wire.user_action("/local hi"), unknown=wire.ld(999, b"new") + wire.vi(23, 1)
        )
        sse = asyncio.create_task(client.run_sse(AGENT, "rid-u"))
        await client.append(AGENT, "rid-u", 0, msg, compress=True)
        statuses.append((await sse).status)
        ok = await client.request(API, "/aiserver.v1.ServerConfigService/GetServerConfig", b"")
        statuses.append(ok.status)
        return statuses

    assert asyncio.run(go()) == [400, 400, 200, 400, 200, 200]
    bodies = [r.body for r in fake_cursor.requests if r.path.endswith("BidiAppend")]
    assert b"\xff\x01\x02not protobuf" in bodies and b"\x1f\x8b broken" in bodies
    assert wire.append_body("rid-foo", 0, bytes.fromhex("0a03666f6f")) in bodies
    assert wire.run_sse_body("rid-t")[:4] in [r.body for r in fake_cursor.requests]
    assert events(g, "RouteDecided")[-1]["cursor"]["kind"] == "new_turn"


def test_two_conversations_at_once_keep_their_own_families(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)

    async def go() -> None:
        await asyncio.gather(
            client.turn(AGENT, wire.run_request("conv-A", wire.user_action("/cloud design it"))),
            client.turn(AGENT, wire.run_request("conv-B", wire.user_action("/local hello"))),
        )
        await asyncio.gather(
            client.turn(AGENT, wire.run_request("conv-A", wire.action(7))),
            client.turn(AGENT, wire.run_request("conv-B", wire.action(7))),
        )

    asyncio.run(go())
    g.server.wait_for("RouteDecided", 4)
    by_session: dict[str, str] = {}
    for t, d, tid in g.server.events:
        if t == "TurnOpened":
            by_session[d["session_id"]] = tid
    decided = [(d, tid) for t, d, tid in g.server.events if t == "RouteDecided"]
    follow = [(d, tid) for d, tid in decided if d["cursor"]["kind"] == "follow_on"]
    assert {tid for _, tid in follow} == {by_session["conv-A"], by_session["conv-B"]}
    a = next(d for d, tid in follow if tid == by_session["conv-A"])
    assert a["sticky"]["bound"] is True
    b = next(d for d, tid in follow if tid == by_session["conv-B"])
    assert b["sticky"]["bound"] is False and b["sticky"]["held_by"]


def test_heartbeats_while_the_local_model_prefills(fake, fake_cursor, glider_for, tmp_path: Path) -> None:
    fake.reset()
    fake.set_fault(delay=4.0, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    sse, appends, _ = asyncio.run(
        client.turn(AGENT, wire.run_request("conv-hb", wire.user_action("/local hi")))
    )
    payloads = [p for _, flags, p in sse.frames if not flags & 2]
    assert payloads[0] == bytes.fromhex("0a026a00")  # a heartbeat came before the first text
    assert "".join(texts(sse)) == "hello from fake ollama fake-model"
    # The append was answered only once the local model had answered: after the first heartbeat.
    assert [a.status for a in appends] == [200]
    assert cursor_requests(fake_cursor) == []


def test_failure_after_the_first_byte_ends_with_a_stream_error(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    fake.set_reply(text="one two three four five six seven eight")
    fake.set_fault(cut_after=2, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    sse, _, _ = asyncio.run(client.turn(AGENT, wire.run_request("conv-cut", wire.user_action("/local hi"))))
    assert texts(sse)  # something was answered before the cut
    end = trailer(sse)
    assert end is not None and "error" in end
    assert cursor_requests(fake_cursor) == []
    assert g.server.wait_for("FulfilledLocal")[-1]["complete"] is False


def test_title_of_a_local_turn_is_named_here(fake, fake_cursor, glider_for, tmp_path: Path) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)

    async def go() -> bytes:
        await client.turn(AGENT, wire.run_request("conv-t", wire.user_action("/local what is a monad")))
        title = await client.request(
            AGENT, "/agent.v1.AgentService/NameAgent", wire.name_agent("/local what is a monad")
        )
        return title.body

    assert asyncio.run(go()) == wire.ld(1, "hello from fake ollama fake-model")
    assert cursor_requests(fake_cursor) == []
    decided = g.server.wait_for("RouteDecided", 2)
    assert decided[1]["cursor"]["kind"] == "title" and decided[1]["target"] == "local"
    turns = [tid for t, _, tid in g.server.events if t == "RouteDecided"]
    assert turns[0] == turns[1]
    assert len(g.server.wait_for("FulfilledLocal", 2)) == 2


def test_name_tab_is_read_as_its_own_request_and_answered_in_its_own_response(
    fake, fake_cursor, glider_for, tmp_path: Path, strict: Any
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)
    tab = "/aiserver.v1.AiService/NameTab"
    unreadable = wire.name_tab(("an answer only", 2))

    async def go() -> tuple[Any, Any]:
        await client.turn(AGENT, wire.run_request("conv-tab", wire.user_action("/local what is a monad")))
        body = wire.name_tab(("/local what is a monad", 1), ("A monad is...", 2))
        local = await client.request(API, tab, body)
        other = await client.request(API, tab, unreadable)
        return local, other

    local, other = asyncio.run(go())
    # Its text is the last human message: the /local conversation's, so it is named here, and the
    # answer is a NameTabResponse (name, reason) that protobuf-es reads.
    [named] = strict.decode("glider.cursor.NameTabResponse", [local.body])
    assert named.ok and named.json["name"] == "hello from fake ollama fake-model" and named.json["reason"]
    decided = g.server.wait_for("RouteDecided", 2)
    assert decided[1]["cursor"]["kind"] == "title" and decided[1]["cursor"]["why"] == "NameTab"
    assert decided[1]["target"] == "local"
    # A NameTab with no human message is not read as anything else: it goes to Cursor unread.
    assert other.body == wire.ld(1, "Cursor title") + wire.ld(2, "named by Cursor")
    assert [r.body for r in fake_cursor.requests if r.path == tab] == [unreadable]
    assert len(g.server.wait_for("RouteDecided")) == 2


def test_client_leaving_while_the_local_model_works_is_recorded(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    fake.set_fault(delay=5.0, paths=("/api/chat",), times=1)
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url))
    client = CursorClient(g.port, g.ca)

    class Left(Exception):
        pass

    def leave(flags: int, payload: bytes) -> None:
        raise Left  # the first heartbeat: the client goes away

    async def go() -> None:
        rid = "rid-leave"
        sse = asyncio.create_task(client.run_sse(AGENT, rid, on_frame=leave))
        app = asyncio.create_task(
            client.append(AGENT, rid, 0, wire.run_request("c-l", wire.user_action("/local x")))
        )
        with pytest.raises(Left):
            await sse
        assert (await asyncio.wait_for(app, 10)).status == 200  # the held append is answered, not stuck

    asyncio.run(go())
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["complete"] is False and done["client_disconnected"] is True
    assert cursor_requests(fake_cursor) == []
