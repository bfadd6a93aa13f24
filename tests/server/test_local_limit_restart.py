"""The count of a turn's local replies in a row that stopped at the output-token limit survives a
restart of `glider serve`: a new app on the same GLIDER_HOME rebuilds it from the logged outcomes, so
the continuation after two such replies still goes to the local backend's fallback (with the model the
client asked for); a reply that ended the run before the restart starts the count again after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from glider_harness import GliderServer
from limit_talk import RESUME, Conversation, limit_config

from fake_upstream import FakeUpstream
from glider_cli.paths import resolve
from glider_cli.store.eventlog.log import iter_events

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

SESSION = "11111111-2222-4333-8444-aaaaaaaaaaaa"
HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01", "x-claude-code-session-id": SESSION}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _logged(env: dict[str, str]) -> list[dict[str, Any]]:
    return list(iter_events(resolve(env).context))


def test_two_local_replies_at_the_limit_before_a_restart_send_the_continuation_after_it_to_the_cloud(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    env = {"GLIDER_HOME": str(tmp_path / "home")}
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    talk = Conversation(HEADERS)
    with GliderServer(limit_config(fake.url), tmp_path, environ=env, record=False) as g1:
        routes = [talk.send(g1).headers["x-glider-route"] for _ in range(2)]
    assert all("backend=ollama" in r for r in routes), routes
    # A new process: a new app on the same GLIDER_HOME, its families rebuilt from the log.
    with GliderServer(limit_config(fake.url), tmp_path, environ=env, record=False) as g2:
        third = talk.send(g2)
    route = third.headers["x-glider-route"]
    assert "backend=origin" in route and "fallback-from=ollama" in route, route
    assert [q.path for q in fake.requests] == ["/api/chat", "/api/chat", "/v1/messages"]
    assert fake.requests[-1].body["model"] == "claude-x"  # the client's model, not the local one
    assert fake.requests[-1].body["messages"][-1]["content"] == RESUME
    logged = _logged(env)
    local = [e["data"] for e in logged if e["type"] == "FulfilledLocal"]
    assert [d.get("stopped_at_limit") for d in local] == [True, True]
    used = [e["data"] for e in logged if e["type"] == "FallbackUsed"]
    assert len(used) == 1 and (used[0]["from"], used[0]["to"]) == ("ollama", "origin")
    assert "2 local replies" in used[0]["reason"], used[0]["reason"]
    decided = [e for e in logged if e["type"] == "RouteDecided"]
    assert [e["data"]["family"]["kind"] for e in decided] == ["new_turn", "continuation", "continuation"]
    assert len({e["turn_id"] for e in decided}) == 1  # the same turn on both sides of the restart


def test_a_reply_that_ended_the_run_before_the_restart_starts_the_count_again(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    env = {"GLIDER_HOME": str(tmp_path / "home")}
    fake.set_reply(text="once upon a time a parser", at_limit=True)
    talk = Conversation(HEADERS)
    with GliderServer(limit_config(fake.url), tmp_path, environ=env, record=False) as g1:
        routes = [talk.send(g1).headers["x-glider-route"] for _ in range(3)]
    # The third went to the cloud (the fallback) and answered: the run of local replies is over.
    assert "fallback-from=ollama" in routes[2] and "fallback-from" not in routes[1], routes
    with GliderServer(limit_config(fake.url), tmp_path, environ=env, record=False) as g2:
        after = [talk.send(g2).headers["x-glider-route"] for _ in range(3)]
    assert all("backend=ollama" in r and "fallback-from" not in r for r in after[:2]), after
    assert "fallback-from=ollama" in after[2], after  # two in a row again, counted in the new app
    assert [q.path for q in fake.requests] == ["/api/chat", "/api/chat", "/v1/messages"] * 2
