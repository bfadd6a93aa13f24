from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from glider_cli.paths import Paths
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import IdGenerator, format_ts, make_event, upgrade

HELPER = Path(__file__).resolve().parent.parent / "fixtures" / "store" / "writer_burst.py"


def _ev(i: int, ts: str = "2026-11-29T10:00:00.000Z") -> dict[str, object]:
    return make_event(f"{i:032x}", "Note", ts, "t1", {"i": i})


def test_ids_are_time_ordered_and_unique() -> None:
    t = [1000.0]
    gen = IdGenerator(lambda: t[0])
    ids = [gen() for _ in range(1000)]
    t[0] = 999.0  # the clock going back never makes an id go back
    ids += [gen() for _ in range(10)]
    t[0] = 1001.0
    ids.append(gen())
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 for i in ids)


def test_ids_stay_ordered_when_single_ids_and_batches_interleave() -> None:
    t = [1000.0]
    gen = IdGenerator(lambda: t[0])
    ids = [gen()]
    t[0] = 1000.002
    ids += gen.many(3)  # a new millisecond, taken by a batch
    ids.append(gen())  # the same millisecond: must carry the batch's time prefix
    t[0] = 1000.005
    ids.append(gen())
    ids += gen.many(2)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert [i[:12] for i in ids] == [f"{ms:012x}" for ms in (1000000, *[1000002] * 4, *[1000005] * 3)]


def test_format_ts_is_utc_with_milliseconds() -> None:
    assert format_ts(0.5) == "1970-01-01T00:00:00.500Z"


def test_append_groups_by_utc_day_and_reads_back(tmp_path: Path) -> None:
    events = [_ev(1, "2026-11-28T23:59:59.999Z"), _ev(2, "2026-11-29T00:00:00.000Z"), _ev(3)]
    assert log.append_events(tmp_path, events) == 3
    files = log.list_day_files(tmp_path)
    assert [d.isoformat() for d, _ in files] == ["2026-11-28", "2026-11-29"]
    stats = log.ReadStats()
    got = list(log.iter_events(tmp_path, stats=stats))
    assert [e["data"]["i"] for e in got] == [1, 2, 3]
    assert stats.events == 3 and stats.torn == 0 and stats.corrupt == 0
    recent = log.select_days(tmp_path, days=1, today=dt.date(2026, 11, 29))
    assert [p.name for p in recent] == ["events-2026-11-29.jsonl"]


def test_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    log.append_events(tmp_path, [_ev(1), _ev(2)])
    path = log.day_path(tmp_path, "2026-11-29")
    with path.open("ab") as f:
        f.write(orjson.dumps(_ev(3))[:25])
    stats = log.ReadStats()
    got = log.read_file(path, stats)
    assert [e["data"]["i"] for e in got] == [1, 2]
    assert stats.torn == 1


def test_line_glued_to_a_torn_line_is_recovered(tmp_path: Path) -> None:
    path = log.day_path(tmp_path, "2026-11-29")
    path.write_bytes(orjson.dumps(_ev(1))[:30] + orjson.dumps(_ev(2)) + b"\n" + b"not json\n")
    stats = log.ReadStats()
    got = log.read_file(path, stats)
    assert [e["data"]["i"] for e in got] == [2]
    assert stats.recovered == 1 and stats.corrupt == 1


def test_upgrade_rejects_newer_versions_and_fills_defaults() -> None:
    assert upgrade({"v": 2, "id": "a", "type": "X", "ts": "t"}) is None
    assert upgrade([1, 2]) is None
    ev = upgrade({"id": "a", "type": "X", "ts": "t"})
    assert ev is not None and ev["v"] == 1 and ev["data"] == {} and ev["prov"] == "RUNTIME"


def _read_all(context: Path) -> tuple[list[dict[str, object]], log.ReadStats]:
    stats = log.ReadStats()
    return list(log.iter_events(context, stats=stats)), stats


