"""A `/local` (or `/fast`) turn holds its family on the local side: subagents, titles, continuations and
compaction stay local unless routing.tool_followup names the spawning tool (or `Tool:subagent_type`);
only a capability gate moves a child, and then as for the command itself (GateRefused, or the rule's
`fallback`). A title that arrives ahead of its turn follows the command of the prompt it quotes."""

from __future__ import annotations

from pathlib import Path

import pytest

from family_helpers import cc, title_request, tool_result, tool_use, user
from glider_cli.config.model import Config
from glider_cli.errors import GateRefused
from glider_cli.turns.sticky import IssuedCall
from routing_helpers import config_with_rules
from turns.test_sticky import RULES, S1, Harness

PROMPT = "Look through src/ and list the modules that import yaml."
BIG = "Describe the design of " + "the module " * 1000  # big_cloud (> 2000 tokens) would take it


def agent(prompt: str = PROMPT, kind: str | None = None, call_id: str = "toolu_ag") -> IssuedCall:
    args = {"description": "find yaml", "prompt": prompt}
    if kind:
        args["subagent_type"] = kind
    return IssuedCall(call_id, "Agent", args)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return config_with_rules(tmp_path, RULES)


def test_a_local_turn_keeps_its_subagent_title_continuation_and_compaction_local(config: Config) -> None:
    h = Harness(config)
    _, d1 = h.route(cc(S1, [user("audit the repo /local")])[0], calls=[agent(BIG)])
    assert (d1.target, d1.rule, d1.command) == ("local", "explicit_local", "/local")
    bound = [d for t, d, _ in h.events if t == "StickyBound"]
    assert bound[0]["target"] == "local" and bound[0]["rule"] == "explicit_local"
    assert "bound local by explicit /local" in bound[0]["reason"]
    # The subagent carries tools and a large prompt: the rules alone would send it to the cloud.
    plan, d = h.route(cc(S1, [user(BIG)], tools=[{"name": "Bash", "input_schema": {}}])[0])
    assert (plan.placement.kind, plan.turn_id, d.target, d.rule, d.backend) == (
        "subagent",
        "t1",
        "local",
        "sticky",
        "local1",
    )
    assert d.trace[0].rule == "sticky" and "held local" in d.trace[0].reason
    assert "bound local by explicit /local" in d.trace[0].reason
    assert all("not reached" in r.reason for r in d.trace[1:])
    # Nothing the subagent did re-bound the family to the cloud.
    assert [d["target"] for t, d, _ in h.events if t == "StickyBound"] == ["local"]
    tr, tb = title_request(S1, "audit the repo /local")
    p2, d2 = h.route(tr, tb)
    assert (p2.placement.kind, p2.turn_id, d2.target) == ("title", "t1", "local")
    # The turn, its subagent and its title are each kept on the machine by the rule (issue 39): the
    # proxy falls back to no cloud backend for them.
    assert (d1.held_local, d.held_local, d2.held_local) == ("explicit_local",) * 3
    history = [user("audit the repo /local"), {"role": "assistant", "content": "looking"}]
    compact = "Your task is to create a detailed summary of the conversation so far, paying close attention"
    r3, b3 = cc(S1, [*history, user(compact)])
    p3, d3 = h.route(r3, b3)
    assert (p3.placement.kind, p3.turn_id, d3.target) == ("summary", "t1", "local")
    r4, _ = cc(S1, [*history, {"role": "assistant", "content": "and more"}])
    p4, d4 = h.route(r4)
    assert (p4.placement.kind, d4.target, d4.held_local) == ("continuation", "local", "explicit_local")
    assert (d3.held_local, d3.rule) == ("explicit_local", "sticky")
    # The next real user message decides anew.
    r5, _ = cc(S1, [*history, user("thanks, now " + "explain it all " * 800)])
    p5, d5 = h.route(r5)
    assert (p5.placement.kind, d5.target, d5.rule, d5.held_local) == ("new_turn", "cloud", "big_cloud", None)


