"""`glider lint` warns about a rule of the person's own files that a request with tools never reaches:
the task classifier's tools rule (85) takes every such request — every Claude Code, Codex and Gemini
CLI request — to the cloud first (issue 39, point 6: the README's own examples at priority 60 were
dead for Claude Code while lint said every rule could run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.app.lint import lint
from glider_cli.config.profiles import bundled_profiles

SQL = "    - {name: sql_local, priority: %d, trigger: {type: regex, pattern: 'select'}, action: %s}\n"


def _warnings(tmp_path: Path, text: str) -> list[dict[str, object]]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    report = lint(config_path=str(path)).to_dict()
    assert report["errors"] == []
    return [w for w in report["warnings"] if "task_classifier.tools" in str(w["message"])]


def test_a_local_rule_below_the_tools_rule_is_named_with_the_rule_that_takes_its_requests(
    tmp_path: Path,
) -> None:
    (w,) = _warnings(tmp_path, "extends: default\nrouting:\n  rules:\n" + SQL % (60, "{target: local}"))
    assert (w["rule"], w["key"], w["file"], w["line"]) == (
        "sql_local",
        "priority",
        str(tmp_path / "c.yaml"),
        4,
    )
    assert w["severity"] == "warning"
    assert "task_classifier.tools (priority 85)" in str(w["message"])
    assert "priority above 85" in str(w["message"])


@pytest.mark.parametrize(
    "text",
    [
        # Above the tools rule: it has control first.
        "extends: default\nrouting:\n  rules:\n" + SQL % (90, "{target: local}"),
        # The tools rule off (as the local-first profile has it).
        "extends: default\nrouting:\n  task_classifier: {tools_to_cloud: false}\n  rules:\n"
        + SQL % (60, "{target: local}"),
        # Where the tools rule sends a request anyway: the default cloud backend, one call.
        "extends: default\nrouting:\n  rules:\n" + SQL % (60, "{target: cloud}"),
        # routing.local_only skips every cloud rule but an explicit command: the tools rule takes nothing.
        "extends: pure-local\nrouting:\n  rules:\n" + SQL % (60, "{target: local}"),
    ],
    ids=["above", "tools-rule-off", "same-place", "local-only"],
)
def test_no_warning_when_the_rule_is_reached_or_would_change_nothing(tmp_path: Path, text: str) -> None:
    assert _warnings(tmp_path, text) == []


def test_a_profile_rule_overridden_in_the_persons_file_is_theirs(tmp_path: Path) -> None:
    """The bundled profiles' own rules below 85 are their design (tool requests go to the cloud);
    a rule the person's file changes is the person's, and is warned about."""
    text = "extends: default\nrouting:\n  rules:\n"
    text += "    - {name: small_context_local, trigger: {type: context_size, operator: '<=', value: 4000}}\n"
    (w,) = _warnings(tmp_path, text)
    assert w["rule"] == "small_context_local" and w["file"] == str(tmp_path / "c.yaml")


@pytest.mark.parametrize("profile", bundled_profiles())
def test_the_bundled_profiles_get_no_such_warning(profile: str) -> None:
    assert [w for w in lint(profile=profile).warnings if "task_classifier.tools" in w.message] == []
