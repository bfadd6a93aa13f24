"""The turn fold's strategy and member counts (`store.index.turnfold`), its record, and an index written
before they existed: an old record still loads, and an old index on disk is rebuilt so its turns gain them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson

from glider_cli.paths import Paths
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.index import index_day
from glider_cli.store.index.turnfold import TurnFold, fold_events
from glider_cli.store.service import ContextStore
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