def test_the_allowlist_names_the_spawning_tool_or_its_subagent_type(config: Config) -> None:
    h = Harness(config, allow=("Agent",))
    h.route(cc(S1, [user("audit /local")])[0], calls=[agent(BIG)])
    plan, d = h.route(cc(S1, [user(BIG)])[0])
    assert (plan.placement.kind, d.target, d.rule) == ("subagent", "cloud", "big_cloud")
    assert "allowlist" in plan.view.reason
    # `Agent:Explore` lets Explore subagents decide on their own and holds every other Agent call.
    h2 = Harness(config, allow=("Agent:Explore",))
    h2.route(
        cc(S1, [user("audit /local")])[0],
        calls=[agent(BIG, "Explore", "toolu_1"), agent(BIG + " twice", "general-purpose", "toolu_2")],
    )
    p1, d1 = h2.route(cc(S1, [user(BIG)])[0])
    assert (p1.placement.subagent_type, d1.target, d1.rule) == ("Explore", "cloud", "big_cloud")
    assert "Agent:Explore on routing.tool_followup.allowlist" in p1.view.reason
    assert d1.extra["family"]["subagent_type"] == "Explore"
    p2, d2 = h2.route(cc(S1, [user(BIG + " twice")])[0])
    assert (p2.placement.subagent_type, d2.target, d2.rule) == ("general-purpose", "local", "sticky")
    # A specific entry wins over the bare tool on the other list.
    h3 = Harness(config, allow=("Agent",), deny=("Agent:Plan",))
    h3.route(cc(S1, [user("plan it /local")])[0], calls=[agent(BIG, "Plan")])
    p3, d3 = h3.route(cc(S1, [user(BIG)])[0])
    assert (d3.target, d3.rule) == ("local", "sticky") and "denylist" in p3.view.reason


def test_only_a_capability_gate_moves_a_held_child_and_then_as_for_the_command(
    tmp_path: Path, config: Config
) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("audit /local")])[0], calls=[agent()])
    sub, sub_body = cc(S1, [user(PROMPT)])
    with pytest.raises(GateRefused) as refused:
        h.turns.open(
            sub, sub_body, gate=lambda backend: f"{backend} has a 4096-token window, the pack is 9000"
        )
    assert "held local in turn t1" in refused.value.message
    assert "local1 has a 4096-token window, the pack is 9000" in refused.value.message
    assert "fallback" in (refused.value.hint or "")
    # With a `fallback` on the explicit rule, the gate sends the child there and the trace says so.
    rules = RULES.replace(
        "  action: {target: local, backend: local1}\n- name: explicit_cloud",
        "  action: {target: local, backend: local1}\n  fallback: cloud1\n- name: explicit_cloud",
    )
    h2 = Harness(config_with_rules(tmp_path, rules))
    h2.route(cc(S1, [user("audit /local")])[0], calls=[agent()])
    opened = h2.turns.open(sub, sub_body, gate=lambda backend: "no tool calling")
    d = opened.decision
    assert (d.target, d.backend, d.rule) == ("cloud", "cloud1", "sticky")
    assert "cannot take it: no tool calling; its fallback cloud1 answers" in d.trace[0].reason
    # The gate is not asked of anything else: an open gate leaves the child local.
    h3 = Harness(config)
    h3.route(cc(S1, [user("audit /local")])[0], calls=[agent()])
    assert h3.turns.open(sub, sub_body, gate=lambda backend: None).decision.target == "local"


