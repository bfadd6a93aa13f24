"""`glider route replay`: captured client sequences and JSONL through the turn index and the router."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.cli import app
from glider_cli.errors import RequestError

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_SEQ = FIXTURES / "replay" / "claude-cloud-then-thanks.jsonl"
CONFIG = """
backends:
  local1: {type: ollama, base_url: "http://127.0.0.1:11434", model: m-local}
  cloud1: {type: anthropic, base_url: "https://api.anthropic.com", api_key_env: ANTHROPIC_API_KEY}
routing:
  task_classifier: {enabled: false}
  sticky: {ttl_seconds: 20, grace_seconds: 5}
  rules:
    - name: explicit_cloud
      priority: 99
      trigger: {type: explicit, commands: ["/cloud"]}
      action: {target: cloud, backend: cloud1}
    - name: small_local
      priority: 5
      trigger: {type: context_size, operator: "<=", value: 2000}
      action: {target: local, backend: local1}
    - name: default
      priority: 0
      trigger: {type: always}
      action: {target: cloud}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "replay.yaml"
    path.write_text(CONFIG)
    return path


def replay_json(*args: str) -> dict[str, Any]:
    data: dict[str, Any] = invoke_json("route", "replay", *args, "--json")
    return data


def test_claude_code_cloud_turn_then_a_small_message(config: Path) -> None:
    steps = replay_json(str(CLAUDE_SEQ), "--config", str(config))["steps"]
    got = [(s["family"], s["kind"], s["target"], s["rule"]) for s in steps]
    assert got == [
        ("t1", "new_turn", "cloud", "explicit_cloud"),
        ("t1", "count_tokens", "cloud", "default"),  # joins the bound family: local refused
        ("t1", "tool_result", "cloud", "explicit_cloud"),
        ("t2", "new_turn", "local", "small_local"),  # the next real message decides anew
        ("t2", "title", "local", "small_local"),  # its family is not bound
    ]
    assert steps[2]["link"] == "answers tool call toolu_r1 issued in this family"
    assert steps[0]["sticky"]["bound"] and steps[0]["sticky"]["live"]
    assert steps[0]["sticky"]["until"] == 20.0
    assert steps[3]["sticky"] == {"bound": False, "view": steps[3]["sticky"]["view"]}


def test_captured_fixtures_codex_and_claude_code_tool_follow_ups(config: Path) -> None:
    clients = FIXTURES / "clients"
    files = [
        str(clients / "claude-code-02-tool-use-followup.json"),
        str(clients / "codex-exec-01-tool-followup.json"),
    ]
    steps = replay_json(*files, "--config", str(config))["steps"]
    assert [(s["family"], s["kind"]) for s in steps] == [
        ("t1", "new_turn"),
        ("t1", "tool_result"),
        ("t2", "new_turn"),
        ("t2", "tool_result"),
    ]
    # Each tool result goes where its turn went.
    assert steps[0]["target"] == steps[1]["target"] and steps[2]["target"] == steps[3]["target"]
    assert all(s["where"].endswith(("requests[0]", "requests[1]")) for s in steps)


def test_the_sdk_fixture_skips_non_model_requests_and_places_count_tokens(config: Path) -> None:
    steps = replay_json(str(FIXTURES / "clients" / "python-sdks-headers.json"), "--config", str(config))[
        "steps"
    ]
    kinds = [s["kind"] for s in steps]
    assert "count_tokens" in kinds and len(steps) == 10  # two GET /v1/models skipped
    ct = steps[kinds.index("count_tokens")]
    assert ct["family"] is None and ct["new_turn"] is False


def test_against_lists_the_requests_that_change_side(config: Path, tmp_path: Path) -> None:
    other = tmp_path / "all-cloud.yaml"
    other.write_text(CONFIG.replace("target: local, backend: local1", "target: cloud, backend: cloud1"))
    data = replay_json(str(CLAUDE_SEQ), "--config", str(config), "--against", str(other))
    assert data["against"] == str(other)
    assert [(m["index"], m["from"], m["to"]) for m in data["moves"]] == [
        (4, "local", "cloud"),
        (5, "local", "cloud"),
    ]
    same = replay_json(str(CLAUDE_SEQ), "--config", str(config), "--against", str(config))
    assert same["moves"] == []


def test_time_moves_with_t_and_the_ttl_expires(config: Path, tmp_path: Path) -> None:
    lines = [json.loads(x) for x in CLAUDE_SEQ.read_text().splitlines()]
    lines[1]["t"] = 100  # count_tokens long after the 20 s TTL and the run's end + 5 s grace
    seq = tmp_path / "late.jsonl"
    seq.write_text("\n".join(json.dumps(x) for x in lines[:2]) + "\n")
    steps = replay_json(str(seq), "--config", str(config))["steps"]
    assert steps[1]["t"] == 100
    assert steps[1]["sticky"]["live"] is False and steps[1]["target"] == "local"


