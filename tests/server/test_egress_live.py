"""The egress audit end to end: requests through a live Glider (the real EventWriter, strict fakes), then
the installed `glider` CLI, run as a subprocess on that home, says what left the machine: an ensemble's
cloud member (not its local one), a local->cloud fallback (`fallback from`), nothing for a pure-local
turn; `glider context turns` shows the ensemble's strategy and members; `/api/context/egress` answers
the same behind the dashboard token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
GLIDER = Path(sys.executable).with_name("glider")  # the console script the package installs


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(fake: FakeUpstream) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        f"  gone: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local,"
        " fallback: origin}\n"
        "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
        "    - {name: together, priority: 97, trigger: {type: explicit, commands: ['/ens']},"
        " action: {target: local, strategy: ensemble}}\n"
        "    - {name: far_local, priority: 96, trigger: {type: explicit, commands: ['/gone']},"
        " action: {target: local, backend: gone}, fallback: origin}\n"
        "orchestration:\n"
        # The cloud member first: the judge's tie goes to it, so the chosen member's own outcome event
        # (an OriginPassthrough of the same call) is in the log too, and must not count twice.
        "  ensemble: {enabled: true, members: [{backend: origin}, {backend: ollama}]}\n"
    )


def _post(g: GliderServer, text: str) -> None:
    body = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
    assert r.status_code == 200, r.text


def _glider(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert GLIDER.is_file(), f"the installed CLI is not at {GLIDER}"
    env = {**os.environ, "GLIDER_HOME": str(home)}
    proc = subprocess.run([str(GLIDER), *args], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _json(home: Path, *args: str) -> Any:
    return json.loads(_glider(home, *args, "--json").stdout)


def _turn_of(home: Path, asked: str) -> dict[str, Any]:
    return next(t for t in _json(home, "context", "turns") if t["asked"] == asked)


def test_the_audit_lists_what_left_the_machine_and_nothing_else(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        _post(g, "/local only here")
    assert [q.path for q in fake.requests] == ["/api/chat"]
    local = _turn_of(home, "/local only here")
    assert (local["strategy"], local["members"]) == (None, 0)
    nothing = _json(home, "context", "egress")
    assert nothing["calls"] == [] and nothing["totals"] == []
    assert "nothing left the machine" in _glider(home, "context", "egress").stderr

    with GliderServer(_config(fake), tmp_path, record=False) as g:
        _post(g, "/ens 2+2")
        _post(g, "/gone add one")
    ens, gone = _turn_of(home, "/ens 2+2"), _turn_of(home, "/gone add one")
    assert (ens["strategy"], ens["members"], ens["cloud_members"], ens["judge_calls"]) == (
        "ensemble",
        2,
        1,
        0,
    )
    assert ens["outcome"].startswith("answered by origin")  # the cloud member was chosen
    table = _glider(home, "context", "turns").stdout
    assert "ensemble ×2 (1 cloud)" in table and "strategy" in table

    audit = _json(home, "context", "egress")
    calls = audit["calls"]
    assert [(c["turn_id"], c["event"], c["backend"]) for c in calls] == [
        (ens["turn_id"], "StrategyMember", "origin"),
        (gone["turn_id"], "OriginPassthrough", "origin"),
    ]
    member, fallback = calls
    assert member["why"] == "strategy member (ensemble #0)" and member["model"] == "claude-x"
    assert (member["outcome"], member["status"]) == ("ok", 200) and member["input_tokens"] > 0
    assert fallback["why"] == "fallback from gone (unreachable)" and fallback["status"] == 200
    assert local["turn_id"] not in {c["turn_id"] for c in calls}
    assert audit["totals"] == [
        {
            "backend": "origin",
            "delegate": False,
            "calls": 2,
            "failed": 0,
            "input_tokens": member["input_tokens"] + fallback["input_tokens"],
            "output_tokens": member["output_tokens"] + fallback["output_tokens"],
        }
    ]
    human = _glider(home, "context", "egress", "--days", "1").stdout
    assert (
        "strategy member (ensemble #0)" in human and "fallback from gone" in human and "per backend" in human
    )
    newest = _json(home, "context", "egress", "--limit", "1")
    assert [c["turn_id"] for c in newest["calls"]] == [gone["turn_id"]] and newest["omitted"] == 1
    assert newest["totals"] == audit["totals"]  # the totals count the call not listed
    assert "1 older calls not listed" in _glider(home, "context", "egress", "--limit", "1").stderr


def test_the_dashboard_api_answers_the_audit_behind_the_token(fake: FakeUpstream, tmp_path: Path) -> None:
    environ = {"GLIDER_HOME": str(tmp_path / "home"), "GLIDER_TOKEN": "tok-egress"}
    with GliderServer(_config(fake), tmp_path, record=False, environ=environ) as g:
        _post(g, "/ens what is 3+3")
        _post(g, "/local stay")
        url = g.url + "/api/context/egress"
        assert httpx.get(url, timeout=30).status_code == 401
        auth = {"authorization": "Bearer tok-egress"}
        r = httpx.get(url, params={"days": "2"}, headers=auth, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["days"] == 2 and body["session"] is None
        assert [(c["event"], c["backend"], c["why"]) for c in body["calls"]] == [
            ("StrategyMember", "origin", "strategy member (ensemble #0)")
        ]
        other = httpx.get(url, params={"session": "no-such-session"}, headers=auth, timeout=60).json()
        assert other["calls"] == [] and other["session"] == "no-such-session"
        bad = httpx.get(url, params={"days": "0"}, headers=auth, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "days"
        capped = httpx.get(url, params={"limit": "1"}, headers=auth, timeout=60).json()
        assert (len(capped["calls"]), capped["omitted"], capped["limit"]) == (1, 0, 1)
        bad = httpx.get(url, params={"limit": "0"}, headers=auth, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "limit"