def test_kill_9_mid_burst_loses_no_complete_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(home), "emit", "200000", "burst"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    flushed = 0
    for line in proc.stdout:
        if line.startswith("flushed"):
            flushed = int(line.split()[1])
            if flushed >= 3000:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    context = Paths(home=home).context
    complete = sum(p.read_bytes().count(b"\n") for _, p in log.list_day_files(context))
    events, stats = _read_all(context)
    assert len(events) >= flushed
    assert len(events) == complete
    assert stats.corrupt == 0 and stats.torn <= 1
    texts = [e["data"]["text"] for e in events]  # type: ignore[index]
    assert texts == [f"burst {i}" for i in range(len(texts))]


def test_two_processes_appending_never_interleave(tmp_path: Path) -> None:
    home = tmp_path / "home"
    procs = [
        subprocess.Popen([sys.executable, str(HELPER), str(home), "append", "20000", tag])
        for tag in ("a", "b")
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    events, stats = _read_all(Paths(home=home).context)
    assert stats.corrupt == 0 and stats.torn == 0
    for tag in ("a", "b"):
        mine = [e["data"]["i"] for e in events if e["turn_id"] == tag]  # type: ignore[index]
        assert mine == list(range(20000))


def test_read_tail_parses_only_the_newest_lines(tmp_path: Path) -> None:
    a = log.day_path(tmp_path, "2026-11-28")
    b = log.day_path(tmp_path, "2026-11-29")
    log.append_events(tmp_path, [_ev(i, "2026-11-28T10:00:00.000Z") for i in range(5)])
    log.append_events(tmp_path, [_ev(i, "2026-11-29T10:00:00.000Z") for i in range(5, 8)])
    with b.open("ab") as f:
        f.write(b"not json\n" + orjson.dumps(_ev(99))[:20])
    stats = log.ReadStats()
    got = log.read_tail([a, b], 5, stats)
    assert [e["data"]["i"] for e in got] == [3, 4, 5, 6, 7]
    assert stats.lines == 9 and stats.torn == 1 and stats.corrupt == 1 and stats.events == 5
    assert [e["data"]["i"] for e in log.read_tail([a, b], 100)] == list(range(8))


def _nested(i: int, ts: str = "2026-11-29T10:00:00.000Z") -> dict[str, object]:
    # A nested object whose first key is "v": the shape a glued line could not be recovered from.
    return make_event(f"{i:032x}", "RouteDecided", ts, "t1", {"trace": [{"v": i, "rule": "r"}], "i": i})


def test_an_append_after_a_torn_line_starts_a_line_of_its_own(tmp_path: Path) -> None:
    log.append_events(tmp_path, [_ev(1), _ev(2)])
    path = log.day_path(tmp_path, "2026-11-29")
    with path.open("ab") as f:  # a writer killed in the middle of its line
        f.write(orjson.dumps(_ev(3))[:40])
    log.append_events(tmp_path, [_nested(4), _ev(5)])
    assert path.read_bytes().count(b"\n") == 5  # the torn tail was sealed with a newline first
    stats = log.ReadStats()
    got = log.read_file(path, stats)
    assert [e["data"]["i"] for e in got] == [1, 2, 4, 5]
    assert (stats.torn, stats.corrupt, stats.recovered) == (1, 0, 0)
    tail = log.ReadStats()
    assert [e["data"]["i"] for e in log.read_tail([path], 10, tail)] == [1, 2, 4, 5]
    assert (tail.torn, tail.corrupt) == (1, 0)


def test_a_cut_inside_the_event_prefix_is_torn_too(tmp_path: Path) -> None:
    path = log.day_path(tmp_path, "2026-11-29")
    path.write_bytes(b'{"v')  # cut before the prefix was even complete
    log.append_events(tmp_path, [_nested(1)])
    stats = log.ReadStats()
    assert [e["data"]["i"] for e in log.read_file(path, stats)] == [1]
    assert (stats.torn, stats.corrupt) == (1, 0)


def test_sealing_keeps_a_clean_file_as_it_is(tmp_path: Path) -> None:
    log.append_events(tmp_path, [_ev(1)])
    path = log.day_path(tmp_path, "2026-11-29")
    before = path.read_bytes()
    fd = log.open_append(path)
    os.close(fd)
    assert path.read_bytes() == before
    assert oct(path.stat().st_mode & 0o777) == "0o600"
