"""Sticky binding, deny-local, tool results going home, routing.tool_followup, TTL/grace, rebuild."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from family_helpers import Clock, Ids, cc, title_request, tool_result, tool_use, user
from glider_cli.config.model import Config
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, RouteDecision
from glider_cli.router import Router
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.store.eventlog.redact import redact
from glider_cli.turns.families import PROMPT_CAP, Family, Placement
from glider_cli.turns.lifecycle import Served, Turns
from glider_cli.turns.sticky import IssuedCall, StickyPlan, _commands
from routing_helpers import config_with_rules

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
RULES = """
- name: explicit_local
  priority: 100
  trigger: {type: explicit, commands: ["/local"]}
  action: {target: local, backend: local1}
- name: explicit_cloud
  priority: 99
  trigger: {type: explicit, commands: ["/cloud", "/heavy"]}
  action: {target: cloud, backend: cloud1}
- name: big_cloud
  priority: 10
  trigger: {type: context_size, operator: ">", value: 2000}
  action: {target: cloud, backend: cloud1}
- name: small_local
  priority: 5
  trigger: {type: context_size, operator: "<=", value: 2000}
  action: {target: local, backend: local1}
"""


class Harness:
    """The turn lifecycle (`Turns.open` / `close`) run the way the proxy runs it, with a settable clock."""

    def __init__(self, config: Config, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> None:
        self.clock = Clock(1000.0)
        self.turns = Turns(
            Router(config),
            StickySettings(ttl_seconds=900.0, grace_seconds=120.0),
            ToolFollowupSettings(allowlist=allow, denylist=deny),
            clock=self.clock,
            new_id=Ids(),
        )
        self.st = self.turns.sticky
        self.router = self.turns.router
        self.events: list[tuple[str, dict[str, Any], str | None]] = []
        self.times: list[float] = []

    def route(
        self,
        req: ChatRequest,
        body: dict[str, Any] | None = None,
        *,
        calls: list[IssuedCall] | None = None,
        count_tokens: bool = False,
    ) -> tuple[StickyPlan, RouteDecision]:
        opened = self.turns.open(req, body, count_tokens=count_tokens)
        plan, decision = opened.plan, opened.decision
        if count_tokens:
            return plan, decision
        # The events in the order (and with the data) the proxy emits them.
        for kind, data, turn in opened.events:
            self.emit(kind, dict(data), turn)
        side, backend, model = decision.target, decision.backend, decision.model
        for kind, data, turn in self.turns.close(
            opened, Served(backend, side, model, 200, calls=calls or [])
        ):
            if kind not in ("FulfilledLocal", "OriginPassthrough"):  # the outcome is not the index's
                self.emit(kind, dict(data), turn)
        return plan, decision

    def emit(self, kind: str, data: dict[str, Any], turn: str | None) -> None:
        self.events.append((kind, data, turn))
        self.times.append(self.clock.now)

    def logged(self) -> list[dict[str, Any]]:
        """The events as the writer logs them (redacted, stamped with the clock of their request)."""
        return [
            make_event(f"{i:04d}", t, format_ts(at), turn, redact(d))
            for i, ((t, d, turn), at) in enumerate(zip(self.events, self.times, strict=True))
        ]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return config_with_rules(tmp_path, RULES)


def bash(call_id: str) -> IssuedCall:
    return IssuedCall(call_id, "Bash", {"command": "ls"})


def test_cloud_turn_binds_and_its_follow_ons_stay_off_local(config: Config) -> None:
    h = Harness(config)
    r1, _ = cc(S1, [user("say hi /cloud")])
    p1, d1 = h.route(r1, calls=[bash("toolu_1")])
    assert (d1.target, d1.rule, p1.placement.new_turn) == ("cloud", "explicit_cloud", True)
    bound = [d for t, d, _ in h.events if t == "StickyBound"]
    assert bound and bound[0]["family"] == "t1" and "explicit /cloud" in bound[0]["reason"]
    assert bound[0]["ttl"] == 900.0 and bound[0]["grace"] == 120.0
    # A title request (small, no tools) would be local by size: the binding refuses it.
    h.clock.now += 5
    tr, tb = title_request(S1, "say hi /cloud")
    p2, d2 = h.route(tr, tb)
    assert p2.placement.kind == "title" and d2.target == "cloud" and d2.rule == "sticky"
    reasons = " ".join(r.reason for r in d2.trace)
    assert "local is refused" in reasons and "turn t1" in reasons
    assert d2.extra["family"]["turn_id"] == "t1"
    # The tool round trip stays cloud too.
    r3, _ = cc(S1, [user("say hi /cloud"), tool_use("toolu_1"), tool_result("toolu_1")])
    p3, d3 = h.route(r3)
    assert (p3.placement.kind, d3.target, d3.backend) == ("tool_result", "cloud", "cloud1")
    assert any(r.rule == "sticky" and "returns to the cloud side" in r.reason for r in d3.trace)


def test_the_next_real_user_message_decides_anew_and_may_go_local(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("say hi /cloud")])[0])
    h.clock.now += 3
    r2, _ = cc(S1, [user("say hi /cloud"), {"role": "assistant", "content": "hi"}, user("thanks")])
    p2, d2 = h.route(r2)
    assert (p2.placement.kind, p2.turn_id, d2.target, d2.rule) == ("new_turn", "t2", "local", "small_local")
    assert d2.extra["sticky"]["bound"] is False


def test_a_tool_result_returns_to_the_local_side_that_issued_it(config: Config) -> None:
    h = Harness(config)
    _, d1 = h.route(cc(S1, [user("/local list the files")])[0], calls=[bash("toolu_L")])
    assert d1.target == "local"
    big = "x" * 12000  # the tool output makes the request large: big_cloud would take it
    r2, _ = cc(S1, [user("/local list the files"), tool_use("toolu_L"), tool_result("toolu_L", big)])
    _, d2 = h.route(r2)
    assert (d2.target, d2.rule, d2.backend) == ("local", "explicit_local", "local1")
    # Without /local in the prompt the rules would send it to the cloud; it still goes home.
    h2 = Harness(config)
    h2.route(cc(S2, [user("list the files")])[0], calls=[bash("toolu_M")])
    r3, _ = cc(S2, [user("list the files"), tool_use("toolu_M"), tool_result("toolu_M", big)])
    _, d3 = h2.route(r3)
    assert (d3.target, d3.rule, d3.backend) == ("local", "sticky", "local1")
    assert d3.trace[-1].rule == "sticky" and "local side that issued it" in d3.trace[-1].reason
    assert any(r.rule == "big_cloud" and r.matched for r in d3.trace)


def test_ttl_boundary_with_an_injected_clock(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("hi /cloud")])[0], calls=[bash("toolu_1")])  # the run goes on: a call is pending
    tr, tb = title_request(S1, "hi /cloud")
    h.clock.now = 1000.0 + 900.0
    assert h.route(tr, tb)[1].target == "cloud"
    h.clock.now = 1000.0 + 900.001
    _, d = h.route(tr, tb)
    assert (d.target, d.rule) == ("local", "small_local")
    assert h.st.state("t1")["live"] is False


def test_grace_after_the_parent_run_ends(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("hi /cloud")])[0], calls=[bash("toolu_1")])
    h.clock.now = 1000.0 + 850.0
    r2, _ = cc(S1, [user("hi /cloud"), tool_use("toolu_1"), tool_result("toolu_1")])
    h.route(r2)  # the reply issues no call and nothing is pending: the run ends at 1850
    ended = [d for t, d, _ in h.events if t == "StickyBound" and "ended_at" in d]
    assert ended and ended[0]["ended_at"] == 1850.0
    tr, tb = title_request(S1, "hi /cloud")
    h.clock.now = 1850.0 + 120.0  # past the TTL (1900) only at 1970: still within grace
    assert h.route(tr, tb)[1].target == "cloud"
    h.clock.now = 1850.0 + 120.001
    assert h.route(tr, tb)[1].target == "local"


def test_subagent_follows_the_binding_unless_its_tool_is_allowlisted(config: Config) -> None:
    prompt = "Look through src/ and list the modules that import yaml."
    agent = IssuedCall("toolu_ag", "Agent", {"description": "find yaml", "prompt": prompt})
    h = Harness(config)
    h.route(cc(S1, [user("audit the repo /cloud")])[0], calls=[agent])
    plan, d = h.route(cc(S1, [user(prompt)])[0])
    assert (plan.placement.kind, plan.turn_id, d.target, d.rule) == ("subagent", "t1", "cloud", "sticky")
    h2 = Harness(config, allow=("Agent",))
    h2.route(cc(S1, [user("audit the repo /cloud")])[0], calls=[agent])
    plan2, d2 = h2.route(cc(S1, [user(prompt)])[0])
    assert (plan2.placement.kind, d2.target) == ("subagent", "local")
    assert "allowlist" in plan2.view.reason


def test_a_denylisted_child_follows_its_parent_even_when_nothing_is_bound(config: Config) -> None:
    prompt = "Describe the design of " + "the module " * 1000  # large: big_cloud would take it
    agent = IssuedCall("toolu_ag", "Agent", {"prompt": prompt})
    h = Harness(config, deny=("Agent",))
    _, d1 = h.route(cc(S1, [user("/local audit")])[0], calls=[agent])
    assert d1.target == "local"
    plan, d = h.route(cc(S1, [user(prompt)])[0])
    assert (plan.placement.kind, d.target, d.rule, d.backend) == ("subagent", "local", "sticky", "local1")
    assert "denylist" in d.trace[-1].reason


def test_summaries_are_refused_local_and_count_tokens_never_binds(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("hello")])[0])  # local, nothing bound
    r, b = cc(
        S1, [user("hello"), {"role": "assistant", "content": "hi"}, user("Summarize the changes so far")]
    )
    plan, d = h.route(r, b)
    assert (plan.placement.kind, d.target) == ("summary", "cloud")
    before = len(h.events)
    probe, _ = cc(S1, [user("/cloud foo")])
    plan2, d2 = h.route(probe, count_tokens=True)
    assert plan2.placement.kind == "count_tokens" and d2.target == "cloud"
    assert not [t for t, _, _ in h.events[before:] if t == "StickyBound"]


def test_the_binding_survives_a_rebuild_from_the_log(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("hi /cloud")])[0], calls=[bash("toolu_1")])
    assert [t for t, _, _ in h.events] == ["TurnOpened", "RouteDecided", "StickyBound", "ToolCallsIssued"]
    fresh = Harness(config)
    fresh.clock.now = 1500.0
    assert fresh.st.rebuild(h.logged()) == 1
    tr, tb = title_request(S1, "hi /cloud")
    p, d = fresh.route(tr, tb)
    assert (p.turn_id, d.target, d.rule) == ("t1", "cloud", "sticky")
    r, _ = cc(S1, [user("hi /cloud"), tool_use("toolu_1"), tool_result("toolu_1")])
    p2, d2 = fresh.route(r)
    assert (p2.placement.kind, p2.turn_id, d2.target) == ("tool_result", "t1", "cloud")
    assert p2.placement.link == "answers tool call toolu_1 issued in this family"


def test_served_logs_the_calls_a_reply_issued(config: Config) -> None:
    h = Harness(config)
    agent = IssuedCall("toolu_ag", "Agent", {"description": "d", "prompt": "p" * 5000})
    h.route(cc(S1, [user("/local look around")])[0], calls=[bash("toolu_1"), agent, IssuedCall("", "X", {})])
    logged = [(d, turn) for t, d, turn in h.events if t == "ToolCallsIssued"]
    assert len(logged) == 1 and logged[0][1] == "t1"
    data = logged[0][0]
    assert (data["family"], data["session_id"], data["side"], data["backend"]) == (
        "t1",
        S1,
        "local",
        "local1",
    )
    assert data["calls"] == [
        {"id": "toolu_1", "name": "Bash"},
        {"id": "toolu_ag", "name": "Agent", "prompt": "p" * PROMPT_CAP},
    ]
    # A reply with no call logs none (and, nothing pending... here two calls are, so no run end either).
    before = len(h.events)
    h.route(cc(S1, [user("/local look around"), tool_use("toolu_1"), tool_result("toolu_1")])[0])
    assert [t for t, _, _ in h.events[before:]] == ["RouteDecided"]


def test_after_a_restart_a_tool_result_goes_to_the_side_that_issued_it(config: Config) -> None:
    """Events written by one index, a new one rebuilt from the log: the call id, not the session,
    decides where the result goes, and the issuing side's backend serves it."""
    h = Harness(config)
    h.route(cc(S1, [user("list the files")])[0], calls=[bash("toolu_L")])
    h.clock.now += 5
    # The same session's next turn goes to the cloud: it is the session's latest family now.
    h.route(cc(S1, [user("list the files"), {"role": "assistant", "content": "..."}, user("x /cloud")])[0])
    fresh = Harness(config)
    fresh.clock.now = 1600.0
    assert fresh.st.rebuild(h.logged()) == 2
    big = "x" * 12000  # big_cloud would take it, and the session's latest family is cloud-bound
    r, _ = cc(S1, [user("list the files"), tool_use("toolu_L"), tool_result("toolu_L", big)])
    p, d = fresh.route(r)
    assert (p.placement.kind, p.turn_id, d.target, d.rule, d.backend) == (
        "tool_result",
        "t1",
        "local",
        "sticky",
        "local1",
    )
    assert "returns to the local side that issued it" in d.trace[-1].reason


