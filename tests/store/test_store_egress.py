"""The egress audit (`store.views.egress.audit`) over hand-built events: each kind of call that leaves the
machine, the reasons it gives, what is one call and not two, and local-only turns giving nothing; and
`ContextStore.egress`, which gives it only the lines of the turns that left (and turnless delegate runs)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from glider_cli.paths import Paths
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.eventlog.writer import EventWriter
from glider_cli.store.views.egress import audit

Spec = tuple[str, str | None, dict[str, Any]]


def _events(specs: list[Spec]) -> list[dict[str, Any]]:
    return [
        make_event(f"{i:032x}", t, f"2026-12-02T10:00:{i:02d}.000Z", turn, d)
        for i, (t, turn, d) in enumerate(specs)
    ]


def _opened(turn: str, session: str = "s1") -> Spec:
    return ("TurnOpened", turn, {"ask": "hi", "session_id": session})


def _decided(turn: str, target: str, backend: str, rule: str, **kw: Any) -> Spec:
    return ("RouteDecided", turn, {"target": target, "backend": backend, "rule": rule, **kw})


def _member(turn: str, i: int, backend: str, side: str, **kw: Any) -> Spec:
    data = {"strategy": "ensemble", "index": i, "role": None, "backend": backend, "side": side}
    data.update(model=f"{backend}-m", outcome="ok", status=200, input_tokens=10, output_tokens=4, ms=5.0)
    data.update(kw)
    return ("StrategyMember", turn, data)


def _rows(specs: list[Spec], session: str | None = None) -> list[dict[str, Any]]:
    return audit(_events(specs), session).to_dict()["calls"]


def test_a_cloud_answer_is_listed_with_its_rule_and_tokens() -> None:
    calls = _rows(
        [
            _opened("t1"),
            _decided("t1", "cloud", "origin", "default"),
            (
                "OriginPassthrough",
                "t1",
                {
                    "backend": "origin",
                    "model": "claude-x",
                    "status": 200,
                    "input_tokens": 30,
                    "output_tokens": 7,
                },
            ),
        ]
    )
    assert len(calls) == 1
    c = calls[0]
    assert (c["turn_id"], c["session"], c["event"], c["backend"], c["model"]) == (
        "t1",
        "s1",
        "OriginPassthrough",
        "origin",
        "claude-x",
    )
    assert (c["why"], c["outcome"], c["status"], c["input_tokens"], c["output_tokens"]) == (
        "rule default",
        "ok",
        200,
        30,
        7,
    )
    assert c["ts"] == "2026-12-02T10:00:02.000Z"


def test_local_only_turns_give_nothing() -> None:
    result = audit(
        _events(
            [
                _opened("t1"),
                _decided("t1", "local", "ollama", "small"),
                (
                    "UpstreamFailed",
                    "t1",
                    {"backend": "ollama", "side": "local", "status": None, "error": "x"},
                ),
                ("FallbackUsed", "t1", {"from": "ollama", "to": "ollama2", "reason": "unreachable"}),
                ("FulfilledLocal", "t1", {"backend": "ollama2", "status": 200, "output_tokens": 3}),
                _opened("t2"),
                _decided("t2", "local", "ollama", "swarm", strategy="fan_out"),
                _member("t2", 0, "ollama", "local"),
                _member("t2", 1, "ollama", "local"),
                ("StrategyChosen", "t2", {"index": 0, "backend": "ollama"}),
                ("FulfilledLocal", "t2", {"backend": "ollama", "status": 200}),
            ]
        )
    )
    assert result.calls == () and result.totals == ()


def test_an_ensemble_lists_its_cloud_member_once_not_its_local_one() -> None:
    specs = [
        _opened("t1"),
        _decided("t1", "local", "ollama", "ens", strategy="ensemble"),
        _member("t1", 0, "ollama", "local"),
        _member("t1", 1, "origin", "cloud", model="claude-x", input_tokens=50, output_tokens=9),
        ("StrategyChosen", "t1", {"index": 1, "backend": "origin", "model": "claude-x"}),
        # The chosen member's own outcome event: the same call as its StrategyMember.
        ("OriginPassthrough", "t1", {"backend": "origin", "model": "claude-x", "status": 200}),
    ]
    calls = _rows(specs)
    assert [(c["event"], c["backend"], c["why"]) for c in calls] == [
        ("StrategyMember", "origin", "strategy member (ensemble #1)")
    ]
    assert (calls[0]["input_tokens"], calls[0]["output_tokens"], calls[0]["outcome"]) == (50, 9, "ok")
    # A member that timed out was still sent: it is listed, with its outcome.
    specs[3] = _member("t1", 1, "origin", "cloud", outcome="timeout", status=None)
    specs[4] = ("StrategyChosen", "t1", {"index": 0, "backend": "ollama"})
    specs[5] = ("FulfilledLocal", "t1", {"backend": "ollama", "status": 200})
    assert [(c["backend"], c["outcome"]) for c in _rows(specs)] == [("origin", "timeout")]


def test_a_cloud_judge_and_a_pipeline_stage_say_what_they_were() -> None:
    calls = _rows(
        [
            _decided("t1", "local", "ollama", "swarm", strategy="fan_out"),
            _member("t1", 0, "ollama", "local", strategy="fan_out"),
            _member("t1", 1, "ollama", "local", strategy="fan_out"),
            _member("t1", 2, "origin", "cloud", strategy="fan_out", role="judge"),
            ("StrategyChosen", "t1", {"index": 1, "backend": "ollama"}),
            ("FulfilledLocal", "t1", {"backend": "ollama", "status": 200}),
            _decided("t2", "local", "ollama", "piped", strategy="pipeline"),
            _member("t2", 0, "ollama", "local", strategy="pipeline", role="draft"),
            _member("t2", 1, "origin", "cloud", strategy="pipeline", role="review"),
            ("StrategyChosen", "t2", {"index": 1, "backend": "origin"}),
            ("OriginPassthrough", "t2", {"backend": "origin", "status": 200}),
        ]
    )
    assert [(c["turn_id"], c["why"]) for c in calls] == [
        ("t1", "strategy judge (fan_out)"),
        ("t2", "strategy member (pipeline review)"),
    ]
    assert [c["session"] for c in calls] == [None, None]  # no TurnOpened among the events


def test_a_fallback_to_the_cloud_says_where_it_came_from() -> None:
    calls = _rows(
        [
            _opened("t1"),
            _decided("t1", "local", "ollama", "small", model="qwen"),
            (
                "UpstreamFailed",
                "t1",
                {"backend": "ollama", "side": "local", "status": None, "error": "refused"},
            ),
            ("FallbackUsed", "t1", {"from": "ollama", "to": "origin", "reason": "unreachable"}),
            (
                "OriginPassthrough",
                "t1",
                {"backend": "origin", "model": "claude-x", "status": 200, "fallback_from": "ollama"},
            ),
        ]
    )
    assert [(c["backend"], c["why"]) for c in calls] == [("origin", "fallback from ollama (unreachable)")]
    # Named by the outcome alone (its FallbackUsed outside the events read): still a fallback.
    alone = _rows([("OriginPassthrough", "t9", {"backend": "origin", "status": 200, "fallback_from": "l"})])
    assert [c["why"] for c in alone] == ["fallback from l"]


def test_a_failure_at_a_cloud_backend_is_a_call_that_left() -> None:
    calls = _rows(
        [
            _decided("t1", "cloud", "origin", "default", model="claude-x"),
            (
                "UpstreamFailed",
                "t1",
                {
                    "backend": "origin",
                    "side": "cloud",
                    "status": 529,
                    "error": "overloaded\nmore",
                    "stage": "before_first_byte",
                },
            ),
            ("FallbackUsed", "t1", {"from": "origin", "to": "openai", "reason": "status 529"}),
            (
                "UpstreamFailed",
                "t1",
                {
                    "backend": "openai",
                    "side": "cloud",
                    "status": None,
                    "error": "timeout",
                    "stage": "before_first_byte",
                },
            ),
        ]
    )
    assert [(c["backend"], c["model"], c["why"], c["outcome"], c["status"], c["error"]) for c in calls] == [
        ("origin", "claude-x", "rule default", "failed", 529, "overloaded"),
        ("openai", None, "fallback from origin (status 529)", "failed", None, "timeout"),
    ]


def test_a_stream_cut_mid_way_is_one_call() -> None:
    calls = _rows(
        [
            _decided("t1", "cloud", "origin", "default"),
            (
                "UpstreamFailed",
                "t1",
                {"backend": "origin", "side": "cloud", "error": "connection reset", "stage": "mid_stream"},
            ),
            ("OriginPassthrough", "t1", {"backend": "origin", "status": 200, "output_tokens": 2}),
        ]
    )
    assert [(c["event"], c["outcome"], c["error"]) for c in calls] == [
        ("OriginPassthrough", "failed mid-stream", "connection reset")
    ]


def test_every_member_failing_lists_the_ordinary_call_that_served_it() -> None:
    calls = _rows(
        [
            _decided("t1", "local", "ollama", "swarm", strategy="fan_out"),
            _member("t1", 0, "ollama", "local", outcome="error", status=None),
            ("StrategyChosen", "t1", {"index": None, "backend": None}),
            ("UpstreamFailed", "t1", {"backend": "ollama", "side": "local", "error": "refused"}),
            ("FallbackUsed", "t1", {"from": "ollama", "to": "origin", "reason": "unreachable"}),
            ("OriginPassthrough", "t1", {"backend": "origin", "status": 200, "fallback_from": "ollama"}),
        ]
    )
    assert [(c["event"], c["why"]) for c in calls] == [
        ("OriginPassthrough", "fallback from ollama (unreachable)")
    ]


def test_delegate_runs_with_and_without_a_turn() -> None:
    calls = _rows(
        [
            _opened("t1", "s2"),
            _decided("t1", "cloud", "origin", "delegate_codex", delegate="codex"),
            (
                "DelegateRun",
                "t1",
                {"vendor": "codex", "ok": True, "exit_code": 0, "ms": 900, "summary": "done"},
            ),
            (
                "DelegateRun",
                None,
                {"vendor": "claude", "ok": False, "exit_code": 2, "ms": 50, "summary": "no login\nmore"},
            ),
            ("Note", None, {"text": "not a call"}),
        ]
    )
    assert [
        (c["backend"], c["turn_id"], c["session"], c["why"], c["status"], c["outcome"]) for c in calls
    ] == [
        ("codex", "t1", "s2", "rule delegate_codex", 0, "ok"),
        ("claude", None, None, "glider delegate", 2, "error"),
    ]
    assert calls[1]["error"] == "no login" and calls[0]["ms"] == 900.0


def test_totals_per_backend_the_session_filter_and_any_order() -> None:
    specs = [
        _opened("a", "s1"),
        _decided("a", "cloud", "origin", "default"),
        (
            "OriginPassthrough",
            "a",
            {"backend": "origin", "status": 200, "input_tokens": 10, "output_tokens": 1},
        ),
        _decided("a", "cloud", "origin", "default"),
        ("OriginPassthrough", "a", {"backend": "origin", "status": 500, "input_tokens": 5}),
        _opened("b", "s2"),
        _decided("b", "cloud", "origin", "default"),
        (
            "OriginPassthrough",
            "b",
            {"backend": "origin", "status": 200, "input_tokens": 3, "output_tokens": 3},
        ),
        ("DelegateRun", "b", {"vendor": "origin", "exit_code": 0}),
    ]
    evs = _events(specs)
    result = audit(evs).to_dict()
    assert result["totals"] == [
        {
            "backend": "origin",
            "delegate": False,
            "calls": 3,
            "failed": 1,
            "input_tokens": 18,
            "output_tokens": 4,
        },
        {
            "backend": "origin",
            "delegate": True,
            "calls": 1,
            "failed": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        },
    ]
    assert [c["outcome"] for c in result["calls"]][:2] == ["ok", "error"]
    assert [c.turn_id for c in audit(evs, "s2").calls] == ["b", "b"]
    shuffled = list(evs)
    random.Random(7).shuffle(shuffled)
    assert audit(shuffled) == audit(evs)


def test_the_store_reads_only_the_turns_that_left_and_the_turnless_delegate_runs(
    glider_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        for n in range(20):  # local-only turns: none of their lines is parsed
            w.emit("TurnOpened", {"ask": f"local {n}", "session_id": "s1"}, turn_id=f"l{n}")
            w.emit("RouteDecided", {"target": "local", "backend": "ollama", "rule": "small"}, turn_id=f"l{n}")
            w.emit("FulfilledLocal", {"backend": "ollama", "status": 200}, turn_id=f"l{n}")
        w.emit("TurnOpened", {"ask": "cloud", "session_id": "s1"}, turn_id="c")
        w.emit("RouteDecided", {"target": "cloud", "backend": "origin", "rule": "default"}, turn_id="c")
        w.emit("OriginPassthrough", {"backend": "origin", "status": 200, "output_tokens": 4}, turn_id="c")
        w.emit("DelegateRun", {"vendor": "codex", "ok": True, "exit_code": 0, "summary": "ok"})
    # A week ago, beyond `--days 2`: a cloud turn of its own.
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=7)).strftime("%Y-%m-%dT10:00:00.000Z")
    log.append_events(
        paths.context,
        [
            make_event("0" * 31 + "1", "TurnOpened", old, "o", {"ask": "old", "session_id": "s1"}),
            make_event("0" * 31 + "2", "OriginPassthrough", old, "o", {"backend": "origin", "status": 200}),
        ],
    )
    # A torn last line naming a DelegateRun (a writer killed mid-write): skipped, not guessed at.
    today = log.day_path(paths.context, dt.datetime.now(dt.UTC).date())
    log.append_bytes(today, b'{"v":1,"id":"f","type":"DelegateRun","ts":"20')
    parsed: list[bytes] = []
    parse_lines = log.parse_lines

    def counted(lines: list[bytes], stats: log.ReadStats) -> list[dict[str, Any]]:
        parsed.extend(lines)
        return parse_lines(lines, stats)

    store = ContextStore(paths)
    store.turns()  # the index is brought up to date first (it reads the day file once)
    monkeypatch.setattr(log, "parse_lines", counted)
    got = store.egress()
    assert [(c["turn_id"], c["backend"], c["why"]) for c in got["calls"]] == [
        ("o", "origin", "rule ?"),
        ("c", "origin", "rule default"),
        (None, "codex", "glider delegate"),
    ]
    assert len(parsed) == 2 + 3 + 1  # the two cloud turns' lines and the delegate run's line
    assert [c["turn_id"] for c in store.egress(days=2)["calls"]] == ["c", None]
    assert [c["turn_id"] for c in store.egress(session="s1")["calls"]] == ["o", "c"]
    assert store.egress(session="s2")["calls"] == []


def test_a_limit_lists_the_newest_calls_and_the_totals_still_count_them_all() -> None:
    specs: list[Spec] = []
    for n in range(12):
        turn = f"t{n:02d}"
        specs += [
            _opened(turn),
            _decided(turn, "cloud", "origin", "default"),
            ("OriginPassthrough", turn, {"backend": "origin", "status": 200, "input_tokens": 1}),
        ]
    evs = _events(specs)
    shuffled = list(evs)
    random.Random(3).shuffle(shuffled)
    capped = audit(shuffled, limit=5)
    assert [c.turn_id for c in capped.calls] == ["t07", "t08", "t09", "t10", "t11"]  # newest, oldest first
    assert capped.omitted == 7
    assert [(t.calls, t.input_tokens) for t in capped.totals] == [(12, 12)]
    whole = audit(evs)
    assert (len(whole.calls), whole.omitted, whole.totals) == (12, 0, capped.totals)
    assert capped.to_dict()["omitted"] == 7


def test_the_store_reads_and_audits_one_turn_at_a_time(
    glider_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from glider_cli.store import context_store
    from glider_cli.store.views import egress

    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        for n in range(6):
            t = f"c{n}"
            w.emit("TurnOpened", {"ask": f"cloud {n}", "session_id": "s1"}, turn_id=t)
            w.emit("RouteDecided", {"target": "cloud", "backend": "origin", "rule": "default"}, turn_id=t)
            w.emit("OriginPassthrough", {"backend": "origin", "status": 200, "output_tokens": 2}, turn_id=t)
    steps: list[tuple[str, set[str]]] = []
    read_spans, add = context_store.read_spans, egress.Audit.add

    def reading(path: Path, spans: Any) -> list[dict[str, Any]]:
        got = read_spans(path, spans)
        steps.append(("read", {e["turn_id"] for e in got}))
        return got

    def adding(self: egress.Audit, turn: str | None, events: Any) -> None:
        events = list(events)
        steps.append(("add", {e["turn_id"] for e in events}))
        add(self, turn, events)

    monkeypatch.setattr(context_store, "read_spans", reading)
    monkeypatch.setattr(egress.Audit, "add", adding)
    got = ContextStore(paths).egress(limit=2)
    assert [c["turn_id"] for c in got["calls"]] == ["c4", "c5"]
    assert (got["omitted"], got["limit"], got["totals"][0]["calls"]) == (4, 2, 6)
    # Each turn's lines are read, then audited, before the next turn is read: one turn held at a time
    # (then the turnless delegate runs of the day files: none here).
    assert [k for k, _ in steps] == ["read", "add"] * 6 + ["add"]
    assert all(len(s) == 1 for _, s in steps[:12])
