from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.errors import RuleError
from glider_cli.router import Router, StickyView
from glider_cli.router.scripts import Script, ScriptError, build_payload, check_source
from routing_helpers import config_with_rules, message

FALLBACK = """
- name: fallback
  priority: 0
  trigger: {type: always}
  action: {target: cloud}
"""


def router_for(tmp_path: Path, source: str, action: str = "{target: local}", extra: str = "") -> Router:
    (tmp_path / "rule.star").write_text(source)
    rules = f"""
- name: scripted
  priority: 50
  trigger: {{type: script, file: rule.star}}
  action: {action}
"""
    return Router(config_with_rules(tmp_path, rules + FALLBACK, extra=extra))


def test_script_match_and_no_match(tmp_path: Path) -> None:
    r = router_for(
        tmp_path, 'def evaluate(request):\n    if request.has_tools:\n        return {"matched": True}\n'
    )
    assert r.decide(message("x", tools=True)).rule == "scripted"
    d = r.decide(message("x"))
    assert d.rule == "fallback"
    assert "returned no match" in next(t for t in d.trace if t.rule == "scripted").reason


def test_script_sees_the_spec_fields(tmp_path: Path) -> None:
    src = """
def evaluate(request):
    ok = (request.model == "client-model" and request.stream == True and request.messages[-1].role == "user"
          and request.messages[0].content == "first" and request.estimated_tokens > 0
          and request.complexity_source == "heuristic" and type(request.complexity_score) == "int"
          and request.temperature == 0.5 and request.max_tokens == 77 and request.has_tools == False)
    return {"matched": ok}
"""
    r = router_for(tmp_path, src)
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok ünïcode"}]
    d = r.decide(message("go", history=history, stream=True, temperature=0.5, max_tokens=77))
    assert d.rule == "scripted"


def test_script_sees_the_subagents_parent_call_from_the_sticky_view(tmp_path: Path) -> None:
    src = """
def evaluate(request):
    p = request.parent
    return {"matched": p != None and p["tool"] == "Task" and p["subagent_type"] == "Explore"}
"""
    r = router_for(tmp_path, src)
    sub = {"kind": "subagent", "tools": ["Task"], "subagent_type": "Explore"}
    assert r.decide(message("go"), StickyView(False, "t1", family=sub)).rule == "scripted"
    other = {"kind": "new_turn", "tools": ["Task"], "subagent_type": "Explore"}
    assert r.decide(message("go"), StickyView(False, "t1", family=other)).rule == "fallback"
    assert r.decide(message("go")).rule == "fallback"


def test_the_complexity_fields_are_worked_out_only_for_scripts_that_name_them(tmp_path: Path) -> None:
    # The word is spelled apart here, so this script does not name it and is not given it.
    src = 'def evaluate(request):\n    return {"matched": "compl" + "exity_score" in dir(request)}\n'
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert router_for(tmp_path / "a", src).decide(message("go")).rule == "fallback"
    named = "# reads the complexity score\n" + src
    assert router_for(tmp_path / "b", named).decide(message("go")).rule == "scripted"


def test_optional_fields_absent_when_not_sent(tmp_path: Path) -> None:
    src = 'def evaluate(request):\n    return {"matched": not hasattr(request, "temperature")}\n'
    assert router_for(tmp_path, src).decide(message("x")).rule == "scripted"


def test_returned_action_wins(tmp_path: Path) -> None:
    src = (
        "def evaluate(request):\n"
        '    return {"matched": True, "action": {"target": "cloud", "model": "big"}}\n'
    )
    d = router_for(tmp_path, src).decide(message("x"))
    assert (d.rule, d.target, d.model, d.backend) == ("scripted", "cloud", "big", "cloud1")
    assert "action wins" in d.trace[0].reason or any("action wins" in t.reason for t in d.trace)


def test_returned_fan_out_needs_orchestration(tmp_path: Path) -> None:
    src = 'def evaluate(request):\n    return {"action": {"strategy": "fan_out"}}\n'
    d = router_for(tmp_path, src).decide(message("x"))
    assert d.rule == "fallback"
    assert "fan_out" in next(t for t in d.trace if t.rule == "scripted").reason
    enabled = router_for(tmp_path, src, extra="orchestration:\n  fan_out: {enabled: true}\n")
    assert enabled.decide(message("x")).strategy == "fan_out"


def test_script_that_raises_is_no_match(tmp_path: Path) -> None:
    src = 'def evaluate(request):\n    return {"matched": 1 // 0}\n'
    d = router_for(tmp_path, src).decide(message("x"))
    assert d.rule == "fallback"
    reason = next(t for t in d.trace if t.rule == "scripted").reason
    assert "raised" in reason and "no match" in reason


