"""The turn index rebuilt from the log: `ToolCallsIssued` keeps call ids and subagent prompts across a
restart; the split modules keep the public names importable from `turns.families`."""

from __future__ import annotations

from typing import Any

from family_helpers import Ids, cc, tool_result, tool_use, user
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.store.eventlog.redact import redact
from glider_cli.turns import families, request_kinds
from glider_cli.turns import records as family_records
from glider_cli.turns.families import PROMPT_CAP, FamilyIndex, agent_prompt

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
S3 = "33333333-3333-4333-8333-333333333333"
PROMPT = "List every module under src/ that imports yaml, with one line on each."


def ev(n: int, kind: str, t: float, turn: str, data: dict[str, Any]) -> dict[str, Any]:
    return make_event(f"{n:04d}", kind, format_ts(t), turn, redact(data))


def opened(n: int, t: float, turn: str, session: str | None, ask: str, side: str) -> list[dict[str, Any]]:
    fam = {"kind": "new_turn", "turn_id": turn, "session_id": session, "answered": []}
    return [
        ev(n, "TurnOpened", t, turn, {"ask": ask, "session_id": session, "messages": 1}),
        ev(n + 1, "RouteDecided", t, turn, {"target": side, "backend": f"{side}1", "family": fam}),
    ]


def issued(n: int, t: float, turn: str, side: str, calls: list[dict[str, str]]) -> dict[str, Any]:
    data = {"family": turn, "session_id": S1, "side": side, "backend": f"{side}1", "model": "m"}
    return ev(n, "ToolCallsIssued", t, turn, {**data, "calls": calls})


def test_a_tool_result_after_a_rebuild_joins_the_issuing_family_not_the_session_s_latest() -> None:
    log = [
        *opened(1, 100.0, "tA", S1, "list the files", "local"),
        issued(3, 101.0, "tA", "local", [{"id": "toolu_A", "name": "Bash"}]),
        # A later turn of the same session went to the cloud: the session's current family is tB.
        *opened(4, 102.0, "tB", S1, "and explain them /cloud", "cloud"),
    ]
    ix = FamilyIndex(Ids())
    for e in log:
        ix.rebuild_event(e)
    fam = ix.get("tA")
    assert fam is not None and fam.open_calls == {"toolu_A"}
    assert (fam.calls["toolu_A"].side, fam.calls["toolu_A"].backend) == ("local", "local1")
    assert ix.session_family(S1, 110.0) is ix.get("tB")
    # The result carries another session id (a subagent's own tool call), or none at all.
    r, _ = cc(S3, [user("x"), tool_use("toolu_A"), tool_result("toolu_A")])
    p = ix.place(r, 110.0)
    assert (p.kind, p.turn_id, p.tools) == ("tool_result", "tA", ("Bash",))
    assert p.link == "answers tool call toolu_A issued in this family"
    assert ix.pending("tA") == 0


def test_an_answer_logged_before_the_restart_closes_the_call_and_its_subagent_link() -> None:
    answered = {"kind": "tool_result", "turn_id": "tA", "session_id": S1, "answered": ["toolu_G"]}
    log = [
        *opened(1, 100.0, "tA", S1, "audit /cloud", "cloud"),
        issued(3, 101.0, "tA", "cloud", [{"id": "toolu_G", "name": "Agent", "prompt": PROMPT}]),
        ev(4, "RouteDecided", 150.0, "tA", {"target": "cloud", "backend": "cloud1", "family": answered}),
    ]
    ix = FamilyIndex(Ids())
    for e in log:
        ix.rebuild_event(e)
    fam = ix.get("tA")
    assert fam is not None and fam.open_calls == set() and fam.calls["toolu_G"].answered
    # The call was answered, so a new message with the same text is a turn of its own.
    p = ix.place(cc(S2, [user(PROMPT)])[0], 160.0)
    assert (p.kind, p.turn_id) == ("new_turn", "t1")


