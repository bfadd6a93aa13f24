"""The README's rule examples work for the agents it documents (issue 39, point 6): each rule it shows
fires for a request shaped as Claude Code and Codex send one (the captured requests of
tests/fixtures/clients/, the prompt replaced) and as Gemini CLI does (`route explain --client gemini`),
not only for a bare message without tools, and `glider lint` finds nothing in them."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from glider_cli.app.lint import lint
from glider_cli.config.load import load_config
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "tests" / "fixtures" / "clients"


def _readme_block(name: str) -> str:
    """The README's YAML example that defines the rule `name`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if f"- name: {name}" in b]
    return block


def _as_sent(fixture: str, prompt: str) -> tuple[str, dict[str, Any]]:
    """The first request of a captured client run, its latest user text replaced by `prompt`."""
    req = json.loads((CLIENTS / fixture).read_text())["requests"][0]
    body = copy.deepcopy(req["body"])
    if "messages" in body:
        item = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        kind, protocol = "text", "anthropic"
    else:
        item = next(m for m in reversed(body["input"]) if m.get("role") == "user")
        kind, protocol = "input_text", "openai_responses"
    next(b for b in reversed(item["content"]) if b.get("type") == kind)["text"] = prompt
    return protocol, body


@pytest.mark.parametrize(
    ("rule", "prompt"),
    [("refactors_on_my_lora", "please refactor the parser"), ("sql_local", "select id from users")],
)
@pytest.mark.parametrize("fixture", ["claude-code-01-first-turn.json", "codex-exec-01-tool-followup.json"])
def test_the_readme_rule_fires_for_an_agents_request(
    tmp_path: Path, rule: str, prompt: str, fixture: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(_readme_block(rule))
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "my_rule.star").write_text("def evaluate(request):\n    return None\n")
    report = lint(config_path=str(config))
    assert report.errors == ()
    assert [w for w in report.warnings if w.rule == rule] == []
    protocol, body = _as_sent(fixture, prompt)
    request = parse_request(protocol, body)
    assert request.tool_names  # as every agent request: the tools rule (85) would take it below 85
    decision = Router(load_config(config=str(config))).decide(request)
    assert (decision.rule, decision.target) == (rule, "local")


@pytest.mark.parametrize(
    ("rule", "prompt"),
    [("refactors_on_my_lora", "please refactor the parser"), ("sql_local", "select id from users")],
)
def test_the_readme_rule_fires_for_gemini_cli_as_route_explain_sends_it(
    tmp_path: Path, rule: str, prompt: str
) -> None:
    """Gemini CLI's main turn (8 tools), as `route explain --client gemini` builds it."""
    from glider_cli.app.explain import ExplainInput, explain

    config = tmp_path / "config.yaml"
    config.write_text(_readme_block(rule))
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "my_rule.star").write_text("def evaluate(request):\n    return None\n")
    explained = explain(ExplainInput(prompt, config=str(config), client="gemini"))
    assert explained.decision.request.has_tools
    assert (explained.decision.rule, explained.decision.target) == (rule, "local")
    assert explained.differs == ()  # the message alone is decided the same
