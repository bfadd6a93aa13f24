"""The capability gate: a local rule whose backend cannot take the request does not win.

The router only asks the gate (a callable the turn lifecycle builds from the probed capabilities and
the pack's size); these tests give it one and check what the decision and its trace say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glider_cli.errors import GateRefused
from glider_cli.router import Router
from glider_cli.router.decide import GateNote
from routing_helpers import config_with_rules, message

RULES = """
- name: explicit_local
  priority: 100
  trigger: {type: explicit, commands: ["/local", "/fast"]}
  action: {target: local}
- name: small_local
  priority: 5
  trigger: {type: context_size, operator: "<=", value: 100000}
  action: {target: local}
- name: default
  priority: 0
  trigger: {type: always}
  action: {target: cloud}
"""


def too_big(backend: str | None) -> str | None:
    return f"pack 9,800 tokens + 1,024 output > window 8,192 of {backend}"


def test_no_gate_or_a_gate_that_admits_changes_nothing(tmp_path: Path) -> None:
    router = Router(config_with_rules(tmp_path, RULES))
    assert router.decide(message("hi")).rule == "small_local"
    assert router.decide(message("hi"), gate=lambda b: None).rule == "small_local"


def test_a_refused_local_rule_falls_through_to_the_next_rule_with_the_gate_in_the_trace(
    tmp_path: Path,
) -> None:
    router = Router(config_with_rules(tmp_path, RULES))
    asked: list[str | None] = []

    def gate(backend: str | None) -> str | None:
        asked.append(backend)
        return too_big(backend)

    d = router.decide(message("hi"), gate=gate)
    assert (d.rule, d.target) == ("default", "cloud")
    assert asked == ["local1"]
    line = next(r for r in d.trace if r.rule == "small_local")
    assert not line.matched
    assert (
        "local backend local1 cannot take it: pack 9,800 tokens + 1,024 output > window 8,192" in line.reason
    )


def test_an_explicit_local_command_is_never_moved_to_the_cloud_behind_the_user_s_back(tmp_path: Path) -> None:
    router = Router(config_with_rules(tmp_path, RULES))
    with pytest.raises(GateRefused) as err:
        router.decide(message("/local say hi"), gate=too_big)
    assert "explicit_local" in err.value.message and "window 8,192" in err.value.message
    assert err.value.hint is not None and "/cloud" in err.value.hint


def test_an_explicit_rule_with_a_fallback_goes_to_its_fallback_when_gated(tmp_path: Path) -> None:
    rules = RULES.replace(
        "  action: {target: local}\n- name: small_local",
        "  action: {target: local}\n  fallback: cloud1\n- name: small_local",
        1,
    )
    router = Router(config_with_rules(tmp_path, rules))
    d = router.decide(message("/local say hi"), gate=too_big)
    assert (d.rule, d.target, d.backend) == ("explicit_local", "cloud", "cloud1")
    assert d.model is None
    line = next(r for r in d.trace if r.rule == "explicit_local")
    assert line.matched and "its fallback cloud1 answers" in line.reason and "window 8,192" in line.reason


def test_cloud_rules_never_ask_the_gate(tmp_path: Path) -> None:
    router = Router(config_with_rules(tmp_path, RULES.replace("{target: local}", "{target: cloud}")))
    d = router.decide(message("/local hi"), gate=lambda b: pytest.fail("asked"))  # type: ignore[arg-type,return-value]
    assert d.target == "cloud"


def test_an_explicit_local_decision_names_the_rule_that_keeps_it_on_the_machine(tmp_path: Path) -> None:
    """`held_local` is what the proxy reads to fall back to no cloud backend (issue 39, point 1)."""
    router = Router(config_with_rules(tmp_path, RULES))
    d = router.decide(message("/local say hi"))
    assert (d.rule, d.target, d.held_local) == ("explicit_local", "local", "explicit_local")
    assert d.to_record()["held_local"] == "explicit_local"
    # A local decision of any other rule is no hold: its backend may fall back to the cloud.
    other = router.decide(message("say hi"))
    assert (other.rule, other.held_local) == ("small_local", None)
    assert "held_local" not in other.to_record()
    # Moved by the gate to the rule's own fallback: the person's rule named it, so no hold either.
    rules = RULES.replace(
        "  action: {target: local}\n- name: small_local",
        "  action: {target: local}\n  fallback: cloud1\n- name: small_local",
        1,
    )
    moved = Router(config_with_rules(tmp_path, rules)).decide(message("/local say hi"), gate=too_big)
    assert (moved.target, moved.held_local) == ("cloud", None)


def test_a_gate_note_joins_the_winning_line_and_is_no_refusal(tmp_path: Path) -> None:
    router = Router(config_with_rules(tmp_path, RULES))
    cut = "max_tokens 64,000 cut to 7,515: what window 8,192 leaves after the pack 616 tokens (+10% margin)"
    for text, rule in (("/local say hi", "explicit_local"), ("say hi", "small_local")):
        d = router.decide(message(text), gate=lambda b: GateNote(cut))
        line = next(r for r in d.trace if r.rule == rule)
        assert (d.rule, d.target, line.matched) == (rule, "local", True)
        assert line.reason.endswith("; " + cut), line.reason


def test_an_explicit_rule_below_a_refused_local_rule_still_finds_its_command(tmp_path: Path) -> None:
    rules = """
- name: small_local
  priority: 100
  trigger: {type: context_size, operator: "<=", value: 100000}
  action: {target: local}
- name: explicit_cloud
  priority: 50
  trigger: {type: explicit, commands: ["/cloud"]}
  action: {target: cloud}
- name: default
  priority: 0
  trigger: {type: always}
  action: {target: cloud}
"""
    router = Router(config_with_rules(tmp_path, rules))
    d = router.decide(message("say hi /cloud"), gate=too_big)
    assert (d.rule, d.command) == ("explicit_cloud", "/cloud")
    lines = {r.rule: r for r in d.trace}
    assert "cannot take it" in lines["small_local"].reason and not lines["small_local"].matched
    assert lines["explicit_cloud"].matched
