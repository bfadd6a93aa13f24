from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from glider_cli.config.settings import ContextSettings
from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import format_ts, make_event
from glider_cli.store.eventlog.redact import REDACTED, redact, sensitive_name
from glider_cli.store.eventlog.writer import EventWriter

SECRETS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "openai": "sk-proj-1234567890abcdefGHIJKLmnop",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-123456789012-abcdefghij",
    "plain-header-value": "opaque-value-without-shape-42",
}
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7secretbody\n-----END RSA PRIVATE KEY-----"


def test_sensitive_names() -> None:
    for name in ("Authorization", "x-api-key", "X_Goog_Api_Key", "openai_api_key", "refresh_token", "Cookie"):
        assert sensitive_name(name), name
    for name in ("max_tokens", "estimated_tokens", "model", "content-type", "keyword"):
        assert not sensitive_name(name), name


def test_redact_values_and_names() -> None:
    data = {
        "headers": {"authorization": "Bearer whatever", "x-api-key": SECRETS["plain-header-value"]},
        "pairs": [["Authorization", "Basic Zm9vOmJhcg=="], ["accept", "*/*"]],
        "max_tokens": 1024,
        "text": f"use {SECRETS['anthropic']} and {SECRETS['aws']} then\n{PEM}\nbye",
        "nested": [{"msg": f"token {SECRETS['github']}"}],
    }
    out = redact(data)
    assert out["headers"] == {"authorization": REDACTED, "x-api-key": REDACTED}
    assert out["pairs"] == [["Authorization", REDACTED], ["accept", "*/*"]]
    assert out["max_tokens"] == 1024
    assert out["text"] == f"use {REDACTED} and {REDACTED} then\n{REDACTED}\nbye"
    assert out["nested"][0]["msg"] == f"token {REDACTED}"
    assert data["headers"]["x-api-key"] == SECRETS["plain-header-value"]  # the input is not changed
    assert redact("Bearer abc.def-ghi") == REDACTED
    assert redact("a bearer of news") == "a bearer of news"


