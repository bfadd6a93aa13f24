"""A local model that keeps stopping at its output-token limit: after two such replies in a row, the
client's continuation of the turn (Claude Code's `Output token limit hit…`) is answered by the local
backend's fallback, with the reason in `FallbackUsed` and `x-glider-route`; never past `fallback: none`,
and never to the cloud for a turn an explicit `/local` keeps on the machine (issue 39) unless its rule
names that fallback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from glider_harness import GliderServer
from limit_talk import RESUME, Conversation, limit_config

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

SESSION = "11111111-2222-4333-8444-999999999999"
HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01", "x-claude-code-session-id": SESSION}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def test_the_continuation_after_two_local_replies_at_the_limit_goes_to_the_fallback(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    with GliderServer(limit_config(fake.url), tmp_path) as g:
        talk = Conversation(HEADERS)
        first, second = talk.send(g), talk.send(g)
        for r in (first, second):
            assert "backend=ollama" in r.headers["x-glider-route"], r.headers["x-glider-route"]
            assert r.json()["stop_reason"] == "max_tokens"  # the client is told, and continues
        third = talk.send(g)
        route = third.headers["x-glider-route"]
        assert "backend=origin" in route and "fallback-from=ollama" in route, route
        used = g.wait_for("FallbackUsed")
        local = g.wait_for("FulfilledLocal")
    assert [q.path for q in fake.requests] == ["/api/chat", "/api/chat", "/v1/messages"]
    assert fake.requests[-1].body["model"] == "claude-x"  # the client's model, not the local one
    assert fake.requests[-1].body["messages"][-1]["content"] == RESUME
    assert used[-1]["from"] == "ollama" and used[-1]["to"] == "origin"
    assert "2 local replies" in used[-1]["reason"] and "output-token limit" in used[-1]["reason"]
    assert [d.get("stopped_at_limit") for d in local] == [True, True]
    decided = [d for t, d, _ in g.events if t == "RouteDecided"]
    assert [d["family"]["kind"] for d in decided] == ["new_turn", "continuation", "continuation"]
    assert len({turn for t, _, turn in g.events if t == "RouteDecided"}) == 1  # one turn throughout


def test_a_reply_that_finished_starts_the_count_again(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(limit_config(fake.url), tmp_path) as g:
        talk = Conversation(HEADERS)
        for at_limit in (True, False, True):
            fake.set_reply(text="once upon a time a parser", at_limit=at_limit)
            talk.send(g)
        r = talk.send(g)
    route = r.headers["x-glider-route"]
    assert "backend=ollama" in route and "fallback-from" not in route, route
    assert [q.path for q in fake.requests] == ["/api/chat"] * 4


def test_fallback_none_keeps_the_continuation_local(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    with GliderServer(limit_config(fake.url, ", fallback: none"), tmp_path) as g:
        talk = Conversation(HEADERS)
        routes = [talk.send(g).headers["x-glider-route"] for _ in range(4)]
        kinds = [t for t, _, _ in g.events]
    assert all("backend=ollama" in r and "fallback-from" not in r for r in routes), routes
    assert [q.path for q in fake.requests] == ["/api/chat"] * 4
    assert "FallbackUsed" not in kinds


def test_an_explicit_local_turn_keeps_its_continuations_local(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    with GliderServer(limit_config(fake.url), tmp_path) as g:
        talk = Conversation(HEADERS)
        talk.messages = [{"role": "user", "content": "/local tell me a long story about a parser"}]
        routes = [talk.send(g).headers["x-glider-route"] for _ in range(4)]
        kinds = [t for t, _, _ in g.events]
    assert all("backend=ollama" in r and "fallback-from" not in r for r in routes), routes
    assert [q.path for q in fake.requests] == ["/api/chat"] * 4
    assert "FallbackUsed" not in kinds
    # Its rule may name the cloud as its fallback: the person's own choice, and then it is taken.
    fake.reset()
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    rule = "routing:\n  rules:\n    - name: explicit_local\n      fallback: origin\n"
    with GliderServer(limit_config(fake.url) + rule, tmp_path) as g:
        talk = Conversation(HEADERS)
        talk.messages = [{"role": "user", "content": "/local tell me a long story about a parser"}]
        routes = [talk.send(g).headers["x-glider-route"] for _ in range(3)]
    assert "backend=origin" in routes[-1] and "fallback-from=ollama" in routes[-1], routes
