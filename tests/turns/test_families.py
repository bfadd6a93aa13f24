"""The turn-family index: every linking rule, the time window, the size bound and the rebuild."""

from __future__ import annotations

import json
from pathlib import Path

from family_helpers import (
    Ids,
    cc,
    codex,
    codex_call,
    codex_output,
    codex_user,
    title_request,
    tool_result,
    tool_use,
    user,
)
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.turns.families import FamilyIndex, agent_prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def index(**kw: float | int) -> FamilyIndex:
    return FamilyIndex(Ids(), **kw)  # type: ignore[arg-type]


def test_a_new_user_message_opens_a_turn_and_a_second_one_opens_another() -> None:
    ix = index()
    r1, b1 = cc(S1, [user("fix the parser")])
    p1 = ix.place(r1, 0.0, body=b1)
    assert (p1.kind, p1.turn_id, p1.new_turn, p1.session_id) == ("new_turn", "t1", True, S1)
    r2, b2 = cc(S1, [user("fix the parser"), {"role": "assistant", "content": "done"}, user("now the lexer")])
    p2 = ix.place(r2, 5.0, body=b2)
    assert (p2.kind, p2.turn_id) == ("new_turn", "t2")
    assert len(ix) == 2


def test_a_tool_result_joins_the_family_that_issued_the_call() -> None:
    ix = index()
    r1, _ = cc(S1, [user("list files")])
    ix.place(r1, 0.0)
    ix.served("t1", "local", "ollama", "qwen")
    ix.issued("t1", "toolu_a", "Bash")
    r2, _ = cc(S1, [user("list files"), tool_use("toolu_a"), tool_result("toolu_a")])
    p = ix.place(r2, 1.0)
    assert (p.kind, p.turn_id, p.answered, p.tools) == ("tool_result", "t1", ("toolu_a",), ("Bash",))
    assert "issued in this family" in p.link
    assert ix.pending("t1") == 0


def test_a_tool_result_finds_its_family_without_any_session_id() -> None:
    ix = index()
    r1, _ = cc(None, [user("list files")])
    ix.place(r1, 0.0)
    ix.issued("t1", "toolu_b", "Bash")
    r2, _ = cc(None, [user("list files"), tool_use("toolu_b"), tool_result("toolu_b")])
    assert ix.place(r2, 1.0).turn_id == "t1"


def test_an_unknown_call_falls_back_to_the_session_then_to_a_family_without_turn_opened() -> None:
    ix = index()
    r1, _ = cc(S1, [user("list files")])
    ix.place(r1, 0.0)
    r2, _ = cc(S1, [user("list files"), tool_use("toolu_x"), tool_result("toolu_x")])
    p = ix.place(r2, 1.0)
    assert p.turn_id == "t1" and p.link.startswith("same session id")
    r3, _ = cc(None, [user("other"), tool_use("toolu_y"), tool_result("toolu_y")])
    p3 = ix.place(r3, 2.0)
    assert (p3.kind, p3.turn_id, p3.new_turn) == ("tool_result", "t2", False)
    assert "without a TurnOpened" in p3.link


def test_count_tokens_joins_the_session_family_and_never_opens_one() -> None:
    ix = index()
    probe = parse_request("anthropic", {"model": "m", "messages": [{"role": "user", "content": "foo"}]})
    p0 = ix.place(probe, 0.0, count_tokens=True)
    assert (p0.kind, p0.turn_id) == ("count_tokens", None)
    assert len(ix) == 0
    r1, _ = cc(S1, [user("hello")])
    ix.place(r1, 1.0)
    r2, _ = cc(S1, [user("a totally different text")])
    p = ix.place(r2, 2.0, count_tokens=True)
    assert (p.kind, p.turn_id) == ("count_tokens", "t1")
    assert len(ix) == 1


def test_the_title_request_joins_the_session_family() -> None:
    ix = index()
    r1, _ = cc(S1, [user("first prompt")])
    ix.place(r1, 0.0)
    r2, _ = cc(S1, [user("first prompt"), {"role": "assistant", "content": "ok"}, user("second prompt")])
    ix.place(r2, 10.0)
    tr, tb = title_request(S1, "second prompt")
    p = ix.place(tr, 10.5, body=tb)
    assert (p.kind, p.turn_id) == ("title", "t2")
    # The `<session>` wording alone is enough when there is no output_config.
    bare = parse_request(
        "anthropic",
        {"model": "m", "messages": [{"role": "user", "content": "<session>x</session>"}], "tools": []},
        {"x-claude-code-session-id": S1},
    )
    assert ix.place(bare, 11.0).kind == "title"


