"""`glider lint` finds what breaks routing: no catch-all, dead rules (the same trigger above, ranges
above that take every request), adapters on backends that are not vLLM, `evaluate` with the wrong
arity, commands without a slash, a misspelt profile rule; RE2's own noise never reaches the user."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from glider_cli.app.lint import lint

HEAD = "routing:\n  rules:\n"
CATCH_ALL = "    - {name: default, priority: 0, trigger: {type: always}, action: {target: cloud}}\n"
BACKENDS = """backends:
  ollama: {type: ollama, side: local, base_url: "http://127.0.0.1:11434", model: m}
  vllm: {type: openai, side: local, base_url: "http://127.0.0.1:8000/v1", model: base}
  cloud: {type: anthropic, side: cloud, base_url: "https://api.anthropic.com", api_key_env: K}
"""


def rule(name: str, priority: int, trigger: str, action: str = "{target: cloud}") -> str:
    return f"    - {{name: {name}, priority: {priority}, trigger: {trigger}, action: {action}}}\n"


def findings(tmp_path: Path, text: str, scripts: dict[str, str] | None = None) -> list[dict[str, object]]:
    for name, src in (scripts or {}).items():
        (tmp_path / name).write_text(src)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    report = lint(config_path=str(path)).to_dict()
    # BACKENDS defines more backends than most configs here use: that check is test_lint_backends's;
    # local rules below the task classifier's tools rule (85) are test_lint_tools_shadowed.py's.
    reach = ("routing.local_backend", "routing.cloud_backend")
    return [
        *report["errors"],
        *(
            w
            for w in report["warnings"]
            if w["key"] not in reach and "task_classifier.tools" not in w["message"]
        ),
    ]


def one(found: list[dict[str, object]], key: str, rule_name: str | None = None) -> dict[str, object]:
    hits = [f for f in found if f["key"] == key and (rule_name is None or f["rule"] == rule_name)]
    assert len(hits) == 1, found
    assert hits[0]["file"], hits[0]
    return hits[0]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "routing:\n  rules: []\n",
        HEAD + rule("big", 10, "{type: context_size, operator: '>', value: 100}"),
        HEAD + rule("x", 10, "{type: explicit, commands: [/x]}"),
    ],
)
def test_a_config_without_a_catch_all_is_an_error(tmp_path: Path, text: str) -> None:
    f = one(findings(tmp_path, BACKENDS + text), "routing.rules")
    assert f["severity"] == "error" and "no rule covers every request" in str(f["message"])
    assert f["file"] == str(tmp_path / "c.yaml")


def test_complementary_sizes_are_a_catch_all(tmp_path: Path) -> None:
    text = BACKENDS + HEAD
    text += rule("big", 10, "{type: context_size, operator: '>', value: 8000}")
    text += rule("small", 5, "{type: context_size, operator: '<=', value: 8000}", "{target: local}")
    assert findings(tmp_path, text) == []


def test_rules_below_a_complementary_pair_can_never_run(tmp_path: Path) -> None:
    """The pure-local profile before this fix: the last rule, changed to local, never answered."""
    text = "extends: default\nrouting:\n  rules:\n    - {name: default, action: {target: local}}\n"
    f = one(findings(tmp_path, text), "priority", "default")
    assert f["severity"] == "error" and str(f["message"]).startswith("can never run")
    assert "large_context_cloud (> 8000, priority 10)" in str(f["message"])
    assert "small_context_local (<= 8000, priority 5)" in str(f["message"])
    assert f["file"] == str(tmp_path / "c.yaml")
    # The default profile's own last rule does run: for a cloud-bound follow-on, deny-local skips
    # small_context_local and the cloud catch-all answers.
    assert findings(tmp_path, "extends: default\n") == []


def test_a_rule_shadowed_by_the_same_trigger_above(tmp_path: Path) -> None:
    text = BACKENDS + HEAD + rule("a", 50, "{type: explicit, commands: [/x, /y]}")
    text += rule("b", 40, "{type: explicit, commands: [/y]}")
    text += rule("c", 30, "{type: regex, pattern: 'deploy'}") + rule(
        "d", 20, "{type: regex, pattern: 'deploy'}"
    )
    text += CATCH_ALL
    found = findings(tmp_path, text)
    b = one(found, "trigger", "b")
    assert "'a' (priority 50) above it has the same trigger" in str(b["message"])
    assert one(found, "trigger", "d")["line"] == 10
    # A local rule above does not shadow a cloud one: deny-local skips it for cloud-bound follow-ons.
    text = BACKENDS + HEAD + rule("l", 50, "{type: regex, pattern: 'x'}", "{target: local}")
    text += rule("c", 40, "{type: regex, pattern: 'x'}") + CATCH_ALL
    assert findings(tmp_path, text) == []
    # Nor one on another local backend (the gate may refuse the first and not the second).
    text = BACKENDS + HEAD + rule("l1", 50, "{type: regex, pattern: 'x'}", "{target: local, backend: ollama}")
    text += rule("l2", 40, "{type: regex, pattern: 'x'}", "{target: local, backend: vllm}") + CATCH_ALL
    assert findings(tmp_path, text) == []


def test_a_size_range_inside_the_ranges_above_can_never_run(tmp_path: Path) -> None:
    text = BACKENDS + HEAD + rule("huge", 20, "{type: context_size, operator: '>', value: 1000}")
    text += rule("bigger", 10, "{type: context_size, operator: '>=', value: 5000}") + CATCH_ALL
    f = one(findings(tmp_path, text), "priority", "bigger")
    assert "every request it matches: huge (> 1000, priority 20)" in str(f["message"])


def test_an_adapter_needs_a_local_vllm_backend(tmp_path: Path) -> None:
    text = BACKENDS + HEAD
    text += rule("ok", 30, "{type: regex, pattern: a}", "{target: local, backend: vllm, adapter: sql-lora}")
    text += rule("ol", 20, "{type: regex, pattern: b}", "{target: local, backend: ollama, adapter: sql-lora}")
    text += rule("cl", 10, "{type: regex, pattern: c}", "{target: cloud, backend: cloud, adapter: sql-lora}")
    found = findings(tmp_path, text + CATCH_ALL)
    assert [f["rule"] for f in found if f["key"] == "action.adapter"] == ["ol", "cl"]
    assert "backend 'ollama' is type ollama on the local side" in str(
        one(found, "action.adapter", "ol")["message"]
    )


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ("def evaluate():\n    return None\n", True),
        ("def evaluate(request, extra):\n    return None\n", True),
        ("def evaluate(\n    request,\n):\n    return None\n", False),
        ("def evaluate(request, verbose = False):\n    return None\n", False),
        ("def evaluate(*args):\n    return None\n", False),
    ],
)
def test_evaluate_takes_exactly_one_argument(tmp_path: Path, source: str, bad: bool) -> None:
    text = BACKENDS + HEAD + rule("s", 10, "{type: script, file: s.star}") + CATCH_ALL
    found = [f for f in findings(tmp_path, text, {"s.star": "# a rule\n" + source}) if f["rule"] == "s"]
    if not bad:
        assert found == []
        return
    (f,) = found
    assert (
        f["key"] == "trigger.file"
        and f["line"] == 2
        and "Glider calls evaluate(request) with one" in str(f["message"])
    )
    assert str(f["file"]).endswith("s.star")


def test_explicit_commands_need_a_leading_slash(tmp_path: Path) -> None:
    text = BACKENDS + HEAD + rule("x", 10, "{type: explicit, commands: [local, /ok]}") + CATCH_ALL
    f = one(findings(tmp_path, text), "trigger.commands", "x")
    assert "'local' must be a slash and a word (like /local)" in str(f["message"])


def test_a_misspelt_profile_rule_gets_a_did_you_mean(tmp_path: Path) -> None:
    text = "extends: default\nrouting:\n  rules:\n    - {name: refactor_locl, enabled: false}\n"
    found = findings(tmp_path, text)
    f = one(found, "name", "refactor_locl")
    assert "did you mean 'refactor_local'?" in str(f["message"]) and f["line"] == 4
    assert len(found) == 1  # not also "needs a priority / a trigger / an action"


def test_re2_noise_and_byte_reprs_do_not_reach_the_user(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BACKENDS + HEAD + rule("r", 1, "{type: regex, pattern: '(a'}") + CATCH_ALL)
    proc = subprocess.run(
        [sys.executable, "-c", "from glider_cli.cli import main; main()", "lint", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "missing ): (a" in proc.stderr
    for noise in ("absl", "re2.cc", "b'", "InitializeLog"):
        assert noise not in proc.stderr + proc.stdout


def test_local_only_skips_cloud_rules_and_they_cover_nothing(tmp_path: Path) -> None:
    """`extends: default` with local_only: the cloud rules never run, and nothing local answers a
    context over 8000 tokens (the pure-local profile switches large_context_cloud off and keeps its
    last rule local, so it is clean)."""
    found = findings(tmp_path, "extends: default\nrouting:\n  local_only: true\n")
    skipped = sorted(str(f["rule"]) for f in found if f["key"] == "routing.local_only")
    assert skipped == [
        "composer_wrapup_origin",
        "default",
        "large_context_cloud",
        "task_classifier.cloud",
        "task_classifier.tools",
    ]
    assert all(f["severity"] == "warning" for f in found if f["key"] == "routing.local_only")
    assert one(found, "routing.rules")["severity"] == "error"
    assert lint(profile="pure-local").to_dict() == {
        "source": "<bundled:pure-local>",
        "errors": [],
        "warnings": [],
    }
