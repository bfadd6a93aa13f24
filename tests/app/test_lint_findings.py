from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glider_cli.app.lint import lint
from glider_cli.cli import app
from glider_cli.config.profiles import bundled_profiles

runner = CliRunner()
HEAD = "routing:\n  rules:\n"
# A catch-all, so that a test about another finding does not also get "no rule covers every request".
CATCH_ALL = "    - {name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}\n"


def rule(name: str, priority: int, trigger: str, action: str = "{target: cloud}") -> str:
    return (
        f"    - name: {name}\n      priority: {priority}\n      trigger: {trigger}\n      action: {action}\n"
    )


def lint_text(
    tmp_path: Path, text: str, scripts: dict[str, str] | None = None
) -> dict[str, list[dict[str, object]]]:
    for name, src in (scripts or {}).items():
        (tmp_path / name).write_text(src)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return lint(config_path=str(path)).to_dict()


@pytest.mark.parametrize("name", bundled_profiles())
def test_bundled_profiles_are_clean(name: str) -> None:
    report = lint(profile=name)
    assert report.ok, report.to_dict()
    assert not report.warnings


@pytest.mark.parametrize(
    ("text", "scripts", "rule_name", "key", "fragment"),
    [
        (HEAD + rule("r", 1, "{type: always, extra: 1}"), {}, "r", "trigger.extra", "unknown key 'extra'"),
        (HEAD + rule("r", 1, "{type: wrapup}"), {}, "r", "trigger.type", "unknown trigger type"),
        (HEAD + rule("r", 1, "{type: regex}"), {}, "r", "trigger.pattern", "needs 'pattern'"),
        (HEAD + rule("r", 1, "{type: regex, pattern: '(a'}"), {}, "r", "trigger.pattern", "does not compile"),
        (HEAD + rule("r", 1, "{type: script, file: gone.star}"), {}, "r", "trigger.file", "cannot be read"),
        (HEAD + rule("r", 1, "{type: always}", "{target: sideways}"), {}, "r", "action.target", "not one of"),
        (
            HEAD + rule("r", 1, "{type: always}", "{target: cloud, backend: x}"),
            {},
            "r",
            "action.backend",
            "not defined",
        ),
        (
            HEAD + rule("r", 1, "{type: always}", "{target: local, strategy: fan_out}"),
            {},
            "r",
            "action.strategy",
            "orchestration.fan_out.enabled",
        ),
        (
            HEAD + rule("r", 1, "{type: always}") + rule("r", 0, "{type: always}"),
            {},
            "r",
            "name",
            "duplicate",
        ),
        (
            HEAD + rule("s", 1, "{type: script, file: s.star}"),
            {"s.star": "def evaluate(r:\n  pass\n"},
            "s",
            "trigger.file",
            "s.star:2:3",
        ),
        (
            HEAD + rule("s", 1, "{type: script, file: s.star}"),
            {"s.star": "def evaluate(r):\n  return nope\n"},
            "s",
            "trigger.file",
            "nope",
        ),
        (
            HEAD + rule("s", 1, "{type: script, file: s.star}"),
            {"s.star": "x = 1\n"},
            "s",
            "trigger.file",
            "no evaluate",
        ),
        (
            HEAD + rule("a", 50, "{type: always}") + rule("late", 10, "{type: explicit, commands: [/x]}"),
            {},
            "late",
            "priority",
            "can never run",
        ),
    ],
)
def test_each_error_finding(
    tmp_path: Path, text: str, scripts: dict[str, str], rule_name: str, key: str, fragment: str
) -> None:
    report = lint_text(tmp_path, text + "\n", scripts)
    found = [e for e in report["errors"] if e["rule"] == rule_name and e["key"] == key]
    assert found, report
    assert any(fragment in str(e["message"]) for e in found), found
    assert all(e["file"] for e in found)


def test_unknown_top_level_key_and_line(tmp_path: Path) -> None:
    report = lint_text(tmp_path, "server: {}\nbakends: {}\n" + HEAD + CATCH_ALL)
    (err,) = report["errors"]
    assert err["key"] == "bakends" and err["line"] == 2 and "did you mean 'backends'" in str(err["message"])


def test_collects_every_error(tmp_path: Path) -> None:
    text = (
        HEAD
        + rule("a", 1, "{type: nope}")
        + rule("b", 2, "{type: regex, pattern: '('}")
        + CATCH_ALL
        + "server: {port: x}\n"
    )
    assert len(lint_text(tmp_path, text)["errors"]) == 3


def test_script_disagreement_is_a_warning(tmp_path: Path) -> None:
    src = 'def evaluate(request):\n    return {"matched": True, "action": {"target": "cloud"}}\n'
    report = lint_text(
        tmp_path,
        HEAD + rule("s", 1, "{type: script, file: s.star}", "{target: local}") + CATCH_ALL,
        {"s.star": src},
    )
    assert report["errors"] == []
    (w,) = [w for w in report["warnings"] if w["key"] == "action.target"]
    assert w["rule"] == "s" and w["line"] == 2


def test_unreadable_yaml_is_one_error(tmp_path: Path) -> None:
    report = lint_text(tmp_path, "routing: [\n")
    assert len(report["errors"]) == 1 and "not valid YAML" in str(report["errors"][0]["message"])


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    ok = runner.invoke(app, ["lint", "--profile", "default", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output) == {"source": "<bundled:default>", "errors": [], "warnings": []}
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + rule("r", 1, "{type: nope}") + CATCH_ALL)
    result = runner.invoke(app, ["lint", "--config", str(bad), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["errors"][0]["rule"] == "r" and data["errors"][0]["line"] == 5
    human = runner.invoke(app, ["lint", "--config", str(bad)])
    assert human.exit_code == 1 and "failed (1 error" in human.output


def test_a_side_without_backend_is_a_warning(tmp_path: Path) -> None:
    # No task classifier: its tools rule would take this local rule's requests with tools (a warning
    # test_lint_tools_shadowed.py checks).
    text = "backends:\n  c: {type: openai}\n" + HEAD + rule("r", 1, "{type: always}", "{target: local}")
    text += "  task_classifier: {enabled: false}\n"
    report = lint_text(tmp_path, text)
    assert report["errors"] == []
    (w,) = report["warnings"]
    assert w["rule"] == "r" and "no backend serves the local side" in str(w["message"])


@pytest.mark.parametrize(
    ("rule", "key", "line"),
    [
        ("    priority:\n    trigger: {type: always}\n    action: {target: cloud}\n", "priority", 5),
        (
            "    priority: 30\n    trigger: {type: regex, pattern: ''}\n    action: {target: local}\n",
            "trigger.pattern",
            6,
        ),
        ("    priority: 30\n    trigger:\n    action: {target: local}\n", "trigger", 4),
        (
            "    priority: 30\n    trigger:\n      type: regex\n      pattern:\n"
            "    action: {target: local}\n",
            "trigger.pattern",
            7,
        ),
        ("    priority: 30\n    trigger: {type: always}\n    action:\n      target:\n", "action.target", 8),
    ],
)
def test_a_rule_missing_a_value_is_an_error_naming_the_key(
    tmp_path: Path, rule: str, key: str, line: int
) -> None:
    """A key written without a value (YAML null) is as missing as an absent one: the loader used to drop
    such a rule without a word, and an empty pattern matched every message (issue 39, point 7)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: default\nrouting:\n  rules:\n  - name: mine\n" + rule)
    report = lint(config_path=str(cfg))
    assert [(i.rule, i.key, i.file) for i in report.errors] == [("mine", key, str(cfg))]
    assert report.errors[0].line == line