def test_a_title_ahead_of_its_turn_follows_the_command_it_quotes(config: Config) -> None:
    """Claude Code 2.1.197 sends a prompt's title request before the prompt's own request."""
    h = Harness(config)
    tr, tb = title_request(S1, "fix the parser " + "carefully " * 900 + "/local")
    p, d = h.route(tr, tb)  # large: big_cloud would take it
    assert (p.placement.kind, p.turn_id, p.placement.quoted is not None) == ("title", "t1", True)
    assert (d.target, d.rule) == ("local", "sticky") and "ahead of its turn" in d.trace[0].reason
    assert d.delegate is None and "TurnOpened" not in [t for t, _, _ in h.events]
    # The turn's own request opens its turn in the family the title opened.
    p2, d2 = h.route(cc(S1, [user("fix the parser " + "carefully " * 900 + "/local")])[0])
    assert (p2.placement.kind, p2.turn_id, d2.rule) == ("new_turn", "t1", "explicit_local")
    assert "title request came first" in p2.placement.link
    assert [t for t, _, _ in h.events].count("TurnOpened") == 1
    # A /cloud prompt's title is refused local (small: small_local would take it).
    tc, tcb = title_request(S1, "tidy up /cloud")
    _, dc = h.route(tc, tcb)
    assert (dc.target, dc.rule) == ("cloud", "sticky")
    # A quoted mention is not the command: `/local` in back-ticks holds nothing.
    tq, tqb = title_request(S1, "what is " + "the `/local` flag " * 700)
    _, dq = h.route(tq, tqb)
    assert (dq.target, dq.rule) == ("cloud", "big_cloud")


def test_a_mentioned_command_binds_nothing_and_the_local_binding_survives_a_rebuild(config: Config) -> None:
    h = Harness(config)
    _, d = h.route(cc(S1, [user("what does `/local` do? " + "tell me " * 1500)])[0])
    assert (d.target, d.rule) == ("cloud", "big_cloud")
    h2 = Harness(config)
    h2.route(cc(S1, [user("list the files /fast".replace("/fast", "/local"))])[0], calls=[agent()])
    fresh = Harness(config)
    fresh.clock.now = 1100.0
    assert fresh.st.rebuild(h2.logged()) == 1
    plan, d2 = fresh.route(cc(S1, [user(PROMPT)], tools=[{"name": "Bash", "input_schema": {}}])[0])
    assert (plan.placement.kind, plan.turn_id, d2.target, d2.rule) == ("subagent", "t1", "local", "sticky")
    assert plan.view.held_by == "explicit_local"
    r, _ = cc(S1, [user("list the files /local"), tool_use("toolu_ag", "Agent"), tool_result("toolu_ag")])
    assert fresh.route(r)[1].target == "local"


def test_scripts_see_the_parent_call_of_a_subagent(tmp_path: Path) -> None:
    """`request.parent` is the spawning call (`tool`, `subagent_type`) of a subagent request, None else."""
    script = tmp_path / "explore.star"
    script.write_text(
        "def evaluate(request):\n"
        "    p = request.parent\n"
        '    if p and p["tool"] == "Agent" and p["subagent_type"] == "Explore":\n'
        '        return {"matched": True, "action": {"target": "local"}}\n'
        "    return None\n"
    )
    rules = RULES + (
        "- name: explore_local\n  priority: 60\n"
        f"  trigger: {{type: script, file: '{script}'}}\n  action: {{target: local, backend: local1}}\n"
    )
    h = Harness(config_with_rules(tmp_path, rules), allow=("Agent",))
    h.route(
        cc(S1, [user("audit /cloud")])[0],
        calls=[agent(BIG, "Explore", "toolu_1"), agent(BIG + " again", "Plan", "toolu_2")],
    )
    _, explore = h.route(cc(S1, [user(BIG)])[0])
    assert (explore.target, explore.rule) == ("local", "explore_local")
    _, plan = h.route(cc(S1, [user(BIG + " again")])[0])
    assert (plan.target, plan.rule) == ("cloud", "big_cloud")
    _, plain = h.route(cc(S1, [user("audit /cloud"), {"role": "assistant", "content": "x"}, user(BIG)])[0])
    assert plain.rule == "big_cloud"  # a new turn has no parent
