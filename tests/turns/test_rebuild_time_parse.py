"""The turn index's rebuild parses an event's time only for what it folds in (issue 29's cold start:
a warm start rebuilds from up to `context.max_events` logged events), and a time shared by the
events one request logged once; what it builds is the same."""

from __future__ import annotations

from typing import Any

import pytest

from family_helpers import Ids
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.turns import rebuild
from glider_cli.turns.families import FamilyIndex

S1 = "11111111-1111-4111-8111-111111111111"


def ev(n: int, kind: str, t: float, turn: str, data: dict[str, Any]) -> dict[str, Any]:
    return make_event(f"{n:04d}", kind, format_ts(t), turn, data)


def log() -> list[dict[str, Any]]:
    fam = {"kind": "new_turn", "turn_id": "tA", "session_id": S1, "answered": []}
    bound = {"target": "cloud", "ttl": 60.0, "grace": 5.0, "reason": "command", "bound_at": 100.0}
    return [
        ev(1, "StickyBound", 99.0, "t0", bound),  # no family of its own in the log: passed over
        ev(2, "TurnOpened", 100.0, "tA", {"ask": "hi", "session_id": S1, "messages": 1}),
        ev(3, "RouteDecided", 100.0, "tA", {"target": "cloud", "backend": "c1", "family": fam}),
        ev(4, "OriginPassthrough", 100.5, "tA", {"backend": "c1"}),  # not folded in
        ev(5, "StickyBound", 100.0, "tA", bound),
        ev(6, "RouteDecided", 107.0, "tA", {"target": "local", "backend": "l1", "family": fam}),
    ]


def test_only_the_folded_events_times_are_parsed_each_distinct_one_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    parse = rebuild.ts_seconds

    def counted(ts: str) -> float | None:
        parsed.append(ts)
        return parse(ts)

    monkeypatch.setattr(rebuild, "ts_seconds", counted)
    rebuild._parsed.cache_clear()  # what an earlier rebuild parsed last
    ix = FamilyIndex(Ids())
    for e in log():
        ix.rebuild_event(e)
    assert parsed == [format_ts(100.0), format_ts(107.0)]
    fam = ix.get("tA")
    assert fam is not None and fam.binding is not None
    assert (fam.opened_at, fam.last_seen, fam.side, fam.backend) == (100.0, 107.0, "local", "l1")
    assert (fam.binding.bound_at, fam.binding.ttl, fam.binding.target) == (100.0, 60.0, "cloud")
    assert ix.get("t0") is None


def test_an_event_without_a_readable_time_counts_as_time_zero() -> None:
    ix = FamilyIndex(Ids())
    for ts in ("not a time", 12):
        e = {**ev(1, "TurnOpened", 100.0, f"t{ts}", {"ask": "hi", "session_id": S1}), "ts": ts}
        ix.rebuild_event(e)
        fam = ix.get(f"t{ts}")
        assert fam is not None and fam.opened_at == 0.0