def test_summary_and_compaction_requests_join_the_session_family() -> None:
    ix = index()
    r1, _ = cc(S1, [user("refactor the lexer")])
    ix.place(r1, 0.0)
    for text in (
        "Summarize the changes you made in this session.",
        "Your task is to create a detailed summary of the conversation so far, paying close attention",
    ):
        r, b = cc(S1, [user("refactor the lexer"), {"role": "assistant", "content": "done"}, user(text)])
        p = ix.place(r, 1.0, body=b)
        assert (p.kind, p.turn_id) == ("summary", "t1"), text
    cx = codex(S2, [codex_user("compact please")], request_kind="compact")
    assert ix.place(cx, 2.0).kind == "summary"
    # With nothing to summarise (a new session), the person's own request is a new turn.
    first, fb = cc("33333333-3333-4333-8333-333333333333", [user("Summarize the changes in this repo")])
    assert ix.place(first, 3.0, body=fb).kind == "new_turn"


def test_a_subagent_joins_its_parent_only_in_its_session_and_only_with_the_whole_prompt() -> None:
    ix = index()
    r1, _ = cc(S1, [user("audit the repo")])
    ix.place(r1, 0.0)
    prompt = "Find every call site of parse_config and report the file names."
    ix.issued("t1", "toolu_agent", "Agent", agent_prompt("Agent", {"prompt": prompt, "description": "find"}))
    # Another session's first message, even word for word the prompt, is that session's own turn.
    other, _ = cc(S2, [user(prompt)])
    assert ix.place(other, 0.5).kind == "new_turn"
    # Containing the prompt is not being it.
    around, _ = cc(S1, [user("Context: you are a subagent.\n" + prompt)])
    assert ix.place(around, 0.7).kind == "new_turn"
    # The whole prompt, the same session id (Claude Code's subagents share their parent's).
    sub, _ = cc(S1, [user(prompt)])
    p = ix.place(sub, 1.0)
    assert (p.kind, p.turn_id, p.parent_call, p.tools) == ("subagent", "t1", "toolu_agent", ("Agent",))
    # Once the parent got the Agent result, the same text is a new turn.
    done, _ = cc(S1, [user("audit the repo"), tool_use("toolu_agent", "Agent"), tool_result("toolu_agent")])
    ix.place(done, 3.0)
    again, _ = cc(S1, [user(prompt)])
    assert ix.place(again, 4.0).kind == "new_turn"


def test_without_session_ids_a_subagent_links_by_the_credentials_fingerprint() -> None:
    ix = index()

    def sdk(text: str, key: str) -> ChatRequest:
        body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": text}]}
        return parse_request("anthropic", body, {"x-api-key": key})

    ix.place(sdk("audit the repo", "sk-one-" + "a" * 20), 0.0)
    prompt = "List the modules that read the environment."
    ix.issued("t1", "toolu_a", "Task", prompt)
    assert ix.place(sdk(prompt, "sk-two-" + "b" * 20), 1.0).kind == "new_turn"
    p = ix.place(sdk(prompt, "sk-one-" + "a" * 20), 2.0)
    assert (p.kind, p.turn_id, p.parent_call) == ("subagent", "t1", "toolu_a")
    # The fingerprint is a keyed hash held in memory: the key is nowhere in the family.
    fam = ix.get("t1")
    assert fam is not None and fam.creds and "sk-one" not in repr(fam) and len(fam.creds) == 32
    # No session id and no credentials: nothing to tell clients apart by, so nothing links.
    bare = parse_request("anthropic", {"model": "m", "messages": [{"role": "user", "content": prompt}]})
    ix.issued("t1", "toolu_b", "Task", prompt)
    assert ix.place(bare, 3.0).kind == "new_turn"


def test_the_window_ends_session_and_subagent_links() -> None:
    ix = index(window=60.0)
    r1, _ = cc(S1, [user("audit")])
    ix.place(r1, 0.0)
    ix.issued("t1", "toolu_agent", "Agent", "scan the tests")
    sub, _ = cc(S1, [user("scan the tests")])
    assert ix.place(sub, 60.0).kind == "subagent"  # last_seen moves to 60
    late, _ = cc(S1, [user("scan the tests")])
    assert ix.place(late, 120.5).kind == "new_turn"
    title, tb = title_request(S1, "audit")
    p = ix.place(title, 200.0, body=tb)
    assert p.turn_id not in ("t1",) and "no live family" in p.link