def test_after_a_restart_a_subagent_joins_its_parent_family(config: Config) -> None:
    prompt = "Look through src/ and list the modules that import yaml."
    agent = IssuedCall("toolu_ag", "Agent", {"description": "find yaml", "prompt": prompt})
    h = Harness(config)
    h.route(cc(S1, [user("audit the repo /cloud")])[0], calls=[agent])
    fresh = Harness(config)
    fresh.clock.now = 1300.0
    fresh.st.rebuild(h.logged())
    plan, d = fresh.route(cc(S1, [user(prompt)])[0])
    assert (plan.placement.kind, plan.turn_id, plan.placement.parent_call) == ("subagent", "t1", "toolu_ag")
    assert (d.target, d.rule) == ("cloud", "sticky")
    # The Agent result returns to the parent, on its side, and the run can end (grace starts).
    r, _ = cc(S1, [user("audit the repo /cloud"), tool_use("toolu_ag", "Agent"), tool_result("toolu_ag")])
    p2, d2 = fresh.route(r)
    assert (p2.placement.kind, p2.turn_id, d2.target) == ("tool_result", "t1", "cloud")
    assert [d["ended_at"] for t, d, _ in fresh.events if t == "StickyBound"] == [1300.0]


def test_commands_are_read_only_from_the_prompt_that_opened_the_turn(config: Config) -> None:
    h = Harness(config)
    opening = "fix the parser <system-reminder>today</system-reminder>"
    first = h.turns.open(*cc(S1, [user(opening)]))
    assert first.new_turn and first.plan.view.commands
    # A tool loop's request ends in the opening message: the person's own text, commands read.
    loop = h.turns.open(*cc(S1, [user(opening), tool_use("toolu_1"), tool_result("toolu_1")]))
    assert (loop.plan.placement.kind, loop.turn_id, loop.plan.view.commands) == ("tool_result", "t1", True)
    # The same words without the client's block are what the person typed: read too.
    typed = h.turns.open(*cc(S1, [user("fix the parser "), {"role": "assistant", "content": "Sure"}]))
    assert (typed.plan.placement.kind, typed.turn_id) == ("continuation", "t1") and typed.plan.view.commands
    # A follow-on whose latest user text is not the opening prompt carries no command.
    other = h.turns.open(*cc(S1, [user("and also /local"), {"role": "assistant", "content": "Sure"}]))
    assert (other.plan.placement.kind, other.turn_id) == ("continuation", "t1")
    assert not other.plan.view.commands


def test_a_family_opened_ahead_of_its_turn_reads_no_command_from_a_request_without_text() -> None:
    fam = Family("t1", S1, 0.0, 0.0, typed="audit the lexer")  # a title opened it: no `ask` yet
    follow = Placement("continuation", "t1", S1, "same session id")
    bare, _ = cc(S1, [{"role": "assistant", "content": "prefill"}])
    assert bare.last_user_text == "" and not _commands(bare, follow, fam)
    asked, _ = cc(S1, [user("audit the lexer"), {"role": "assistant", "content": "prefill"}])
    assert _commands(asked, follow, fam)
