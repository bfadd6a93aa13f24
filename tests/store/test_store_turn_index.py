"""The store index (`store.index.turn_index`): views read it, never the whole log, and it always agrees with
the log it is rebuilt from."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import IdGenerator, format_ts, make_event
from glider_cli.store.eventlog.writer import EventWriter
from glider_cli.store.index import index_day, turn_index
from glider_cli.store.index.turnfold import TurnFold
from glider_cli.store.views import episodes

TODAY = dt.datetime.now(dt.UTC).date()

_KINDS = [
    ("TurnOpened", {"ask": "fix the parser in src/parser.go", "goal": "fix the parser", "clone_path": "/r"}),
    ("TurnOpened", {"ask": "  "}),
    ("RouteDecided", {"target": "local", "backend": "ollama", "model": "qwen", "rule": "small"}),
    ("RouteDecided", {"target": "cloud", "backend": "origin", "rule": "default", "delegate": "/agy"}),
    ("FallbackUsed", {"from": "ollama", "to": "origin"}),
    ("OriginPassthrough", {"backend": "origin", "status": 200, "output_tokens": 7}),
    ("FulfilledLocal", {"backend": "ollama", "model": "qwen", "status": 200, "files": ["a.py", "b.py"]}),
    ("UpstreamFailed", {"backend": "origin", "status": 529, "error": "overloaded\nmore"}),
    (
        "DelegateRun",
        {"vendor": "agy", "exit_code": 0, "summary": "done", "files": ["src/x.go"], "workspace": "/r"},
    ),
    ("Note", {"text": "remember the cache"}),
    ("TurnContext", {"plan": "- [ ] one\n- [x] two", "files": ["/r/c.py"]}),
    ("StickyBound", {"family": "t", "target": "cloud"}),
    (
        "RouteDecided",
        {
            "target": "local",
            "backend": "ollama",
            "rule": "swarm",
            "strategy": "fan_out",
            "plan": {"strategy": "x"},
        },
    ),
    ("StrategyMember", {"strategy": "fan_out", "index": 0, "backend": "ollama", "side": "local"}),
    ("StrategyMember", {"strategy": "ensemble", "index": 1, "backend": "origin", "side": "cloud"}),
    ("StrategyMember", {"strategy": "fan_out", "index": 2, "role": "judge", "backend": "o", "side": "cloud"}),
]


EVENTS = st.lists(
    st.tuples(
        st.integers(0, len(_KINDS) - 1),
        st.sampled_from(["a", "b", "c", None]),
        st.integers(0, 3),  # days back
        st.booleans(),  # through the writer (with the index hook) or appended raw (no hook)
    ),
    min_size=1,
    max_size=40,
)


def _write(paths: Paths, spec: list[tuple[int, str | None, int, bool]]) -> list[dict[str, Any]]:
    """Write the events, some through the writer (with the index hook), some appended raw (none);
    returns every event the log holds."""
    now = [0.0]
    ids = IdGenerator(lambda: now[0])
    w = EventWriter(paths, clock=lambda: now[0])
    base = dt.datetime.combine(TODAY, dt.time(10), dt.UTC).timestamp()
    # Time moves forward, as a clock does (ids and day files then agree on the order), and a turn has
    # at most one TurnOpened, its first event (as `turns.lifecycle` writes them).
    seen: set[str | None] = set()
    for i, (kind, turn, back, hooked) in enumerate(sorted(spec, key=lambda x: -x[2])):
        now[0] = base - back * 86_400 + i * 0.01
        t, data = _KINDS[kind]
        if t == "TurnOpened" and turn in seen:
            t, data = _KINDS[9]
        seen.add(turn)
        if hooked:
            w.write_now([(t, data, turn)])
        else:
            w.flush()
            log.append_events(paths.context, [make_event(ids(), t, format_ts(now[0]), turn, data)])
    w.close()
    return list(log.iter_events(paths.context))


def _same(folds: dict[str, TurnFold], evs: list[dict[str, Any]]) -> None:
    assert [e.to_dict() for e in episodes.from_folds(folds.values())] == [
        e.to_dict() for e in episodes.build(evs)
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=EVENTS)
def test_the_index_gives_what_the_log_gives(tmp_path_factory: pytest.TempPathFactory, spec: Any) -> None:
    paths = Paths(home=tmp_path_factory.mktemp("home"))
    evs = _write(paths, spec)
    first = turn_index.TurnIndex(paths.context).folds()
    _same(first, evs)
    # Again: now from the compacted past days and the deltas (the first read wrote them).
    _same(turn_index.TurnIndex(paths.context).folds(), evs)
    # A page of the newest turns, and one turn alone, read only what they need and agree with the rest.
    everything = sorted(first.values(), key=lambda f: f.first_id)
    index = turn_index.TurnIndex(paths.context)
    for limit in (1, 2, 5):
        for before in (None, *(f.turn for f in everything)):
            upto = next((i for i, f in enumerate(everything) if f.turn == before), len(everything))
            want = [f.turn for f in everything[:upto][-limit:]]
            assert [f.turn for f in index.newest(limit, before)] == want, (limit, before)
    for f in everything:
        alone = index.fold_of(f.turn)
        assert alone is not None and episodes.from_fold(alone) == episodes.from_fold(f)
    # Rebuilt from the day files alone.
    shutil.rmtree(index_day.index_dir(paths.context), ignore_errors=True)
    _same(turn_index.TurnIndex(paths.context, persist=False).folds(), evs)


def test_a_view_reads_the_index_not_the_log(glider_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        for n in range(30):
            w.emit("TurnOpened", {"ask": f"question {n}", "clone_path": "/r"}, turn_id=f"t{n}")
            w.emit(
                "RouteDecided", {"target": "cloud", "backend": "origin", "rule": "default"}, turn_id=f"t{n}"
            )
            w.emit("OriginPassthrough", {"backend": "origin", "status": 200}, turn_id=f"t{n}")
    assert (index_day.delta_path(paths.context, TODAY.isoformat())).exists()

    def whole_file(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a view parsed a whole day file")

    parsed: list[bytes] = []
    parse_lines = log.parse_lines
    read_bytes = Path.read_bytes

    def counted(lines: list[bytes], stats: log.ReadStats) -> list[dict[str, Any]]:
        parsed.extend(lines)
        return parse_lines(lines, stats)

    def not_a_day_file(self: Path) -> bytes:
        assert not (self.name.startswith("events-") and self.suffix == ".jsonl"), self
        return read_bytes(self)

    for name in ("read_file", "iter_events", "read_tail"):
        monkeypatch.setattr(log, name, whole_file)
    monkeypatch.setattr(log, "parse_lines", counted)
    monkeypatch.setattr(Path, "read_bytes", not_a_day_file)
    store = ContextStore(paths)
    turns = store.turns()
    assert parsed == []
    assert [t["turn_id"] for t in turns] == [f"t{n}" for n in range(30)]
    assert turns[3]["outcome"] == "answered by origin status 200"
    assert [t["turn_id"] for t in store.turns(limit=2, before="t10")] == ["t8", "t9"]
    detail = store.turn("t7")
    assert detail is not None and [e["type"] for e in detail["events"]] == [
        "TurnOpened",
        "RouteDecided",
        "OriginPassthrough",
    ]
    assert detail["events"][0]["data"]["ask"] == "question 7"
    assert detail["keys"]["clone_path"] == {"value": "/r", "prov": "RUNTIME"}
    assert len(parsed) == 3  # the turn's own three lines, nothing else


def test_a_past_day_is_compacted_and_a_late_event_is_still_seen(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    yesterday = (TODAY - dt.timedelta(days=1)).isoformat()
    old = [
        make_event(f"{i:032x}", "TurnOpened", f"{yesterday}T23:59:59.000Z", f"y{i}", {"ask": "x"})
        for i in range(3)
    ]
    log.append_events(paths.context, old)
    store = ContextStore(paths, ContextSettings())
    assert [t["turn_id"] for t in store.turns()] == ["y0", "y1", "y2"]
    assert index_day.turns_path(paths.context, yesterday).exists()
    assert not index_day.delta_path(paths.context, yesterday).exists()
    # An event for yesterday written after the compaction (a batch that straddled midnight).
    late = make_event(f"{9:032x}", "Note", f"{yesterday}T23:59:59.900Z", "y1", {"text": "late note"})
    log.append_events(paths.context, [late])
    fresh = ContextStore(paths, ContextSettings())
    assert [t["events"] for t in fresh.turns()] == [1, 2, 1]
    assert fresh.query("y1 late note").results[0]["kind"] == "note"


def test_a_stale_or_broken_index_is_rebuilt_from_the_log(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        w.emit("TurnOpened", {"ask": "one"}, turn_id="a")
        w.emit("TurnOpened", {"ask": "two"}, turn_id="b")
    delta = index_day.delta_path(paths.context, TODAY.isoformat())
    delta.write_bytes(b'{"v":1,"ino":1,"at":[0,5],"e":[]}\n{not json\n')  # another file's, then garbage
    assert [t["asked"] for t in ContextStore(paths).turns()] == ["one", "two"]
    # The day file replaced under the index (same name, new inode): the old deltas are not used.
    day = log.day_path(paths.context, TODAY.isoformat())
    evs = log.read_file(day)
    day.unlink()
    log.append_events(paths.context, evs[1:])
    assert [t["asked"] for t in ContextStore(paths).turns()] == ["two"]
    # A torn last line (a writer killed mid-write) is skipped and counted; what comes after it is read.
    line = log.encode(make_event("f" * 32, "TurnOpened", evs[0]["ts"], "c", {"ask": "three"}))
    log.append_bytes(day, line[:20])
    store = ContextStore(paths)
    assert [t["asked"] for t in store.turns()] == ["two"] and store.last_read.torn == 1
    log.append_events(
        paths.context, [make_event("f" * 31 + "e", "TurnOpened", evs[0]["ts"], "d", {"ask": "four"})]
    )
    assert [t["asked"] for t in ContextStore(paths).turns()] == ["two", "four"]


def test_each_digest_points_at_its_line_when_another_process_appended_between_writes(tmp_path: Path) -> None:
    """The writer's digests are made at the offset its next write most likely starts at
    (`IndexAppender.next_start`); a line appended by someone else in between moves them in `record`."""
    paths = Paths(home=tmp_path)
    now = dt.datetime.combine(TODAY, dt.time(10), dt.UTC).timestamp()
    w = EventWriter(paths, clock=lambda: now)
    decided = {"target": "cloud", "rule": "r"}
    w.write_now([("TurnOpened", {"ask": "one"}, "a"), ("RouteDecided", decided, "a")])
    other = IdGenerator(lambda: now)
    log.append_events(paths.context, [make_event(other(), "Note", format_ts(now), "b", {"text": "raw"})])
    for _ in range(2):  # the first guess is off by the raw line, the second is right
        w.write_now(
            [
                ("OriginPassthrough", {"backend": "origin", "status": 200, "output_tokens": 3}, "a"),
                ("StickyBound", {"family": "a"}, None),
                ("Note", {"text": "n"}, "a"),
            ]
        )
    w.close()
    day = format_ts(now)[:10]
    raw = log.day_path(paths.context, day).read_bytes()
    records = [orjson.loads(x) for x in index_day.delta_path(paths.context, day).read_bytes().splitlines()]
    assert len(records) == 3
    assert records[1]["at"][0] > records[0]["at"][1]  # the raw line, between them
    assert records[2]["at"][0] == records[1]["at"][1]
    seen = []
    for r in records:
        a, b = r["at"]
        for dg in r["e"]:
            assert a <= dg[0] and dg[0] + dg[1] <= b
            line = raw[dg[0] : dg[0] + dg[1]]
            assert line.endswith(b"\n") and orjson.loads(line)["id"] == dg[2]
            seen.append(dg[4])
    assert seen == ["TurnOpened", "RouteDecided"] + ["OriginPassthrough", "Note"] * 2