def test_text_output(config: Path, tmp_path: Path) -> None:
    other = tmp_path / "o.yaml"
    other.write_text(CONFIG.replace("value: 2000", "value: 1"))
    result = runner.invoke(
        app, ["route", "replay", str(CLAUDE_SEQ), "-c", str(config), "--against", str(other)]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "family t1     new_turn" in out and "tool_result" in out and "sticky bound" in out
    assert "family t2     new_turn     -> local" in out
    assert "4 local -> cloud  (small_local -> default)" in out


def failure(*args: str) -> str:
    r = runner.invoke(app, ["route", "replay", *args])
    assert r.exit_code == 1 and isinstance(r.exception, RequestError), r.output
    return r.exception.message


def test_bad_inputs_are_errors_naming_the_place(tmp_path: Path, config: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": {"model": "m", "messages": []}}\nnot json\n')
    assert f"{bad}:2: not a JSON line" in failure(str(bad), "-c", str(config))
    bad.write_text('{"headers": {}, "body": [1]}\n')
    assert "bad.jsonl:1: 'body' must be a JSON object" in failure(str(bad), "-c", str(config))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "no model requests" in failure(str(empty), "-c", str(config))
    assert "cannot read" in failure(str(tmp_path / "missing.jsonl"), "-c", str(config))
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "route", "replay", str(empty), "-c", str(config)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr


def test_against_shows_every_change_and_counts_each_kind(config: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    changed = CONFIG.replace(
        "action: {target: local, backend: local1}", "action: {target: local, backend: local1, model: m-small}"
    ).replace("action: {target: cloud, backend: cloud1}", "action: {target: cloud, backend: cloud2}")
    cloud2 = "  cloud2: {type: anthropic, base_url: 'https://x.test', api_key_env: K}\n"
    other.write_text(changed.replace("  cloud1: {type: anthropic", cloud2 + "  cloud1: {type: anthropic"))
    data = replay_json(str(CLAUDE_SEQ), "--config", str(config), "--against", str(other))
    by_index = {c["index"]: c["changed"] for c in data["changes"]}
    # The /cloud turn and its tool result change backend, and so does the count (the side's default
    # backend is cloud2 now); the small local turn and its title change model.
    assert by_index[1] == by_index[2] == by_index[3] == {"backend": {"from": "cloud1", "to": "cloud2"}}
    assert by_index[4] == by_index[5] == {"model": {"from": None, "to": "m-small"}}
    assert data["summary"] == {"rule": 0, "side": 0, "backend": 3, "model": 2, "adapter": 0, "strategy": 0}
    assert data["moves"] == []  # nothing changes side
    human = runner.invoke(
        app, ["route", "replay", str(CLAUDE_SEQ), "-c", str(config), "--against", str(other)]
    )
    assert "  1 cloud  (rule explicit_cloud)  backend cloud1 -> cloud2" in human.output
    assert "changes  rule 0, side 0, backend 3, model 2, adapter 0, strategy 0" in human.output


def test_json_steps_carry_the_trace_model_and_strategy(config: Path) -> None:
    steps = replay_json(str(CLAUDE_SEQ), "--config", str(config))["steps"]
    first = steps[0]
    assert {"model", "strategy", "adapter", "trace", "delegate", "clock"} <= set(first)
    assert first["strategy"] == "single" and first["model"] is None
    assert first["trace"][0] == {
        "rule": "explicit_cloud",
        "priority": 99,
        "matched": True,
        "reason": "command /cloud in the latest user message",
    }


def test_each_file_keeps_its_own_clock(config: Path, tmp_path: Path) -> None:
    """File A: a /cloud turn at t=0 (bound for 20 s + 5 s grace) and another session at t=100. File B,
    on its own clock, counts tokens at t=5: that is after A ended, so A's binding is long over."""
    lines = [json.loads(x) for x in CLAUDE_SEQ.read_text().splitlines()]
    turn, count = lines[0], lines[1]
    other_session = json.loads(
        json.dumps(turn).replace(
            "5e55105e-0000-4000-8000-00000000c1a0", "0" * 8 + "-0000-4000-8000-000000000000"
        )
    )
    other_session["t"], count["t"] = 100, 5
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(turn) + "\n" + json.dumps(other_session) + "\n")
    b.write_text(json.dumps(count) + "\n")
    steps = replay_json(str(a), str(b), "--config", str(config))["steps"]
    assert [(s["t"], s["clock"]) for s in steps] == [(0, 0), (100, 100), (5, 106)]
    assert steps[2]["kind"] == "count_tokens" and steps[2]["target"] == "local"
