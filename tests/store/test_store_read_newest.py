"""`log.read_newest`: the newest events of a window read from the files' ends (the writer's warm load,
issue 29's cold start): the same events as `read_tail`, each with its line as read, and only the part
of a long day that holds them is read."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson
import pytest

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import make_event
from glider_cli.store.eventlog.writer import EventWriter


def _ev(i: int, ts: str = "2026-11-29T10:00:00.000Z", pad: int = 0) -> dict[str, Any]:
    return make_event(f"{i:032x}", "Note", ts, "t1", {"i": i, "pad": "x" * pad})


def _line(ev: dict[str, Any]) -> bytes:
    return orjson.dumps(ev) + b"\n"


def _messy_window(tmp_path: Path) -> list[Path]:
    """Two days: whole lines, a torn line sealed by the next one, two lines glued (recoverable), a
    line of an older version, a corrupt line, a line longer than a read block, and a torn tail."""
    a = log.day_path(tmp_path, "2026-11-28")
    b = log.day_path(tmp_path, "2026-11-29")
    a.write_bytes(b"".join(_line(_ev(i, "2026-11-28T10:00:00.000Z")) for i in range(6)))
    ts = "2026-11-29T10:00:00.000Z"
    old = {"id": f"{20:032x}", "type": "Note", "ts": ts, "turn_id": None, "data": {"i": 20}}
    b.write_bytes(
        _line(_ev(10))
        + _line(_ev(11))[:30]  # torn, then sealed by the next writer's newline
        + b"\n"
        + _line(_ev(12))
        + _line(_ev(13))[:25]  # torn and glued to a whole line: recovered
        + _line(_ev(14))
        + _line(_ev(15, pad=3000))  # longer than the test's read block
        + orjson.dumps(old)
        + b"\n"  # an older version's line: upgraded
        + b"not json at all\n"
        + _line(_ev(16))
        + _line(_ev(17))[:40]  # a torn tail, no newline yet
    )
    return [a, b]


@pytest.mark.parametrize("block", [64, 1024, 256 << 10])
@pytest.mark.parametrize("limit", [1, 3, 5, 8, 9, 12, 100])
def test_the_same_events_as_read_tail_with_their_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, limit: int
) -> None:
    monkeypatch.setattr(log, "_BLOCK", block)
    paths = _messy_window(tmp_path)
    tail_stats, newest_stats = log.ReadStats(), log.ReadStats()
    want = log.read_tail(paths, limit, tail_stats)
    got = log.read_newest(paths, limit, newest_stats)
    assert [ev for ev, _ in got] == want
    for ev, line in got:
        if line is not None:  # kept as read: exactly the line the writer wrote for it
            assert line == orjson.dumps(ev)
    # The upgraded and the recovered events are not kept as their lines.
    by_i = {ev["data"]["i"]: line for ev, line in got}
    for i in (14, 20):
        if i in by_i:
            assert by_i[i] is None, i
    for k in ("torn", "corrupt", "recovered", "events"):
        if limit >= 100:  # every line was looked at: the same counts
            assert getattr(newest_stats, k) == getattr(tail_stats, k), k
    assert newest_stats.torn >= 1  # the tail of the newest file


def test_only_the_end_of_a_long_day_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    day = log.day_path(tmp_path, "2026-11-29")
    day.write_bytes(b"".join(_line(_ev(i, pad=200)) for i in range(5000)))
    size = day.stat().st_size
    read = [0]
    real_open = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        fh = real_open(self, *args, **kwargs)
        if self != day:
            return fh
        real_read = fh.read

        def read_counted(n: int = -1) -> bytes:
            data = real_read(n)
            read[0] += len(data)
            return data

        fh.read = read_counted  # type: ignore[method-assign]
        return fh

    monkeypatch.setattr(Path, "open", counting_open)
    got = log.read_newest([day], 100, log.ReadStats())
    assert [ev["data"]["i"] for ev, _ in got] == list(range(4900, 5000))
    assert read[0] < size // 4, (read[0], size)


def test_the_writer_starts_with_the_events_recent_returns(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    ctx = paths.context
    ctx.mkdir(parents=True)
    today = dt.datetime.now(dt.UTC).date()
    log.day_path(ctx, today).write_bytes(b"".join(_line(_ev(i)) for i in range(50)))
    w = EventWriter(paths, ContextSettings(max_events=20))
    try:
        loaded = w.start()
        assert loaded == w.recent()
        assert [e["data"]["i"] for e in loaded] == list(range(30, 50))
        assert w.start() == []  # started already: nothing loaded again
    finally:
        w.close()