def test_endless_loop_is_stopped(tmp_path: Path) -> None:
    src = (
        "def evaluate(request):\n    n = 0\n    for i in range(1000000000):\n"
        "        for j in range(1000000000):\n            n += j\n    return None\n"
    )
    d = router_for(tmp_path, src).decide(message("x"))
    assert d.rule == "fallback"
    assert "stopped after" in next(t for t in d.trace if t.rule == "scripted").reason


def test_deep_recursion_is_stopped() -> None:
    script = Script("def f(n):\n    return f(n + 1)\n\ndef evaluate(request):\n    return f(0)\n", "rec.star")
    out = script.call(build_payload({}, ["user"], ["x"]))
    assert out.error is not None and not out.matched


def test_wrong_return_shape_is_no_match() -> None:
    out = Script('def evaluate(request):\n    return "yes"\n', "s.star").call(build_payload({}, [], []))
    assert out.error is not None and "expected None or a dict" in out.error


def test_syntax_error_names_file_line_col(tmp_path: Path) -> None:
    with pytest.raises(RuleError) as exc:
        router_for(tmp_path, "def evaluate(request:\n    return 1\n")
    assert "rule.star:2:5" in str(exc.value)
    assert exc.value.rule == "scripted"


@pytest.mark.parametrize(
    ("source", "line", "fragment"),
    [
        ("def evaluate(r:\n  return 1\n", 2, "Parse error"),
        ("def evaluate(r):\n  return undefined_x\n", 2, "undefined_x"),
        ("x = 1\n", 1, "no evaluate"),
        ("evaluate = 3\n", 1, "must be a function"),
    ],
)
def test_check_source(source: str, line: int, fragment: str) -> None:
    diags = check_source(source, "t.star")
    assert len(diags) == 1
    assert diags[0].line == line and fragment in diags[0].message
    with pytest.raises(ScriptError):
        Script(source, "t.star")


def test_check_source_clean() -> None:
    assert check_source("def evaluate(request):\n    return None\n", "ok.star") == []


def two_scripts(tmp_path: Path, first: str, second: str) -> Router:
    (tmp_path / "a.star").write_text(first)
    (tmp_path / "b.star").write_text(second)
    rules = """
- name: first
  priority: 55
  trigger: {type: script, file: a.star}
  action: {target: local}
- name: second
  priority: 50
  trigger: {type: script, file: b.star}
  action: {target: local}
"""
    return Router(config_with_rules(tmp_path, rules + FALLBACK))


MATCH = 'def evaluate(request):\n    return {"matched": True}\n'
NO_MATCH = "def evaluate(request):\n    return None\n"


def test_adjacent_scripts_share_one_call_and_keep_order(tmp_path: Path) -> None:
    from glider_cli.router.compiled import _GroupedScript

    r = two_scripts(tmp_path, NO_MATCH, MATCH)
    assert sum(isinstance(rule.matcher, _GroupedScript) for rule in r.rules) == 2
    d = r.decide(message("x"))
    assert d.rule == "second"
    assert next(t for t in d.trace if t.rule == "first").reason == "script a.star returned no match"
    assert two_scripts(tmp_path, MATCH, MATCH).decide(message("x")).rule == "first"


def test_a_failing_member_is_attributed_and_the_next_still_runs(tmp_path: Path) -> None:
    d = two_scripts(tmp_path, "def evaluate(request):\n    return 1 // 0\n", MATCH).decide(message("x"))
    assert d.rule == "second"
    assert "a.star raised" in next(t for t in d.trace if t.rule == "first").reason


def test_a_refused_match_lets_the_next_member_run(tmp_path: Path) -> None:
    first = 'def evaluate(request):\n    return {"action": {"target": "moon"}}\n'
    d = two_scripts(tmp_path, first, MATCH).decide(message("x"))
    assert d.rule == "second"
    assert "moon" in next(t for t in d.trace if t.rule == "first").reason


def test_a_disabled_broken_script_does_not_stop_routing(tmp_path: Path) -> None:
    (tmp_path / "rule.star").write_text("def evaluate(request:\n")
    rules = """
- name: scripted
  priority: 50
  enabled: false
  trigger: {type: script, file: rule.star}
  action: {target: local}
"""
    router = Router(config_with_rules(tmp_path, rules + FALLBACK))
    assert router.decide(message("x")).rule == "fallback"


def test_a_script_that_switches_side_drops_the_rules_backend_and_model(tmp_path: Path) -> None:
    src = 'def evaluate(request):\n    return {"action": {"target": "cloud"}}\n'
    d = router_for(tmp_path, src, action="{target: local, backend: local1, model: small}").decide(
        message("x")
    )
    assert (d.rule, d.target, d.backend, d.model) == ("scripted", "cloud", "cloud1", None)
    same = 'def evaluate(request):\n    return {"action": {"adapter": "lora-a"}}\n'
    d = router_for(tmp_path, same, action="{target: local, backend: local1, model: small}").decide(
        message("x")
    )
    assert (d.target, d.backend, d.model, d.adapter) == ("local", "local1", "small", "lora-a")
