"""`glider route explain --json` shows the plan a strategy that operates would run."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from glider_cli.cli import app


def test_explain_json_shows_the_fan_out_plan() -> None:
    r = CliRunner().invoke(app, ["route", "explain", "--json", "/swarm sum 2 and 3"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["strategy"] == "fan_out" and d["rule"] == "swarm_fanout"
    plan = d["plan"]
    assert plan["judge"] == "longest_agreement"
    assert [(m["backend"], m["temperature"]) for m in plan["members"]] == [
        ("ollama", 0.2),
        ("ollama", 0.7),
        ("ollama", 1.0),
    ]


def test_explain_json_has_no_plan_for_a_single_call() -> None:
    r = CliRunner().invoke(app, ["route", "explain", "--json", "/local hi"])
    assert r.exit_code == 0, r.output
    assert "plan" not in json.loads(r.output)
