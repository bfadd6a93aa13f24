"""`glider lint` says when a rule asks for a strategy whose `orchestration.<strategy>.enabled` is missing."""

from __future__ import annotations

from pathlib import Path

from glider_cli.app.lint import lint

RULES = (
    "routing:\n  rules:\n"
    "    - {name: piped, priority: 9, trigger: {type: explicit, commands: ['/p']},"
    " action: {target: local, strategy: pipeline}}\n"
    "    - {name: scripted, priority: 8, trigger: {type: script, file: s.star}, action: {target: local}}\n"
    "    - {name: rest, priority: 0, trigger: {type: always}, action: {target: local}}\n"
    "backends:\n  ollama: {type: ollama, side: local}\n"
)
SCRIPT = (
    "def evaluate(request):\n"
    '    return {"matched": True, "action": {"target": "local", "strategy": "ensemble"}}\n'
)


def _warnings(tmp_path: Path, text: str) -> list[dict[str, object]]:
    (tmp_path / "s.star").write_text(SCRIPT)
    (tmp_path / "c.yaml").write_text(text)
    return [
        w
        for w in lint(config_path=str(tmp_path / "c.yaml")).to_dict()["warnings"]
        if "orchestration" in str(w)
    ]


def test_pipeline_and_ensemble_without_enabled_are_warned(tmp_path: Path) -> None:
    found = {(w["rule"], w["message"].split(",")[0]) for w in _warnings(tmp_path, RULES)}  # type: ignore[union-attr]
    assert found == {("piped", "asks for strategy pipeline"), ("scripted", "asks for strategy ensemble")}


def test_enabled_strategies_are_not_warned(tmp_path: Path) -> None:
    on = "orchestration:\n  pipeline: {enabled: true}\n  ensemble: {enabled: true}\n"
    assert _warnings(tmp_path, RULES + on) == []