def test_a_client_retry_of_the_opening_message_joins_the_turn() -> None:
    ix = index()
    r1, _ = cc(S1, [user("explain the build")])
    ix.place(r1, 0.0)
    p = ix.place(r1, 0.7)
    assert (p.kind, p.turn_id) == ("retry", "t1")


def test_a_continuation_joins_the_session_family() -> None:
    ix = index()
    r1, _ = cc(S1, [user("write a poem")])
    ix.place(r1, 0.0)
    r2, _ = cc(S1, [user("write a poem"), {"role": "assistant", "content": "Roses"}])
    assert ix.place(r2, 1.0).kind == "continuation"


def test_codex_tool_calls_link_by_call_id() -> None:
    data = json.loads((FIXTURES / "codex-exec-01-tool-followup.json").read_text())
    reqs = [
        parse_request("openai_responses", q["body"], {k.lower(): v for k, v in q["headers"]})
        for q in data["requests"]
    ]
    ix = index()
    first = ix.place(reqs[0], 0.0)
    assert first.kind == "new_turn" and first.session_id == "01a2291a-c28b-7a51-824c-dc27d6c24adf"
    ix.issued(first.turn_id, "call_ded8bb78c2284cd1a80131a2", "exec_command")
    second = ix.place(reqs[1], 1.0)
    assert (second.kind, second.turn_id, second.tools) == ("tool_result", first.turn_id, ("exec_command",))
    assert "issued in this family" in second.link
    # The same shape built by hand: a function_call_output answers by call_id.
    ix2 = index()
    ix2.place(codex(S2, [codex_user("run ls")]), 0.0)
    ix2.issued("t1", "call_1", "exec_command")
    p = ix2.place(codex(S2, [codex_user("run ls"), codex_call("call_1"), codex_output("call_1")]), 1.0)
    assert (p.kind, p.turn_id, p.answered) == ("tool_result", "t1", ("call_1",))


def test_the_index_is_bounded_and_forgets_evicted_sessions_and_calls() -> None:
    ix = index(max_families=3)
    for i in range(5):
        r, _ = cc(f"s{i}", [user(f"prompt {i}")])
        p = ix.place(r, float(i))
        ix.issued(p.turn_id, f"toolu_{i}", "Bash")
    assert list(ix.families) == ["t3", "t4", "t5"]
    assert ix.session_family("s0", 5.0) is None
    assert ix.family_of_call("toolu_0") is None
    assert ix.family_of_call("toolu_4") is not None
    # Touching t3 keeps it; the next new family evicts t4 instead.
    r, _ = cc("s2", [user("prompt 2"), tool_use("toolu_2"), tool_result("toolu_2")])
    ix.place(r, 6.0)
    r, _ = cc("s9", [user("prompt 9")])
    ix.place(r, 7.0)
    assert list(ix.families) == ["t5", "t3", "t6"]


def test_rebuild_from_logged_events() -> None:
    ix = index()
    events = [
        make_event("01", "TurnOpened", format_ts(100.0), "tA", {"ask": "hi /cloud", "session_id": S1}),
        make_event(
            "02",
            "RouteDecided",
            format_ts(100.0),
            "tA",
            {"target": "cloud", "backend": "origin", "model": None, "family": {"session_id": S1}},
        ),
        make_event(
            "03",
            "StickyBound",
            format_ts(100.0),
            "tA",
            {"family": "tA", "target": "cloud", "ttl": 900, "grace": 120, "bound_at": 100.0, "reason": "r"},
        ),
        make_event(
            "04",
            "RouteDecided",
            format_ts(101.0),
            "tA",
            {"target": "cloud", "backend": "origin", "family": {"session_id": S1, "answered": ["toolu_z"]}},
        ),
        make_event("05", "FulfilledLocal", format_ts(102.0), "tA", {"backend": "ollama"}),
    ]
    for ev in events:
        ix.rebuild_event(ev)
    fam = ix.get("tA")
    assert fam is not None
    assert (fam.session_id, fam.ask, fam.side, fam.backend) == (S1, "hi /cloud", "cloud", "origin")
    assert fam.binding is not None and fam.binding.live(1000.0) and not fam.binding.live(1000.5)
    assert ix.family_of_call("toolu_z") is fam
    assert ix.session_family(S1, 150.0) is fam