def test_a_subagent_after_a_rebuild_joins_its_parent_family() -> None:
    log = [
        *opened(1, 100.0, "tA", S1, "audit the repo /cloud", "cloud"),
        issued(3, 101.0, "tA", "cloud", [{"id": "toolu_G", "name": "Agent", "prompt": PROMPT}]),
    ]
    ix = FamilyIndex(Ids())
    for e in log:
        ix.rebuild_event(e)
    p = ix.place(cc(S1, [user(PROMPT)])[0], 120.0)
    assert (p.kind, p.turn_id, p.parent_call, p.tools) == ("subagent", "tA", "toolu_G", ("Agent",))
    # Past the window the parent is no longer live: the same prompt opens a turn.
    late = FamilyIndex(Ids())
    for e in log:
        late.rebuild_event(e)
    assert late.place(cc(S1, [user(PROMPT)])[0], 101.0 + 1800.001).kind == "new_turn"


def test_a_redacted_prompt_links_by_the_text_before_the_redaction() -> None:
    secret = "sk-ant-" + "a" * 30
    long_prompt = f"Check the deployment scripts under ops/ for the key {secret} and report where it is used."
    short_prompt = f"Use {secret} now."
    log = [
        *opened(1, 100.0, "tA", S1, "audit /cloud", "cloud"),
        issued(
            3,
            101.0,
            "tA",
            "cloud",
            [
                {"id": "toolu_1", "name": "Agent", "prompt": long_prompt},
                {"id": "toolu_2", "name": "Task", "prompt": short_prompt},
            ],
        ),
    ]
    assert secret not in str(log)
    ix = FamilyIndex(Ids())
    for e in log:
        ix.rebuild_event(e)
    fam = ix.get("tA")
    assert fam is not None
    assert fam.calls["toolu_1"].prompt == "Check the deployment scripts under ops/ for the key"
    assert fam.calls["toolu_2"].prompt == ""  # too little text before the redaction to link safely
    p = ix.place(cc(S1, [user(long_prompt)])[0], 110.0)
    assert (p.kind, p.turn_id, p.parent_call) == ("subagent", "tA", "toolu_1")
    assert ix.place(cc(S3, [user(short_prompt)])[0], 111.0).kind == "new_turn"


def test_a_logged_call_for_a_family_the_log_lost_makes_the_family() -> None:
    ix = FamilyIndex(Ids())
    ix.rebuild_event(issued(1, 100.0, "tZ", "local", [{"id": "call_9", "name": "exec_command"}]))
    ix.rebuild_event(ev(2, "ToolCallsIssued", 100.0, "tZ", {"calls": "not a list"}))
    ix.rebuild_event(ev(3, "ToolCallsIssued", 100.0, "tZ", {"calls": [{"id": 3}, "x", {"name": "n"}]}))
    fam = ix.family_of_call("call_9")
    assert fam is not None and (fam.turn_id, fam.session_id, fam.side) == ("tZ", S1, "local")
    assert list(fam.calls) == ["call_9"]


def test_agent_prompts_are_capped_in_memory_and_in_the_log() -> None:
    long = "a" * (PROMPT_CAP + 500)
    assert agent_prompt("Agent", {"prompt": long}) == "a" * PROMPT_CAP
    assert agent_prompt("Bash", {"prompt": long}) == ""
    ix = FamilyIndex(Ids())
    ix.place(cc(S1, [user("go")])[0], 0.0)
    ix.issued("t1", "toolu_x", "Agent", long)
    fam = ix.get("t1")
    assert fam is not None and len(fam.calls["toolu_x"].prompt) == PROMPT_CAP
    # A subagent's message holds the whole prompt: the capped prefix still links it.
    p = ix.place(cc(S1, [user(long)])[0], 1.0)
    assert (p.kind, p.turn_id) == ("subagent", "t1")


def test_the_split_modules_keep_the_public_names_in_router_families() -> None:
    assert families.Placement is family_records.Placement and families.Call is family_records.Call
    assert families.Family is family_records.Family and families.Binding is family_records.Binding
    assert families.is_title_request is request_kinds.is_title_request
    assert families.answered_calls is request_kinds.answered_calls and families.KINDS == request_kinds.KINDS
    assert set(families.__all__) <= set(dir(families))
