"""A session's last route: from the event log, over `GET /api/sessions/{id}/route`, and as the line the
statusline command prints (run as a subprocess, as Claude Code runs it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from fake_upstream import FakeUpstream
from glider_cli.app.statusline import last_route, line
from server.glider_harness import GliderServer, backends_yaml

pytestmark = pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])

SID = "5e55105e-0000-4000-8000-00000000c1a0"


def decided(turn: str, sid: str, target: str, rule: str) -> dict[str, object]:
    family = {"session_id": sid, "kind": "new_turn"}
    return {
        "type": "RouteDecided",
        "turn_id": turn,
        "ts": "t",
        "data": {"target": target, "rule": rule, "family": family, "model": None},
    }


def test_the_newest_decision_of_the_session_with_who_answered() -> None:
    events = [
        decided("t1", SID, "local", "explicit_local"),
        {"type": "FulfilledLocal", "turn_id": "t1", "data": {"backend": "ollama", "model": "qwen"}},
        decided("t2", SID, "cloud", "explicit_cloud"),
        decided("t3", "other", "local", "small"),
        {
            "type": "OriginPassthrough",
            "turn_id": "t2",
            "data": {"backend": "origin", "model": "claude-opus-5-5"},
        },
    ]
    route = last_route(events, SID)
    assert route is not None and (route["turn_id"], route["side"], route["model"]) == (
        "t2",
        "cloud",
        "claude-opus-5-5",
    )
    assert line(route) == "glider cloud · explicit_cloud · claude-opus-5-5"
    assert last_route(events, "nobody") is None and line(None) == "glider: no route yet"


def statusline(url: str, stdin: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli.app.statusline", "--url", url],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.live
def test_the_statusline_command_against_a_live_glider(tmp_path: Path, fake: FakeUpstream) -> None:
    with GliderServer(
        backends_yaml(fake.url), tmp_path, record=False, environ={"GLIDER_HOME": str(tmp_path / "h")}
    ) as g:
        body = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi /local"}]}
        r = httpx.post(g.url + "/v1/messages", json=body, headers={"x-claude-code-session-id": SID})
        assert r.status_code == 200
        route = httpx.get(f"{g.url}/api/sessions/{SID}/route").json()
        assert (route["side"], route["rule"], route["backend"]) == ("local", "explicit_local", "ollama")
        assert httpx.get(f"{g.url}/api/sessions/unknown/route").status_code == 404
        assert statusline(g.url, json.dumps({"session_id": SID, "model": {"id": "x"}})) == (
            "glider local · explicit_local · qwen-local"
        )
        assert statusline(g.url, json.dumps({"session_id": "unknown"})) == "glider: no route yet"
    assert statusline(g.url, json.dumps({"session_id": SID})) == "glider: not running"
    assert statusline(g.url, "not json") == "glider: no session"
