from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cli_helpers import invoke_json
from glider_cli.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def explain_json(*args: str) -> dict[str, object]:
    data: dict[str, object] = invoke_json("route", "explain", *args, "--json")
    return data


def test_json_record_fields() -> None:
    d = explain_json("fix the typo in README")
    for key in (
        "target",
        "rule",
        "priority",
        "backend",
        "model",
        "adapter",
        "strategy",
        "delegate",
        "request",
        "trace",
    ):
        assert key in d
    assert (d["target"], d["rule"], d["priority"]) == ("local", "task_classifier.small", 70)
    assert set(d["request"]) >= {"estimated_tokens", "has_tools", "complexity_score", "complexity_source"}  # type: ignore[arg-type]
    trace = d["trace"]
    assert isinstance(trace, list) and {"rule", "priority", "matched", "reason"} <= set(trace[0])


def test_tools_tokens_and_profile_options() -> None:
    assert explain_json("fix the typo", "--tools")["rule"] == "task_classifier.tools"
    assert explain_json("tell me more", "--tokens", "9000")["rule"] == "large_context_cloud"
    assert explain_json("tell me more", "--tokens", "100")["rule"] == "small_context_local"
    human = runner.invoke(app, ["route", "explain", "x", "--tokens", "100", "--profile", "pure-local"])
    assert "config   <bundled:pure-local>" in human.output


def test_config_option(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: default\nrouting:\n  rules:\n    - name: default\n      priority: 1000\n")
    assert explain_json("anything", "--config", str(cfg))["rule"] == "default"


def test_request_file_in_each_shape(tmp_path: Path) -> None:
    for fixture in sorted(FIXTURES.glob("*.json")):
        for i, req in enumerate(json.loads(fixture.read_text())["requests"]):
            if not isinstance(req.get("body"), dict):
                continue
            body = tmp_path / f"{fixture.stem}-{i}.json"
            body.write_text(json.dumps(req["body"]))
            d = explain_json("--request", str(body))
            assert d["target"] in ("local", "cloud")


def test_delegate_flag_reported() -> None:
    assert explain_json("do it /agy")["delegate"] == "/agy"


def test_human_output_lists_every_rule() -> None:
    result = runner.invoke(app, ["route", "explain", "/cloud hi"])
    assert result.exit_code == 0
    for name in ("explicit_local", "explicit_cloud", "task_classifier.small", "default"):
        assert name in result.output
    assert "decision cloud via rule explicit_cloud" in result.output


def test_errors_are_clean(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "route", "explain", "--request", str(bad)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
    none = runner.invoke(app, ["route", "explain"])
    assert none.exit_code == 1
    broken = tmp_path / "c.yaml"
    broken.write_text("routing:\n  rules:\n    - name: r\n      priority: 1\n      trigger: {type: nope}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "route", "explain", "hi", "--config", str(broken)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "unknown trigger type 'nope'" in proc.stderr


def test_help_for_every_subcommand() -> None:
    for args in (["--help"], ["route", "--help"], ["route", "explain", "--help"], ["lint", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "Usage" in result.output
    top = runner.invoke(app, ["--help"]).output
    assert "route" in top and "lint" in top


def test_request_file_can_be_a_capture() -> None:
    for fixture in sorted(FIXTURES.glob("*.json")):
        d = explain_json("--request", str(fixture))
        assert d["target"] in ("local", "cloud")
    codex = explain_json("--request", str(FIXTURES / "codex-exec-01-tool-followup.json"))
    assert codex["request"]["has_tools"] is True  # type: ignore[index]


def test_all_shows_which_rules_below_the_winner_would_also_match() -> None:
    plain = explain_json("hi /cloud")
    every = explain_json("hi /cloud", "--all")
    assert (every["rule"], every["target"]) == (plain["rule"], plain["target"]) == ("explicit_cloud", "cloud")
    lines = {r["rule"]: r["reason"] for r in every["trace"]}  # type: ignore[union-attr]
    also = sorted(rule for rule, why in lines.items() if why.startswith("would also match"))
    assert also == ["default", "small_context_local", "task_classifier.small"]
    assert lines["large_context_cloud"].startswith("would not match (explicit_cloud has control)")
    human = runner.invoke(app, ["route", "explain", "hi /cloud", "--all"])
    assert human.exit_code == 0
    assert any(line.startswith(" +    0  default") for line in human.output.splitlines()), human.output
