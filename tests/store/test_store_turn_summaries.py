"""A turn's summary is its main request's decision and outcome; its title, utility calls and summaries
are listed under it, never instead of it (issue 39 §4): in the episodes (`glider context turns`, the
dashboard), through the index's fold records, and in the egress audit, where a call that failed is
listed once."""

from __future__ import annotations

from typing import Any

from glider_cli.store.eventlog.events import make_event
from glider_cli.store.index.turnfold import TurnFold, fold_events
from glider_cli.store.views.egress import audit
from glider_cli.store.views.episodes import build, from_fold

_n = [0]


def _evs(*items: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t, turn, d in items:
        _n[0] += 1
        out.append(make_event(f"{_n[0]:032x}", t, f"2026-12-07T10:00:{_n[0] % 60:02d}.000Z", turn, d))
    return out


def _decided(rule: str, kind: str, target: str = "local", backend: str = "llama") -> dict[str, Any]:
    return {"target": target, "rule": rule, "backend": backend, "model": "smollm2", "family": {"kind": kind}}


def _claude_p_turn(turn: str) -> list[dict[str, Any]]:
    """What `claude -p "say hi /local"` leaves: the prompt answered locally, then its title, which the
    CLI did not wait for (it exits once it has its answer)."""
    answered = {
        "backend": "llama",
        "model": "smollm2",
        "status": 200,
        "input_tokens": 616,
        "output_tokens": 18,
    }
    left = {
        "backend": "llama",
        "model": "smollm2",
        "status": 0,
        "output_tokens": 0,
        "client_disconnected": True,
    }
    return _evs(
        ("TurnOpened", turn, {"ask": "say hi /local", "session_id": "s1"}),
        ("RouteDecided", turn, _decided("task_classifier.tools", "new_turn")),
        ("FulfilledLocal", turn, {**answered, "complete": True}),
        ("RouteDecided", turn, _decided("explicit_local", "title")),
        ("FulfilledLocal", turn, {**left, "complete": False, "request_kind": "title"}),
    )


def test_a_local_turn_reads_as_its_prompt_s_answer_with_the_abandoned_title_under_it() -> None:
    (ep,) = build(_claude_p_turn("t1"))
    assert ep.routed == "local via llama/smollm2 (rule task_classifier.tools)"
    assert ep.outcome == "answered locally by llama/smollm2 status 200, 18 tokens out"
    assert [dict(s) for s in ep.side_requests] == [
        {
            "kind": "title",
            "routed": "local via llama/smollm2 (rule explicit_local)",
            "outcome": "the client left before llama/smollm2 answered",
        }
    ]
    assert ep.to_dict()["side_requests"][0]["kind"] == "title"
    assert "title" not in ep.summary  # what a local model is given of the turn: its main request
    # The same whatever order the events come in, and through the index's record of the fold.
    evs = _claude_p_turn("t1")
    assert build(list(reversed(evs))) == build(evs)
    (fold,) = fold_events(_claude_p_turn("t2")).values()
    assert from_fold(TurnFold.from_record(fold.to_record())) == from_fold(fold)


def test_a_turn_split_across_two_folds_keeps_its_side_requests() -> None:
    evs = _claude_p_turn("t3")
    a, b = fold_events(evs[:3])["t3"], fold_events(evs[3:])["t3"]
    a.merge(b)
    assert from_fold(a) == build(evs)[0]


def test_a_refused_turn_says_refused_not_answered() -> None:
    why = "pack 616 tokens + 64,000 output > window 8,192"
    (ep,) = build(
        _evs(
            ("TurnOpened", "r", {"ask": "hi /local"}),
            ("RouteDecided", "r", {**_decided("explicit_local", "new_turn"), "refused": why}),
            ("FulfilledLocal", "r", {"backend": None, "status": 400, "outcome": "refused", "error": why}),
        )
    )
    assert ep.outcome == f"refused locally: {why}"


def _failed_turn(turn: str) -> list[dict[str, Any]]:
    return _evs(
        ("TurnOpened", turn, {"ask": "hi /cloud"}),
        ("RouteDecided", turn, _decided("explicit_cloud", "new_turn", "cloud", "origin")),
        (
            "UpstreamFailed",
            turn,
            {
                "backend": "origin",
                "side": "cloud",
                "status": None,
                "error": "dns",
                "stage": "before_first_byte",
            },
        ),
        (
            "OriginPassthrough",
            turn,
            {"backend": "origin", "model": "claude-x", "status": 502, "complete": False, "outcome": "failed"},
        ),
    )


def test_a_call_that_failed_is_one_failed_call() -> None:
    (ep,) = build(_failed_turn("f"))
    assert ep.outcome == "failed at origin status 502"
    calls = audit(_failed_turn("f2")).calls
    assert [(c.backend, c.outcome, c.why) for c in calls] == [("origin", "failed", "rule explicit_cloud")]
    (total,) = audit(_failed_turn("f3")).totals
    assert (total.calls, total.failed) == (1, 1)


def test_a_side_request_s_cloud_call_is_listed_with_its_kind() -> None:
    evs = _evs(
        ("TurnOpened", "c", {"ask": "hi"}),
        ("RouteDecided", "c", _decided("default", "new_turn", "cloud", "origin")),
        ("OriginPassthrough", "c", {"backend": "origin", "status": 200, "output_tokens": 9}),
        ("RouteDecided", "c", _decided("default", "title", "cloud", "origin")),
        ("OriginPassthrough", "c", {"backend": "origin", "status": 200, "request_kind": "title"}),
    )
    assert [c.why for c in audit(evs).calls] == ["rule default", "rule default (title)"]
    (ep,) = build(evs)
    assert ep.outcome == "answered by origin status 200, 9 tokens out"
    assert [s["outcome"] for s in ep.side_requests] == ["answered by origin status 200"]


def test_a_turn_reads_as_the_decision_that_opened_it_not_its_continuation_s() -> None:
    # The answer stopped at the output limit; Claude Code asked on, and the continuation followed the
    # turn (`sticky`): the turn was decided by the task classifier.
    answered = {"backend": "llama", "model": "smollm2", "status": 200, "complete": True}
    (ep,) = build(
        _evs(
            ("TurnOpened", "k", {"ask": "name a fruit /local"}),
            ("RouteDecided", "k", _decided("task_classifier.tools", "new_turn")),
            ("FulfilledLocal", "k", {**answered, "output_tokens": 1024, "stopped_at_limit": True}),
            ("RouteDecided", "k", _decided("sticky", "continuation")),
            ("FulfilledLocal", "k", {**answered, "output_tokens": 40}),
        )
    )
    assert ep.routed == "local via llama/smollm2 (rule task_classifier.tools)"
    assert ep.outcome == "answered locally by llama/smollm2 status 200, 40 tokens out"
