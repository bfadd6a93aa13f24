"""The store index: per day file, what the turn views need, so no view parses the event log per call.

Files, under `<context dir>/index/` (the JSONL day files stay the source of truth; everything here is
rebuilt from them when missing, stale or unreadable):

    events-YYYY-MM-DD.delta   appended by writers, one line per write to the day file:
                              {"v": 2, "file": <ident>, "at": [start, end], "e": [digest, ...]}
                              `at` is the byte range the write covered, `e` the digests
                              (`store.index.turnfold`) of the events in it that belong to a turn
    events-YYYY-MM-DD.turns   a past day, compacted: a header {"v": 2, "file", "size", "torn",
                              "corrupt"} then one `TurnFold.to_record()` per turn of that day

`v` is `store.index.index_day.VERSION`: a file or delta line of another version (an index written before
the digests kept what they keep now) is not read, so that day is folded again from its day file.

A day file's `ident` is its inode and a checksum of its first 64 bytes (the first event's id is in
them): a file deleted and made again gets another one even when the inode number is reused.

Reading a day (`TurnIndex.folds`): the compacted file when its ident matches the day file's and its
size is not past the day file's; then the delta lines of the same ident (an event already folded, by
its offset, is skipped: two writers, or a writer and a reader's catch-up, may both have covered it);
then every byte range no record covers is read from the day file itself and folded (a file written
without the hook, a writer killed between its two writes, a sealed torn tail), and that catch-up is
appended to the delta file so the next reader does not read it again. A past day read in full is
compacted (written to a temporary file, then renamed), and its delta file removed. A reader that
cannot write (a read-only home) still answers; it only reads more next time.

A `TurnIndex` kept by a long-lived process (`glider serve`'s store worker) caches today's day and the
newest `keep_past` (2) compacted days; today's is brought up to date by reading only what was
appended since, an older day is read again when a view asks for it (milliseconds). Index files of day
files that are gone (pruned) are removed. Nothing here is on a request's path: writers append with
`store.index.index_day.IndexAppender` (one small write per batch, beside the day file's).

`TurnIndex` answers three ways:
- `folds(days)`: every turn of the selected days, merged across day files;
- `newest(limit, before, days)`: the newest `limit` turns (by first event) listed before the turn
  `before`, reading day files newest first and stopping once those turns are known whole: each of
  them has its `TurnOpened` (the first event of a turn) among the days read, or every day was read;
- `fold_of(turn)`: one turn, from the compacted line that names it in each day (nothing else parsed).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from glider_cli.store import gcpause
from glider_cli.store.eventlog import log
from glider_cli.store.index.index_day import DayReader, DayState, index_dir
from glider_cli.store.index.turnfold import TurnFold


def _merge(merged: dict[str, TurnFold], shared: set[str], folds: dict[str, TurnFold]) -> None:
    """Merge one day's folds into `merged`; a day's own fold is copied before it is changed."""
    for turn, f in folds.items():
        have = merged.get(turn)
        if have is None:
            merged[turn] = f
            continue
        if turn not in shared:
            copy = TurnFold(turn)
            copy.merge(have)
            merged[turn] = have = copy
            shared.add(turn)
        have.merge(f)


class TurnIndex:
    """Folds of the turns in the event log, read through the index (see the module contract).
    Thread-safe; one per process is enough (it caches)."""

    def __init__(self, context_dir: Path, *, persist: bool = True) -> None:
        self.context_dir = context_dir
        self.reader = DayReader(context_dir, persist)
        self._lock = threading.Lock()
        self.last = log.ReadStats()
        # Changes whenever the folds a call returns may differ from the last call's (caches key on it).
        self.generation = 0
        self._seen_state: tuple[tuple[str, str | None, int, int], ...] = ()

    def _days(
        self, days: int | None, today: dt.date | None, newest_first: bool
    ) -> Iterator[tuple[str, DayState]]:
        now = today or dt.datetime.now(dt.UTC).date()
        files = log.list_day_files(self.context_dir)
        present = {d.isoformat() for d, _ in files}
        for gone in [d for d in self.reader.days if d not in present]:
            del self.reader.days[gone]
        if self.reader.persist:
            self._remove_orphans(present, now)
        first = None if days is None else now - dt.timedelta(days=max(days, 1) - 1)
        for d, path in reversed(files) if newest_first else files:
            if first is not None and d < first:
                continue
            state = self.reader.refresh(d.isoformat(), path, d < now)
            if state is not None:
                yield d.isoformat(), state

    def _account(self, used: list[tuple[str, DayState]], merged: dict[str, TurnFold]) -> None:
        self.last = log.ReadStats(
            files=len(used),
            torn=sum(state.torn + state.tail for _, state in used),
            corrupt=sum(state.corrupt for _, state in used),
            events=sum(f.n for f in merged.values()),
        )

    def folds(self, days: int | None = None, today: dt.date | None = None) -> dict[str, TurnFold]:
        """Every turn of the selected days (`log.select_days`), merged across day files."""
        with self._lock, gcpause.paused():
            merged: dict[str, TurnFold] = {}
            shared: set[str] = set()
            used = list(self._days(days, today, False))
            for _, state in used:
                _merge(merged, shared, state.folds)
            seen = tuple((day, state.ident, state.size, state.changes) for day, state in used)
            if seen != self._seen_state:
                self._seen_state = seen
                self.generation += 1
            self._account(used, merged)
            self.reader.trim()
        return merged

    def newest(
        self, limit: int, before: str | None = None, days: int | None = None, today: dt.date | None = None
    ) -> list[TurnFold]:
        """The newest `limit` turns listed before `before`, oldest first (see the module contract)."""
        with self._lock, gcpause.paused():
            merged: dict[str, TurnFold] = {}
            shared: set[str] = set()
            used: list[tuple[str, DayState]] = []
            page: list[TurnFold] = []
            for day, state in self._days(days, today, True):
                used.append((day, state))
                _merge(merged, shared, state.folds)
                ranked = sorted(merged.values(), key=lambda f: f.first_id)
                if before is not None:
                    at = next((i for i, f in enumerate(ranked) if f.turn == before), None)
                    if at is None or not ranked[at].opened:
                        continue  # the cursor's turn is not known whole yet
                    ranked = ranked[:at]
                page = ranked[-limit:] if limit > 0 else []
                if len(page) >= limit and all(f.opened for f in page):
                    break
            else:
                ranked = sorted(merged.values(), key=lambda f: f.first_id)
                if before is not None:
                    at = next((i for i, f in enumerate(ranked) if f.turn == before), None)
                    ranked = ranked if at is None else ranked[:at]
                page = ranked[-limit:] if limit > 0 else []
            self._account(used, merged)
            self.reader.trim()
        return page

    def fold_of(self, turn: str, days: int | None = None, today: dt.date | None = None) -> TurnFold | None:
        """One turn's fold over the selected days (see the module contract)."""
        now = today or dt.datetime.now(dt.UTC).date()
        first = None if days is None else now - dt.timedelta(days=max(days, 1) - 1)
        found: TurnFold | None = None
        with self._lock, gcpause.paused():
            for d, path in log.list_day_files(self.context_dir):
                if first is not None and d < first:
                    continue
                part = self.reader.peek(d.isoformat(), path, turn)
                if part is None:
                    continue
                if found is None:
                    found = TurnFold(turn)
                found.merge(part)
            self.reader.trim()
        return found

    def _remove_orphans(self, present: set[str], today: dt.date) -> None:
        """Index files of day files that are gone (pruned), for days before yesterday."""
        try:
            entries = list(os.scandir(index_dir(self.context_dir)))
        except OSError:
            return
        recent = {today.isoformat(), (today - dt.timedelta(days=1)).isoformat()}
        for entry in entries:
            name = entry.name
            if not name.startswith("events-") or len(name) < 17:
                continue
            day = name[7:17]
            if day not in present and day not in recent and name.endswith((".delta", ".turns")):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def read_spans(path: Path, spans: Iterable[int]) -> list[dict[str, Any]]:
    """The events at these (offset, length) pairs of one day file (a flat sequence), in file order."""
    flat = array("q", spans)
    pairs = sorted(zip(flat[0::2], flat[1::2], strict=True))
    out: list[dict[str, Any]] = []
    st = log.ReadStats()
    try:
        with open(path, "rb") as fh:
            for off, n in pairs:
                fh.seek(off)
                out.extend(log.parse_lines([fh.read(n).rstrip(b"\n")], st))
    except FileNotFoundError:
        return []
    return out
