"""store.views.feed and store.views.feed_views: requests folded from the log as it grows, paged, counted."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import orjson

from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import IdGenerator, format_ts, make_event
from glider_cli.store.views import feed_views
from glider_cli.store.views.feed import Feed

NOW = dt.datetime.now(dt.UTC).timestamp()


class Log:
    """Writes events the way EventWriter does: one JSON line each, in the UTC day's file."""

    def __init__(self, context: Path, start: float = NOW - 600) -> None:
        self.context = context
        self.t = start
        self.ids = IdGenerator(lambda: self.t)

    def event(
        self, type_: str, data: dict[str, Any], turn: str | None, *, dt_s: float = 1.0
    ) -> dict[str, Any]:
        self.t += dt_s
        return make_event(self.ids(), type_, format_ts(self.t), turn, data)

    def write(self, *events: dict[str, Any], raw_tail: bytes = b"") -> None:
        self.context.mkdir(parents=True, exist_ok=True)
        for e in events:
            log.append_bytes(log.day_path(self.context, e["ts"][:10]), orjson.dumps(e) + b"\n")
        if raw_tail:
            # The rest of a line in the middle of its write comes through the writer's own open file:
            # a new log.open_append would seal the torn tail first (issue 14 §3).
            with log.day_path(self.context, format_ts(self.t)[:10]).open("ab") as f:
                f.write(raw_tail)

    def decided(
        self,
        turn: str,
        *,
        target: str = "cloud",
        rule: str = "default",
        kind: str = "new_turn",
        session: str | None = "s1",
        backend: str = "origin",
        bound: bool = False,
    ) -> dict[str, Any]:
        trace = [
            {"rule": "x", "priority": 5, "matched": False, "reason": "no"},
            {"rule": rule, "priority": 0, "matched": True, "reason": "always"},
        ]
        data = {
            "target": target,
            "rule": rule,
            "priority": 0,
            "backend": backend,
            "model": None,
            "strategy": "single",
            "delegate": None,
            "request": {"estimated_tokens": 12, "has_tools": False},
            "trace": trace,
            "sticky": {"bound": bound, "reason": "after /cloud" if bound else ""},
            "family": {"kind": kind, "turn_id": turn, "session_id": session, "link": kind},
        }
        return self.event("RouteDecided", data, turn)

    def outcome(
        self,
        turn: str,
        *,
        side: str = "cloud",
        backend: str = "origin",
        status: int = 200,
        ms: float = 40.0,
        fallback_from: str | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        kind = "FulfilledLocal" if side == "local" else "OriginPassthrough"
        data: dict[str, Any] = {
            "backend": backend,
            "model": model,
            "status": status,
            "ms": ms,
            "complete": True,
        }
        if fallback_from:
            data["fallback_from"] = fallback_from
        return self.event(kind, data, turn)


def test_requests_pair_with_their_outcomes_first_in_first_out(tmp_path: Path) -> None:
    lg = Log(tmp_path)
    opened = lg.event(
        "TurnOpened", {"ask": "fix the parser", "session_id": "s1", "client": "anthropic"}, "t1"
    )
    d1 = lg.decided("t1")
    d2 = lg.decided("t1", kind="tool_result", target="local", rule="sticky", backend="ollama", bound=True)
    failed = lg.event(
        "UpstreamFailed", {"backend": "origin", "status": 529, "error": "overloaded\nmore"}, "t1"
    )
    o1 = lg.outcome("t1", ms=10, fallback_from="origin", backend="cloud2")
    o2 = lg.outcome("t1", side="local", backend="ollama", ms=5, status=500, model="qwen-local")
    lg.write(opened, d1, d2, failed, o1, o2)
    f = Feed(tmp_path)
    assert f.refresh() == 6
    page, nxt = f.requests(10)
    assert nxt is None
    newest, oldest = page
    assert (oldest["id"], newest["id"]) == (d1["id"], d2["id"])
    assert (
        oldest["ask"] == "fix the parser" and oldest["client"] == "anthropic" and oldest["kind"] == "new_turn"
    )
    assert (oldest["status"], oldest["ms"], oldest["answered_by"], oldest["fallback_from"]) == (
        200,
        10,
        "cloud2",
        "origin",
    )
    assert (oldest["failures"], oldest["failed_backends"], oldest["error"]) == (1, ["origin"], "overloaded")
    assert oldest["reason"] == "always"
    assert newest["kind"] == "tool_result" and newest["ask"] is None
    assert (newest["side"], newest["forced"], newest["sticky"], newest["sticky_reason"]) == (
        "local",
        True,
        True,
        "after /cloud",
    )
    assert (newest["status"], newest["answered_by"], newest["failures"]) == (500, "ollama", 0)
    # The model that answered (the decision named none): the dashboard shows it beside the backend.
    assert (newest["model"], newest["answered_model"], oldest["answered_model"]) == (None, "qwen-local", None)


def test_refresh_reads_only_what_was_appended_and_waits_for_a_torn_line(tmp_path: Path) -> None:
    lg = Log(tmp_path)
    d1 = lg.decided("t1")
    lg.write(d1)
    f = Feed(tmp_path)
    assert f.refresh() == 1
    assert f.refresh() == 0
    d2 = lg.decided("t2")
    line = orjson.dumps(d2) + b"\n"
    lg.write(raw_tail=line[:20])  # a writer in the middle of its write
    assert f.refresh() == 0
    lg.write(raw_tail=line[20:])
    assert f.refresh() == 1
    assert [r["id"] for r in f.requests(5)[0]] == [d2["id"], d1["id"]]


def test_a_replaced_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    lg = Log(tmp_path)
    lg.write(lg.decided("t1"), lg.decided("t2"))
    f = Feed(tmp_path)
    assert f.refresh() == 2
    path = log.day_path(tmp_path, format_ts(lg.t)[:10])
    os.remove(path)
    d3 = lg.decided("t3")
    lg.write(d3)  # a new, shorter file under the same name
    assert f.refresh() == 1
    assert f.requests(1)[0][0]["id"] == d3["id"]


def test_pages_filters_and_cursor(tmp_path: Path) -> None:
    lg = Log(tmp_path)
    evs = [lg.decided(f"t{i}", session="a" if i % 2 else "b") for i in range(7)]
    lg.write(*evs)
    f = Feed(tmp_path)
    f.refresh()
    first, cursor = f.requests(3)
    assert [r["id"] for r in first] == [e["id"] for e in reversed(evs[-3:])]
    assert cursor == first[-1]["id"]
    second, cursor2 = f.requests(3, before=cursor)
    assert [r["id"] for r in second] == [e["id"] for e in reversed(evs[1:4])]
    last, end = f.requests(3, before=cursor2)
    assert [r["id"] for r in last] == [evs[0]["id"]] and end is None
    only_a, _ = f.requests(10, session="a")
    assert {r["session_id"] for r in only_a} == {"a"} and len(only_a) == 3
    assert [r["turn_id"] for r in f.requests(10, turn="t4")[0]] == ["t4"]


def test_old_days_are_never_read(tmp_path: Path) -> None:
    old = Log(tmp_path, start=NOW - 10 * 86_400)
    old.write(old.decided("ancient"))
    lg = Log(tmp_path)
    lg.write(lg.decided("today"))
    f = Feed(tmp_path, days=2)
    assert f.refresh() == 1
    assert [r["turn_id"] for r in f.requests(10)[0]] == ["today"]


def test_window_stats_counts_sides_rules_backends_and_series(tmp_path: Path) -> None:
    lg = Log(tmp_path, start=NOW - 7200)
    early = [lg.decided("old", rule="default"), lg.outcome("old")]
    lg.t = NOW - 1800
    recent = [
        lg.decided("t1", target="local", rule="small_context_local", backend="ollama"),
        lg.outcome("t1", side="local", backend="ollama", ms=30),
        lg.decided("t2", rule="default"),
        lg.event("UpstreamFailed", {"backend": "origin", "status": 503, "error": "down"}, "t2"),
        lg.outcome("t2", status=502, ms=90),
        lg.decided("t3", target="local", rule="small_context_local", backend="ollama"),
    ]
    lg.write(*early, *recent)
    f = Feed(tmp_path)
    f.refresh()
    now_ms = int(NOW * 1000)
    hour = feed_views.window_stats(f.records(), window_s=3600, now_ms=now_ms, buckets=12)
    assert hour["total"] == 3 and hour["sides"] == {"local": 2, "cloud": 1}
    assert hour["rules"][0] == {"rule": "small_context_local", "local": 2, "cloud": 0, "total": 2}
    assert hour["answered"] == 2 and hour["failures"] == 1 and hour["p50_ms"] == 90
    assert sum(b["local"] + b["cloud"] for b in hour["series"]) == 3 and len(hour["series"]) == 12
    ollama, origin = hour["backends"]["ollama"], hour["backends"]["origin"]
    assert (ollama["requests"], ollama["answered"], ollama["ok"], ollama["p50_ms"]) == (2, 1, 1, 30)
    assert (origin["answered"], origin["errors"], origin["failures"], origin["last_status"]) == (1, 1, 1, 502)
    assert feed_views.backend_state(ollama) == "ok" and feed_views.backend_state(origin) == "failing"
    assert feed_views.backend_state(None) == "idle"
    assert hour["covered_from"] is None
    day = feed_views.window_stats(f.records(), window_s=86_400, now_ms=now_ms, buckets=24)
    assert day["total"] == 4 and day["covered_from"] is None
    # A feed that let older requests go says where its counts start.
    small = Feed(tmp_path, max_requests=3)
    small.refresh()
    assert small.dropped == 1
    cut = feed_views.window_stats(small.records(), window_s=86_400, now_ms=now_ms, buckets=24, dropped=True)
    assert cut["total"] == 3 and cut["covered_from"] == recent[0]["ts"]


def test_sessions_newest_first_with_cursor(tmp_path: Path) -> None:
    lg = Log(tmp_path)
    lg.write(
        lg.event("TurnOpened", {"ask": "first", "session_id": "a", "client": "anthropic"}, "t1"),
        lg.decided("t1", session="a"),
        lg.decided("t2", session="b", target="local"),
        lg.decided("t3", session=None),
        lg.decided("t1", session="a", kind="tool_result", bound=True),
    )
    f = Feed(tmp_path)
    f.refresh()
    page, nxt = feed_views.sessions(f.records(), 2)
    assert [s["session_id"] for s in page] == ["a", None]
    a = page[0]
    assert (a["requests"], a["turns"], a["cloud"], a["sticky"], a["ask"], a["client"]) == (
        2,
        1,
        2,
        1,
        "first",
        "anthropic",
    )
    assert a["kinds"] == {"new_turn": 1, "tool_result": 1}
    rest, end = feed_views.sessions(f.records(), 2, before=nxt)
    assert [s["session_id"] for s in rest] == ["b"] and end is None


def test_a_day_file_is_read_a_piece_at_a_time_and_a_line_longer_than_a_piece_whole(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The server keeps no whole day file in memory: the feed reads pieces (here 256 bytes) and
    still folds every event, a line longer than a piece included, and a torn last line waits."""
    import glider_cli.store.views.feed as feed_module

    monkeypatch.setattr(feed_module, "_PIECE", 256)
    reads: list[int] = []
    real_read = os.read

    def counted(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(feed_module.os, "read", counted)
    lg = Log(tmp_path)
    long_ask = lg.event("TurnOpened", {"ask": "x" * 2000, "client": "anthropic"}, "t0")
    events = [long_ask] + [lg.decided(f"t{n}") for n in range(20)]
    lg.write(*events, raw_tail=b'{"v":1,"id":"torn')
    f = Feed(tmp_path)
    assert f.refresh() == 21
    assert len(f.records()) == 20 and max(reads) <= 4096 and reads.count(256) > 10
    lg.write(raw_tail=b'"}\n')
    assert f.refresh() == 0  # the completed line was not an event: skipped, not folded twice
