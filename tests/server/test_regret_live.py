"""The local regret signal end to end: a real captured Claude Code session through a live Glider (the
real EventWriter, strict fakes) leaves `LocalRegret` events in the log — re-asked with /cloud,
interrupted and re-asked, a local stream that failed mid-way, a local family the capability gate
refused — and `glider context usage --by rule` and `glider route explain --json` show the regret rate
beside the local share."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-opus-5-5"], ollama_models=["qwen-local"]),
]

CAPTURE = Path(__file__).resolve().parent.parent / "fixtures" / "clients" / "claude-code-01-first-turn.json"
GLIDER = Path(sys.executable).with_name("glider")


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(fake: FakeUpstream, window: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local{window}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        "routing:\n  task_classifier: {enabled: false}\n"
    )


class Session:
    """The captured Claude Code request (its headers and body), continued with new user messages."""

    def __init__(self, url: str) -> None:
        req = json.loads(CAPTURE.read_text())["requests"][0]
        keep = ("anthropic-version", "anthropic-beta", "x-claude-code-session-id", "user-agent", "x-app")
        self.headers = {k: v for k, v in req["headers"] if k.lower() in keep} | {"x-api-key": "sk-client"}
        self.first = req["body"]
        self.body: dict[str, Any] | None = None
        self.url = url

    def next_body(self, text: str) -> dict[str, Any]:
        if self.body is None:
            body = copy.deepcopy(self.first)
            [m for m in body["messages"] if m["role"] == "user"][-1]["content"][-1]["text"] = text
        else:
            body = copy.deepcopy(self.body)
            body["messages"] += [
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": text}]},
            ]
        self.body = body
        return body

    def ask(self, text: str) -> httpx.Response:
        body = {**self.next_body(text), "stream": False}
        return httpx.post(self.url + "/v1/messages", json=body, headers=self.headers, timeout=30)

    def ask_and_leave(self, text: str) -> None:
        """A stream the client leaves after its first bytes (Esc in Claude Code)."""
        body = {**self.next_body(text), "stream": True}
        with httpx.stream(
            "POST", self.url + "/v1/messages", json=body, headers=self.headers, timeout=30
        ) as r:
            assert r.status_code == 200
            next(r.iter_bytes())


def _regrets(home: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e["type"] == "LocalRegret":
                out.append({"turn": e["turn_id"], **e["data"]})
    return out


def _glider(home: Path, *args: str) -> Any:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    proc = subprocess.run([str(GLIDER), *args], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_reasked_in_the_cloud_and_interrupted_answers_are_regretted(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        s = Session(g.url)
        assert s.ask("/local explain how the sticky families work").status_code == 200
        assert s.ask("/cloud explain how the sticky families work").status_code == 200
        fake.set_reply(event_delay=0.3)
        s.ask_and_leave("/local write a test for the parser's empty input")
        time.sleep(0.5)
        fake.set_reply()
        assert s.ask("/local write a test for the parser's empty input").status_code == 200
        assert s.ask("/local now add a changelog line for that").status_code == 200
        turns = httpx.get(g.url + "/api/context/turns", timeout=30).json()
    regrets = _regrets(home)
    assert [(r["kind"], r["rule"], r["model"]) for r in regrets] == [
        ("repeat_cloud", "explicit_local", "qwen-local"),
        ("interrupted", "explicit_local", "qwen-local"),
    ]
    ids = [t["turn_id"] for t in turns]
    assert [(r["turn"], r["later_turn"]) for r in regrets] == [(ids[0], ids[1]), (ids[2], ids[3])]
    by_rule = {r["key"]: r for r in _glider(home, "context", "usage", "--by", "rule", "--json")["rows"]}
    local = by_rule["explicit_local"]
    assert (local["local_turns"], local["regrets"], local["regret_rate"]) == (4, 2, 0.5)
    by_model = {r["key"]: r for r in _glider(home, "context", "usage", "--by", "model", "--json")["rows"]}
    assert by_model["qwen-local"]["regret_rate"] == 0.5
    # route explain --json: every rule, in priority order, with its local share, regret and savings.
    config = str(tmp_path / "glider-test-config.yaml")
    explained = _glider(home, "route", "explain", "/local hi", "--config", config, "--json")
    assert explained["rule"] == "explicit_local" and explained["rules_usage"]["days"] == 14
    rules = explained["rules_usage"]["rules"]
    assert [r["rule"] for r in rules[:2]] == ["explicit_local", "explicit_cloud"]
    el = rules[0]
    assert (el["local_turn_share"], el["regret_rate"], el["regrets"]) == (1.0, 0.5, 2)
    assert (
        el["savings"] == pytest.approx(local["savings"]) and el["savings"] > 0
    )  # at claude-opus-5-5's price
    assert next(r for r in rules if r["rule"] == "default") == {
        "rule": "default",
        "turns": 0,
        "local_turns": 0,
        "local_turn_share": None,
        "regrets": 0,
        "regret_rate": None,
        "savings": None,
        "cloud_cost": None,
    }


def test_a_local_stream_that_fails_mid_way_is_regretted(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        s = Session(g.url)
        fake.set_fault(cut_after=2, times=1)
        body = {**s.next_body("/local rename the store module"), "stream": True}
        with httpx.stream("POST", g.url + "/v1/messages", json=body, headers=s.headers, timeout=30) as r:
            r.read()
    (regret,) = _regrets(home)
    assert (regret["kind"], regret["evidence"], regret["later_turn"]) == ("local_error", "mid_stream", None)


def test_a_local_family_the_gate_refuses_is_regretted(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake, ", context_window: 16384, max_tokens: 128"), tmp_path, record=False) as g:
        s = Session(g.url)
        assert s.ask("/local say hi").status_code == 200
        # Claude Code continues the same turn (no new user message) with more than the window holds.
        body = copy.deepcopy(s.body)
        assert body is not None
        body["messages"].append(
            {"role": "assistant", "content": [{"type": "text", "text": "lorem ipsum " * 9000}]}
        )
        r = httpx.post(g.url + "/v1/messages", json=body, headers=s.headers, timeout=30)
        assert r.status_code == 400 and ("cannot take" in r.text or "window" in r.text)
    (regret,) = _regrets(home)
    assert regret["kind"] == "local_error" and regret["evidence"].startswith("capability_gate: ")
