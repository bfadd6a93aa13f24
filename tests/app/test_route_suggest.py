"""`glider route suggest` on a home a live Glider recorded (the real EventWriter, strict fakes): the
local rule whose larger requests were re-asked in the cloud gets a tightened threshold, as a YAML
snippet, with figures from replaying the recorded requests against the changed config; nothing is
written. A rule with no regret over many turns is offered a wider threshold instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from fake_upstream import FakeUpstream
from server.glider_harness import GliderServer

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5"], ollama_models=["qwen-local"]),
]

GLIDER = Path(sys.executable).with_name("glider")
HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01", "x-claude-code-session-id": "s-1"}
WORDS = [
    "the",
    "parser",
    "reads",
    "tokens",
    "from",
    "the",
    "lexer",
    "and",
    "builds",
    "the",
    "tree",
    "of",
    "the",
    "module;",
]


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(fake: FakeUpstream) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        "routing:\n  task_classifier: {enabled: false}\n"
    )


def _text(n: int, seed: int) -> str:
    """A request of about `n` tokens, different for each seed."""
    words = [WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n * 4 // 6)]
    return f"task {seed}: check " + " ".join(words)


def _ask(g: GliderServer, text: str) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
    assert r.status_code == 200, r.text


def _glider(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    proc = subprocess.run([str(GLIDER), *args], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _events(home: Path, type_: str) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        out += [e for e in map(json.loads, f.read_text().splitlines()) if e["type"] == type_]
    return out


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_suggest_tightens_a_regretted_local_rule_with_replayed_figures(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        fake.set_reply(usage=(900, 60))
        for i in range(4):
            _ask(g, _text(400, i))  # small: answered locally, accepted
        for i in (10, 11):
            big = _text(5000, i)
            _ask(g, big)  # answered locally (small_context_local: <= 8000)...
            _ask(g, "/cloud " + big)  # ...and asked again in the cloud
    regrets = _events(home, "LocalRegret")
    assert [r["data"]["kind"] for r in regrets] == ["repeat_cloud", "repeat_cloud"]
    config = str(tmp_path / "glider-test-config.yaml")
    before = _tree(tmp_path)

    out = json.loads(_glider(home, "route", "suggest", "--config", config, "--days", "2", "--json").stdout)
    assert _tree(tmp_path) == before  # nothing was written: not the config, not the home
    assert out["turns"] == 8 and out["reproduced"] == 8  # the rebuilt requests decide as recorded
    (s,) = out["suggestions"]
    decided = {e["turn_id"]: e["data"] for e in _events(home, "RouteDecided")}
    sizes = [decided[r["turn_id"]]["request"]["estimated_tokens"] for r in regrets]
    value = (min(sizes) - 1) // 100 * 100
    assert 2000 < value < 8000
    assert s["rule"] == "small_context_local" and s["kind"] == "tighten_context"
    assert s["evidence"]["local_turns"] == 6 and s["evidence"]["regrets"] == 2
    assert yaml.safe_load(s["snippet"]) == {
        "routing": {
            "rules": [
                {
                    "name": "small_context_local",
                    "trigger": {"type": "context_size", "operator": "<=", "value": value},
                }
            ]
        }
    }
    usage = json.loads(_glider(home, "context", "usage", "--by", "rule", "--json").stdout)
    assert s["effect"]["moved_to_cloud"] == 2 and s["effect"]["moved_to_local"] == 0
    assert s["effect"]["regrets_moved"] == 2
    # The two big turns' estimated savings are given up (4 small ones keep theirs): each is priced on
    # the client's request (at Sonnet's $3/$15), the big ones' more than the small ones'.
    saved = next(r for r in usage["rows"] if r["key"] == "small_context_local")["savings"]
    local = {e["turn_id"]: e["data"] for e in _events(home, "FulfilledLocal")}
    big = [local[r["turn_id"]] for r in regrets]
    lost = sum((d["client_input_tokens"] * 3 + d["output_tokens"] * 15) / 1e6 for d in big)
    assert lost > saved * 2 / 6  # more than their share of the turns
    assert s["effect"]["savings_change"] == pytest.approx(-lost, rel=0.05)
    assert "moves 2 turns (2 of them regretted)" in s["summary"] and "savings −$" in s["summary"]

    # The snippet does what the replay said: pasted into the config, the big request goes to the cloud.
    changed = tmp_path / "changed.yaml"
    merged = yaml.safe_load(Path(config).read_text())
    merged["routing"]["rules"] = yaml.safe_load(s["snippet"])["routing"]["rules"]
    changed.write_text(yaml.safe_dump(merged))
    big = json.loads(
        _glider(home, "route", "explain", _text(5000, 10), "--config", str(changed), "--json").stdout
    )
    small = json.loads(
        _glider(home, "route", "explain", _text(400, 1), "--config", str(changed), "--json").stdout
    )
    assert (big["target"], small["target"]) == ("cloud", "local")

    before = _tree(tmp_path)
    human = _glider(home, "route", "suggest", "--config", config, "--days", "2").stdout
    assert s["summary"] in human and "name: small_context_local" in human
    assert _tree(tmp_path) == before


def test_a_rule_without_regret_is_offered_a_wider_threshold(fake: FakeUpstream, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with GliderServer(_config(fake), tmp_path, record=False) as g:
        for i in range(20):
            _ask(g, _text(300, i))  # local, never regretted
        for i in range(3):
            _ask(g, _text(10000, 50 + i))  # just above the threshold: large_context_cloud
    config = str(tmp_path / "glider-test-config.yaml")
    out = json.loads(_glider(home, "route", "suggest", "--config", config, "--days", "1", "--json").stdout)
    (s,) = out["suggestions"]
    assert s["kind"] == "widen_context" and s["rule"] == "small_context_local"
    assert yaml.safe_load(s["snippet"])["routing"]["rules"] == [
        {
            "name": "small_context_local",
            "trigger": {"type": "context_size", "operator": "<=", "value": 12000},
        },
        {"name": "large_context_cloud", "trigger": {"type": "context_size", "operator": ">", "value": 12000}},
    ]
    assert s["effect"]["moved_to_local"] == 3 and s["effect"]["moved_to_cloud"] == 0
    usage = json.loads(_glider(home, "context", "usage", "--by", "rule", "--json").stdout)
    cloud = next(r for r in usage["rows"] if r["key"] == "large_context_cloud")["cloud_cost"]
    assert s["effect"]["savings_change"] == pytest.approx(cloud) and cloud > 0


def test_no_traffic_no_suggestion(tmp_path: Path) -> None:
    out = json.loads(_glider(tmp_path / "empty", "route", "suggest", "--profile", "default", "--json").stdout)
    assert out["suggestions"] == [] and out["turns"] == 0
    assert (
        "no change to suggest"
        in _glider(tmp_path / "empty", "route", "suggest", "--profile", "default").stdout
    )
