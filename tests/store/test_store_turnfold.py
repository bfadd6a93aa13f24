"""The turn fold's strategy and member counts (`store.index.turnfold`), its record, and an index written
before they existed: an old record still loads, and an old index on disk is rebuilt so its turns gain them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson

from glider_cli.paths import Paths
from glider_cli.store.context_store import ContextStore
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.index import index_day
from glider_cli.store.index.turnfold import TurnFold, fold_events
from glider_cli.store.views.episodes import build, from_fold

YESTERDAY = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)).isoformat()


def _events() -> list[dict[str, Any]]:
    member = {"strategy": "ensemble", "outcome": "ok", "status": 200}
    specs: list[tuple[str, str, dict[str, Any]]] = [
        ("TurnOpened", "e", {"ask": "compare two answers", "session_id": "s1"}),
        ("RouteDecided", "e", {"target": "local", "backend": "ollama", "rule": "ens", "strategy": "single"}),
        ("FulfilledLocal", "e", {"backend": "ollama", "status": 200}),
        (
            "RouteDecided",
            "e",
            {"target": "local", "rule": "ens", "strategy": "ensemble", "plan": {"strategy": "ensemble"}},
        ),
        ("StrategyMember", "e", {**member, "index": 0, "backend": "ollama", "side": "local"}),
        ("StrategyMember", "e", {**member, "index": 1, "backend": "origin", "side": "cloud"}),
        (
            "StrategyMember",
            "e",
            {**member, "index": 2, "role": "judge", "backend": "ollama", "side": "local"},
        ),
        ("StrategyChosen", "e", {"index": 1, "backend": "origin"}),
        ("OriginPassthrough", "e", {"backend": "origin", "status": 200}),
        # A later single decision does not hide the strategy the turn ran.
        (
            "RouteDecided",
            "e",
            {"target": "cloud", "backend": "origin", "rule": "sticky", "strategy": "single"},
        ),
        ("TurnOpened", "p", {"ask": "plain"}),
        (
            "RouteDecided",
            "p",
            {"target": "local", "backend": "ollama", "rule": "small", "strategy": "single"},
        ),
        ("FulfilledLocal", "p", {"backend": "ollama", "status": 200}),
        ("TurnOpened", "n", {"ask": "named, not enabled"}),
        ("RouteDecided", "n", {"target": "local", "rule": "piped", "strategy": "pipeline"}),
    ]
    return [
        make_event(f"{i:032x}", t, f"{YESTERDAY}T10:00:{i:02d}.000Z", turn, d)
        for i, (t, turn, d) in enumerate(specs)
    ]


def test_the_fold_keeps_the_strategy_and_counts_the_member_calls() -> None:
    eps = {e.turn_id: e.to_dict() for e in build(_events())}
    e = eps["e"]
    assert (e["strategy"], e["members"], e["cloud_members"], e["judge_calls"]) == ("ensemble", 2, 1, 1)
    assert (eps["p"]["strategy"], eps["p"]["members"]) == (None, 0)
    assert (eps["n"]["strategy"], eps["n"]["members"]) == ("pipeline", 0)
    folds = fold_events(_events())
    assert folds["e"].egress and not folds["p"].egress


def test_halves_merge_and_a_record_round_trips() -> None:
    evs = _events()
    whole = fold_events(evs)["e"]
    first, second = fold_events(evs[:6])["e"], fold_events(evs[6:])["e"]
    first.merge(second)
    assert from_fold(first) == from_fold(whole)
    back = TurnFold.from_record(orjson.loads(orjson.dumps(whole.to_record())))
    assert from_fold(back) == from_fold(whole) and back.egress


def test_a_record_in_the_old_shape_still_loads() -> None:
    fold = fold_events(_events())["e"]
    old = fold.to_record()[:16]  # [turn, n, first, ..., spans, opened]: the index's first version
    back = TurnFold.from_record(orjson.loads(orjson.dumps(old)))
    ep = from_fold(back).to_dict()
    assert ep["asked"] == "compare two answers" and ep["outcome"].startswith("answered by origin")
    assert (ep["strategy"], ep["members"], ep["cloud_members"], ep["judge_calls"]) == (None, 0, 0, 0)
    assert not back.egress


def test_an_index_written_before_is_rebuilt_from_the_day_file(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    log.append_events(paths.context, _events())
    day = log.day_path(paths.context, YESTERDAY)
    # What the first index version wrote for this past day: its header and its records (no strategy).
    index_day.index_dir(paths.context).mkdir(parents=True)
    head = {"v": 1, "file": index_day.file_ident(day), "size": day.stat().st_size, "torn": 0, "corrupt": 0}
    old = [orjson.dumps(f.to_record()[:16]) for f in fold_events(_events()).values()]
    turns = index_day.turns_path(paths.context, YESTERDAY)
    turns.write_bytes(b"\n".join([orjson.dumps(head), *old]) + b"\n")
    # One turn alone is read from the compacted line that names it: not from a file of another version.
    detail = ContextStore(paths).turn("e")
    assert detail is not None and detail["episode"]["strategy"] == "ensemble"
    listed = {t["turn_id"]: t for t in ContextStore(paths).turns()}
    assert (listed["e"]["strategy"], listed["e"]["members"], listed["e"]["cloud_members"]) == (
        "ensemble",
        2,
        1,
    )
    assert listed["p"]["outcome"] == "answered locally by ollama status 200"
    # The day is compacted again in the current version, and read back from it.
    assert orjson.loads(turns.read_bytes().split(b"\n")[0])["v"] == index_day.VERSION
    again = {t["turn_id"]: t for t in ContextStore(paths).turns()}
    assert again == listed


def test_every_event_type_digests_to_its_extra_in_key_order() -> None:
    """`digest` / `digest_of` (the writer's): each type's `extra`, keys in the order the index lines
    have always had them (the bytes below were written before `_extra` became a table per type)."""
    from glider_cli.store.index.turnfold import digest, digest_of

    specs: list[tuple[str, dict[str, Any]]] = [
        (
            "TurnOpened",
            {"ask": "fix  the\nbug", "goal": "fix the bug", "session_id": "s1", "clone_path": "/w"},
        ),
        ("TurnContext", {"plan": "1. x", "goal": "", "files": ["c.py"], "workspace": "/w"}),
        ("RouteDecided", {"target": "local", "backend": "ollama", "model": "/m/q.gguf", "rule": "r"}),
        ("StrategyMember", {"side": "cloud", "role": "judge"}),
        ("UpstreamFailed", {"backend": "origin", "side": "cloud", "status": 502, "error": "bad\nthing"}),
        ("UpstreamFailed", {"backend": "ollama", "side": "local"}),
        ("DelegateRun", {"vendor": "claude", "exit_code": 0, "summary": "done", "files": ["d.py"]}),
        ("FallbackUsed", {"from": "a", "to": "b"}),
        ("Note", {"text": "remember"}),
        ("Note", {"text": 3}),
        ("StickyBound", {"family": "f", "files": "notalist"}),
    ]
    specs[0][1].update(
        plan="p", delegate_of="0123456789abcdef", files=["a.py", "a.py", "", 3, "b.py"], workspace="/w"
    )
    specs[2][1].update(delegate="claude", plan={"strategy": "fan_out"}, strategy="single")
    ts = "2026-11-29T00:00:00.000Z"
    got = []
    for i, (t, d) in enumerate(specs):
        dg = digest({"id": f"{i:032x}", "ts": ts, "type": t, "turn_id": "t", "data": d})
        assert orjson.dumps(digest_of(f"{i:032x}", ts, t, "t", d)) == orjson.dumps(dg)
        got.append(dg[6])
    assert orjson.dumps(got) == (
        b'[{"asked":"[delegate run of turn 0123456789ab] fix the bug","text":"fix the bug","session":"s1",'
        b'"goal":"fix the bug","plan":"p","clone_path":"/w","files":["a.py","b.py"],"workspace":"/w"},'
        b'{"plan":"1. x","files":["c.py"],"workspace":"/w"},'
        b'{"routed":"local via ollama/q.gguf delegate claude (rule r)","side":"local","rule":"r",'
        b'"strategy":"fan_out"},{"member":"cloud","judge":true,"egress":true},'
        b'{"outcome":"failed at origin status 502: bad","egress":true},{"outcome":"failed at ollama"},'
        b'{"outcome":"delegated to claude exit 0: done","egress":true,"files":["d.py"]},'
        b'{"fallback":" after fallback a -> b"},{"note":"remember"},{},{}]'
    )