def test_no_key_from_a_request_reaches_any_file(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        headers = {
            "authorization": f"Bearer {SECRETS['openai']}",
            "x-api-key": SECRETS["plain-header-value"],
            "anthropic-version": "2023-06-01",
        }
        # A value with no key shape is only recognisable by the header it travels in.
        shaped = [v for k, v in SECRETS.items() if k != "plain-header-value"]
        body = {"messages": [{"role": "user", "content": " ".join(shaped) + "\n" + PEM}]}
        w.emit("TurnOpened", {"headers": headers, "body": body, "ask": "hi"}, turn_id="t1")
        w.emit("UpstreamFailed", {"error": f"401 for key {SECRETS['anthropic']}"}, turn_id="t1")
        ring = w.recent()
    files = [p for p in glider_env.rglob("*") if p.is_file()]
    assert files
    blob = b"".join(p.read_bytes() for p in files)
    for secret in [*SECRETS.values(), "MIIEowIBAAKCAQEA7secretbody"]:
        assert secret.encode() not in blob, secret
        assert secret not in repr(ring)
    assert b"2023-06-01" in blob


def test_emit_flush_close_and_ring(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    w = EventWriter(paths, ContextSettings(max_events=5))
    w.start()
    for i in range(12):
        w.emit("Note", {"i": i}, turn_id="t")
    assert w.flush(timeout=30)
    assert [e["data"]["i"] for e in w.recent()] == [7, 8, 9, 10, 11]
    assert [e["data"]["i"] for e in w.recent(2)] == [10, 11]
    w.close()
    events = list(log.iter_events(paths.context))
    assert [e["data"]["i"] for e in events] == list(range(12))
    assert w.stats.written == 12
    with pytest.raises(StoreError, match="closed"):
        w.emit("Note", {})


def test_the_ring_keeps_lines_the_collector_does_not_walk(glider_env: Path) -> None:
    """The ring keeps each event as (id, line): nothing in it is a container the garbage collector
    follows (as dicts, a full ring was ~40k objects every full collection walked, issue 29), and
    reading it gives new dicts each time, the same events as on disk; `after` reads only what
    comes after its cursor."""
    import gc

    paths = Paths(home=glider_env)
    w = EventWriter(paths, ContextSettings(max_events=50))
    w.start()
    for i in range(30):
        w.emit("Note", {"i": i, "nested": {"list": [i, {"deep": True}]}}, turn_id="t")
    w.write_now([("Note", {"i": 30, "nested": {"list": [30]}}, "t")])
    assert w.flush(timeout=30)
    first = w.recent()
    first[0]["data"]["i"] = "changed by a reader"
    again = w.recent()
    assert [e["data"]["i"] for e in again] == list(range(31))
    gc.collect()
    assert not [k for k in w._ring._items if gc.is_tracked(k)]
    cursor = again[27]["id"]
    assert [e["data"]["i"] for e in w.after(cursor, 2)] == [28, 29]
    assert w.after(again[-1]["id"], 10) == []
    w.close()
    on_disk = list(log.iter_events(paths.context))
    assert on_disk == again


def test_staged_events_are_read_before_they_are_written_oldest_first_in_slices(glider_env: Path) -> None:
    """`stage` stamps and keeps the events pending (readable, not written); `write_staged(limit)`
    writes the oldest `limit` and says whether more wait; Deferred data is made when settled."""
    from glider_cli.domain import Deferred

    made: list[int] = []

    def record() -> dict[str, object]:
        made.append(1)
        return {"rule": "r"}

    paths = Paths(home=glider_env)
    w = EventWriter(paths, ContextSettings())
    w.stage([("Note", {"i": i}, "t") for i in range(5)] + [("RouteDecided", Deferred(record), "t")])
    assert not list(paths.context.glob("events-*.jsonl"))
    assert w.write_staged(4) is True
    assert [e["data"].get("i") for e in log.iter_events(paths.context)] == [0, 1, 2, 3]
    assert made == []
    assert [e["type"] for e in w.recent()][-2:] == ["Note", "RouteDecided"] and made == [1]
    assert w.write_staged() is False
    assert [e["data"] for e in log.iter_events(paths.context)][-1] == {"rule": "r"} and made == [1]
    w.close()


def test_a_full_ring_costs_about_its_lines(glider_env: Path) -> None:
    """The ring keeps each line as a copy of its own size: orjson's bytes keep its ~4 KB output
    buffer, and 2,000 lines of ~250 bytes held that way were ~8 MB instead of ~1 MB (issue 29)."""
    import gc
    import tracemalloc

    w = EventWriter(Paths(home=glider_env), ContextSettings(max_events=2000))
    w.write_now([("Note", {"i": -1}, "t")])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000):
            w.write_now([("Note", {"i": i, "text": "x" * 150}, "t")])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        w.close()
    assert grown < 3_000_000, grown


def test_warm_load_reads_recent_days_only(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    import time

    now = time.time()
    old = make_event("0" * 32, "Note", format_ts(now - 10 * 86400), "old", {})
    new = make_event("1" * 32, "Note", format_ts(now), "new", {})
    log.append_events(paths.context, [old, new])
    with EventWriter(paths, ContextSettings(warm_load_days=2)) as w:
        assert [e["turn_id"] for e in w.recent()] == ["new"]
        assert w.stats.warm_loaded == 1


def test_emit_from_the_event_loop_does_not_wait(glider_env: Path) -> None:
    paths = Paths(home=glider_env)

    async def handler(w: EventWriter) -> int:
        for i in range(2000):
            w.emit("RouteDecided", {"target": "local", "i": i}, turn_id=f"t{i % 7}")
        await asyncio.sleep(0)
        return 2000

    with EventWriter(paths) as w:
        assert asyncio.run(handler(w)) == 2000
    assert sum(1 for _ in log.iter_events(paths.context)) == 2000


def test_write_failure_is_reported_on_close(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    glider_env.mkdir(parents=True)
    paths.context.write_text("not a directory")  # appending under it fails
    w = EventWriter(paths)
    w.start()
    w.emit("Note", {"x": 1})
    w.flush(timeout=30)
    assert w.stats.failed == 1
    with pytest.raises(StoreError, match="could not be written"):
        w.close()
    assert os.path.isfile(paths.context)


def test_redact_mappings_bytes_and_objects() -> None:
    from types import MappingProxyType

    class Holder:
        def __str__(self) -> str:
            return f"Holder({SECRETS['github']})"

    data = {
        "headers": MappingProxyType({"Authorization": "Basic abc", "x-request-id": "r1"}),
        "raw": SECRETS["anthropic"].encode(),
        "pairs": (("X-Api-Key", b"opaque"),),
        "obj": Holder(),
        "set": {SECRETS["aws"]},
        3: "int key",
    }
    out = redact(data)
    assert out["headers"] == {"Authorization": REDACTED, "x-request-id": "r1"}
    assert out["raw"] == REDACTED
    assert out["pairs"] == [["X-Api-Key", REDACTED]]
    assert out["obj"] == f"Holder({REDACTED})"
    assert out["set"] == [REDACTED]
    assert out["3"] == "int key"


def test_events_reach_disk_without_flush_and_the_ring_sees_pending_ones(glider_env: Path) -> None:
    import time

    paths = Paths(home=glider_env)
    with EventWriter(paths, linger=0.01) as w:
        w.emit("Note", {"text": "first"}, turn_id="t")
        w.emit("Note", {"token": "opaque-value-42"}, turn_id="t")  # a sensitive name: the full walk
        assert [e["data"] for e in w.recent()][-2:] == [{"text": "first"}, {"token": REDACTED}]
        deadline = time.monotonic() + 30
        while sum(1 for _ in log.iter_events(paths.context)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        events = list(log.iter_events(paths.context))
        assert [e["data"] for e in events] == [{"text": "first"}, {"token": REDACTED}]
        assert w.stats.redacted == 1
        for i in range(600):  # more than a slice and than the backlog bound: all of it, in order
            w.emit("Note", {"i": i})
        assert w.flush(timeout=30)
    assert [e["data"].get("i") for e in log.iter_events(paths.context)][2:] == list(range(600))


def test_emit_snapshots_data_so_later_changes_do_not_reach_the_record(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        data = {"trace": [{"rule": "a"}], "extra": {"n": 1}}
        w.emit("Note", data, turn_id="t")
        data["trace"].append({"rule": "b"})  # type: ignore[attr-defined]
        data["extra"]["n"] = 2  # type: ignore[index]
        data["late"] = True
        odd = {"raw": b"bytes", "set": {1}}  # not JSON-native: redacted and copied at emit
        w.emit("Note", odd, turn_id="t")
        odd["raw"] = SECRETS["anthropic"].encode()
        ring = w.recent()
    assert ring[-2]["data"] == {"trace": [{"rule": "a"}], "extra": {"n": 1}}
    assert ring[-1]["data"] == {"raw": "bytes", "set": [1]}
    assert [e["data"] for e in log.iter_events(paths.context)] == [ring[-2]["data"], ring[-1]["data"]]


def test_write_now_writes_on_the_callers_thread_after_pending_events_and_redacts(glider_env: Path) -> None:
    import threading

    paths = Paths(home=glider_env)
    w = EventWriter(paths, linger=60.0)  # the thread would hold pending events for a minute
    w.start()
    w.emit("Note", {"i": 0}, turn_id="t")  # pending, from "another thread"
    w.write_now(
        [
            ("Note", {"i": 1}, "t"),
            ("Note", {"i": 2, "error": f"401 for {SECRETS['anthropic']}"}, None),
            ("Note", {"raw": b"bytes", "x-api-key": SECRETS["plain-header-value"]}, "t"),
        ]
    )
    # On disk already, no flush, the thread never woke for these: pending first, then the batch in order.
    events = list(log.iter_events(paths.context))
    assert [e["data"].get("i") for e in events] == [0, 1, 2, None]
    assert events[2]["data"]["error"] == f"401 for {REDACTED}"
    assert events[3]["data"] == {"raw": "bytes", "x-api-key": REDACTED}
    assert [e["turn_id"] for e in events] == ["t", "t", None, "t"]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert [e["data"] for e in w.recent()] == [e["data"] for e in events]
    assert w.stats.written == 4 and w.stats.emitted == 4 and w.stats.redacted == 2
    assert w.flush(timeout=5)

    # write_now from one thread beside emit from others: nothing lost, each emitter's order kept.
    def emitter(k: int) -> None:
        for i in range(200):
            w.emit("Note", {"k": k, "i": i})

    threads = [threading.Thread(target=emitter, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for i in range(200):
        w.write_now([("Note", {"k": "now", "i": i}, None)])
    for t in threads:
        t.join()
    w.close()
    seen: dict[object, list[int]] = {}
    for e in list(log.iter_events(paths.context))[4:]:
        seen.setdefault(e["data"]["k"], []).append(e["data"]["i"])
    assert seen == {0: list(range(200)), 1: list(range(200)), "now": list(range(200))}
    with pytest.raises(StoreError, match="closed"):
        w.write_now([("Note", {}, None)])


def test_the_kept_open_day_file_is_reopened_when_deleted_under_the_writer(
    glider_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import glider_cli.store.eventlog.writer as writer_mod

    monkeypatch.setattr(writer_mod, "_RECHECK", 0.0)  # check the descriptor before every batch
    paths = Paths(home=glider_env)
    w = EventWriter(paths)
    w.write_now([("Note", {"i": 1}, None)])
    day_file = next(paths.context.glob("events-*.jsonl"))
    day_file.unlink()
    w.write_now([("Note", {"i": 2}, None)])
    assert [e["data"]["i"] for e in log.iter_events(paths.context)] == [2]  # a new file, not the gone one
    (paths.context / "other").mkdir()
    import shutil

    shutil.rmtree(paths.context)  # the whole directory, too
    w.write_now([("Note", {"i": 3}, None)])
    w.close()
    assert [e["data"]["i"] for e in log.iter_events(paths.context)] == [3]
    assert w.stats.written == 3 and w.stats.failed == 0


def test_id_batches_continue_the_sequence() -> None:
    from glider_cli.store.eventlog.events import IdGenerator

    now = [1_700_000_000.0]
    ids = IdGenerator(lambda: now[0])
    seq = [ids(), *ids.many(3), ids(), *ids.many(1)]
    assert seq == sorted(seq) and len(set(seq)) == 6
    assert len({s[:12] for s in seq}) == 1  # one millisecond
    assert [int(s[12:], 16) - int(seq[0][12:], 16) for s in seq] == [0, 1, 2, 3, 4, 5]
    now[0] += 1
    later = ids.many(2)
    assert later[0] > seq[-1] and later[0][:12] != seq[0][:12]


def test_a_restarted_writer_seals_a_torn_day_file(glider_env: Path) -> None:
    paths = Paths(home=glider_env)
    with EventWriter(paths) as w:
        w.emit("Note", {"text": "before the crash"})
    ((_, day_file),) = log.list_day_files(paths.context)
    with day_file.open("ab") as f:
        f.write(b'{"v":1,"id":"01a2","type":"RouteDecided","ts":"20')  # killed mid-write
    with EventWriter(paths) as w:
        assert w.stats.torn_on_load == 1
        w.emit("RouteDecided", {"trace": [{"v": 1, "rule": "first"}]})
        w.emit("Note", {"text": "after the restart"})
    stats = log.ReadStats()
    events = list(log.iter_events(paths.context, stats=stats))
    assert [e["type"] for e in events] == ["Note", "RouteDecided", "Note"]
    assert events[1]["data"]["trace"] == [{"v": 1, "rule": "first"}]
    assert (stats.torn, stats.corrupt) == (1, 0)


def test_a_clean_batch_is_written_as_the_event_by_event_path_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_now's usual batch (one scan clears it: `settle_clean`) gives the same day-file lines, index
    lines, ring and counts as the same batch settled event by event; a batch with a secret still takes
    the walk for that event."""
    import random

    import glider_cli.store.eventlog.writer as writer_mod

    batches = [
        [
            ("TurnOpened", {"ask": "fix the bug", "session_id": None}, "t1"),
            (
                "RouteDecided",
                {"target": "cloud", "rule": "r", "trace": [{"rule": "r", "matched": True}]},
                "t1",
            ),
            ("Note", {"n": 1.5, "tags": ["a", None]}, None),
        ],
        [("OriginPassthrough", {"backend": "origin", "status": 200, "output_tokens": 9}, "t1")],
        [("Note", {"error": f"401 for {SECRETS['openai']}"}, "t2"), ("Note", {"ok": True}, "t2")],
    ]

    def run(home: Path) -> tuple[bytes, bytes, list[dict[str, object]], dict[str, int]]:
        random.seed(5)
        now = [1_796_147_098.25]

        def clock() -> float:
            now[0] += 0.001
            return now[0]

        w = EventWriter(Paths(home), clock=clock)
        for batch in batches:
            w.write_now([(t, dict(d), turn) for t, d, turn in batch])
        ring, stats = w.recent(), w.stats.to_dict()
        w.close()
        ctx = home / "context"
        delta = b"".join(p.read_bytes() for p in sorted((ctx / "index").glob("*.delta")))
        day = b"".join(p.read_bytes() for p in sorted(ctx.glob("events-*.jsonl")))
        return (
            day,
            delta.replace(str(os.stat(next(ctx.glob("events-*.jsonl"))).st_ino).encode(), b"INO"),
            ring,
            stats,
        )

    fast = run(tmp_path / "fast")
    monkeypatch.setattr(writer_mod, "settle_clean", lambda items: None)
    slow = run(tmp_path / "slow")
    assert fast == slow
    day, delta, _ring, stats = fast
    assert SECRETS["openai"] not in day.decode() and day.count(b"\n") == 6 and delta.count(b"\n") == 3
    assert stats["written"] == stats["emitted"] == 6 and stats["redacted"] == 1
