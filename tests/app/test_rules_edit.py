"""Editing a config file's rules in place (app.rules_edit): only what is edited changes — comments,
quoting, flow/block style and the file's own indentation stay — and keys never go in."""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.app.rules_edit import EditError, check, edit

CONFIG = """\
# My Glider config: local first.
extends: default

backends:
  ollama: {type: ollama, side: local, base_url: 'http://127.0.0.1:11434', model: qwen-local}  # GPU box

routing:
  rules:
    # Refactors stay on my machine.
    - name: refactor_local
      priority: 60
      trigger: {type: regex, pattern: "(?i)refactor"}
      action: {target: local}

    - name: docs_cloud   # docs need a big model
      priority: 40
      trigger:
        type: regex
        pattern: '(?i)\\bdocs?\\b'
      action:
        target: cloud
"""


def _changed(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_a_change_touches_only_its_lines() -> None:
    out = edit(CONFIG, [{"op": "set", "name": "refactor_local", "fields": {"priority": 65}}])
    assert _changed(out.diff) == ["-      priority: 60", "+      priority: 65"]
    assert out.text == CONFIG.replace("priority: 60", "priority: 65")


def test_add_disable_a_profile_rule_and_move() -> None:
    ops = [
        {"op": "set", "name": "default", "fields": {"enabled": False}},
        {
            "op": "add",
            "rule": {
                "name": "tests_local",
                "priority": 30,
                "trigger": {"type": "explicit", "commands": ["/t"]},
                "action": {"target": "local"},
            },
        },
        {"op": "move", "name": "docs_cloud", "to": 0},
    ]
    out = edit(CONFIG, ops, profile_rules=("default",))
    assert "    - name: default\n      enabled: false\n" in out.text
    assert (
        "    - name: tests_local\n      priority: 30\n      trigger: {type: explicit, commands: [/t]}\n"
        in out.text
    )
    assert out.text.index("name: docs_cloud") < out.text.index("name: refactor_local")
    assert "# My Glider config: local first." in out.text and "# GPU box" in out.text
    assert "'http://127.0.0.1:11434'" in out.text  # quoting kept
    assert "docs_cloud   # docs need a big model" in out.text


def test_a_file_with_its_own_indentation_keeps_it() -> None:
    text = (
        "routing:\n    rules:\n    -   name: a\n        priority: 5\n"
        "        trigger: {type: always}\n        action: {target: cloud}\n"
    )
    out = edit(text, [{"op": "set", "name": "a", "fields": {"priority": 6}}])
    assert out.text == text.replace("priority: 5", "priority: 6")


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([{"op": "set", "name": "nope", "fields": {"enabled": False}}], "no rule named 'nope'"),
        ([{"op": "set", "name": "docs_cloud", "fields": {"api_key": "x"}}], "unknown key 'api_key'"),
        ([{"op": "add", "rule": {"name": "docs_cloud", "priority": 1}}], "exists already"),
        ([{"op": "drop", "name": "docs_cloud"}], "unknown op 'drop'"),
        (
            [
                {
                    "op": "set",
                    "name": "docs_cloud",
                    "fields": {
                        "action": {
                            "target": "cloud",
                            "model": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
                        }
                    },
                }
            ],
            "looks like a literal API key",
        ),
        ([], "non-empty list"),
    ],
)
def test_bad_ops_are_refused(ops: list[dict], message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(EditError, match=message):
        edit(CONFIG, ops)


def test_check_lints_the_edited_text_as_the_file(tmp_path: Path) -> None:
    path = tmp_path / "glider.yaml"
    path.write_text(CONFIG)
    bad = edit(
        CONFIG,
        [
            {
                "op": "set",
                "name": "docs_cloud",
                "fields": {"trigger": {"type": "regex", "pattern": "(unclosed"}},
            }
        ],
    )
    report = check(path, bad.text)
    assert not report.ok and report.errors[0].file == str(path) and report.errors[0].rule == "docs_cloud"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["glider.yaml"]  # the check's file is gone
    assert path.read_text() == CONFIG
