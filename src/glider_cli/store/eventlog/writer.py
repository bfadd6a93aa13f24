"""EventWriter: the `domain.EventSink` that `glider serve` and the delegate runner write through.

Contract:
- `emit(type, data, turn_id=)` never touches disk and does little on the caller's thread: it stamps an
  id and a time, snapshots `data` (a JSON round trip in C, so later changes by the caller do not
  reach the record; values that are not JSON-native are redacted and copied there and then) and
  appends the event to a pending list. It is safe to call from the asyncio loop and from any thread.
- One background thread takes the pending events in batches: it redacts each one (`store.eventlog.redact`),
  puts it in the in-memory ring (`context.max_events` long) and appends the batch with one write per
  day file. The thread is woken at most once per `linger` seconds under load (a wake-up and the GIL
  hand-over it costs are what the request path would otherwise pay per event), and a first event after
  a quiet spell reaches disk within `linger` seconds. It settles events a few at a time and lets the
  event loop have the GIL between slices.
- Redaction is guaranteed before anything reaches the ring or disk (`store.eventlog.settle`): the
  events settled together are cleared by one `redact.may_need_redaction` scan of their data, each
  encoded once and its line joined from the writer's own envelope and those bytes, when it finds
  nothing (`settle_clean`); otherwise each event on its own: one whose `data` the writer finds
  clean (the top two levels walked as `redact` would, with a substring check for strings; deeper
  lists and dicts judged by `redact.may_need_redaction` on the exact JSON bytes they are written as,
  verdicts remembered by those bytes since most parts repeat) is written as is; any other event (or
  one orjson cannot encode strictly: bytes, sets, tuples, non-str keys, dataclasses, datetimes,
  subclasses) goes through the full `redact` walk and `log.encode`.
- `write_now(items)` is the batch path for a caller that already runs off the request's critical
  path: `stage(items)`, then `write_staged()`. `stage` stamps the events (one ts, consecutive ids,
  zipped with the items as given: `(id, ts, item)`) and adds them to the pending ones without
  waking the thread (no thread hand-over, no GIL contention on the request path): from
  then on `recent()` and `after()` see them. `write_staged(limit)` settles (redacts) and appends the
  oldest `limit` pending events (all by default) on the caller's thread, in one write per day file,
  and says whether more are pending: the server's `LoopSink` stages a request's events on the next
  loop pass and writes them in slices a moment later, so the work is off the loop pass where the
  upstream's answer arrives (issue 29). The caller hands `data` over (it must not change it
  afterwards: there is no snapshot); `domain.Deferred` data is made when settled. Events pending
  from other threads are written in the same order; the thread and these never write at once.
- The day file stays open between batches (an O_APPEND descriptor: each batch is one write of whole
  lines); once a second at most it is checked against its path, so a file deleted or replaced
  under a running writer is reopened. `close()` closes it.
- After each write to a day file, the store index gets one line for it (`store.index.turn_index`: the
  byte range written and the digest of each event of a turn, `store.index.digests.digests_of` from
  the data as encoded); an index write that fails is counted there and never fails the event, since
  the index is rebuilt from the day files. `flush()` is notified only while it waits.
- `recent()` first settles every pending event into the ring (redacting on the caller's thread), so
  it sees everything emitted before the call, oldest first; `after(cursor, limit)` likewise, from
  the id after `cursor`. The ring (`store.eventlog.ring`) keeps each event's line, not a dict: these
  read new dicts back.
- `start()` warm-loads the newest events of the last `context.warm_load_days` days into the ring
  (`warm_load`: read from the end of the newest day files, kept as the lines they are) and starts the
  thread; `flush()` wakes the thread at once and waits until
  everything emitted so far is on disk; `close()` flushes and stops.
- A failed write (or an event that cannot be encoded) is kept in `stats` and `last_error`; `close()`
  then raises StoreError, so a failure is never silent. Emitting after `close()` raises StoreError.
"""

from __future__ import annotations

import collections
import operator
import threading
import time
from collections.abc import Callable, Mapping
from itertools import repeat
from operator import call
from typing import Any, NamedTuple

from glider_cli.config.settings import ContextSettings
from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log, ring
from glider_cli.store.eventlog.dayfile import DayFiles
from glider_cli.store.eventlog.events import IdGenerator, format_ts
from glider_cli.store.eventlog.settle import Staged, made, settle_clean, settle_many, snapshot
from glider_cli.store.index.digests import Digest, digest_of, digests_of

# The thread settles (redacts, encodes) this many events per GIL hold, pausing `_PAUSE` seconds between
# slices so the event loop thread, if it is waiting for the GIL, gets it (a forced switch takes 5 ms).
_SLICE = 8
_PAUSE = 0.0001
_BACKLOG = 256
# How often a kept-open day file is checked against its path (`store.eventlog.dayfile`).
_RECHECK = 1.0

# (day, line or None when it could not be encoded, the event's index digest when it has a turn) as settled.
_ID = operator.itemgetter(0)  # a stamped event's id
_Line = tuple[str, "bytes | None", "Digest | None"]


class WriterStats(NamedTuple):
    """The writer's counters as they were when read (`EventWriter.stats`)."""

    emitted: int
    written: int
    failed: int
    batches: int
    redacted: int
    warm_loaded: int
    torn_on_load: int

    def to_dict(self) -> dict[str, int]:
        return self._asdict()


class EventWriter:
    """See the module contract."""

    def __init__(
        self,
        paths: Paths,
        settings: ContextSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        batch_max: int = 8192,
        linger: float = 0.02,
    ) -> None:
        self.settings = settings or ContextSettings()
        self.context_dir = paths.context
        self._clock = clock
        self._ids = IdGenerator(clock)
        self._batch_max = batch_max
        self._linger = linger
        self._pending: collections.deque[Staged] = collections.deque()
        self._ring = ring.Ring(self.settings.max_events)
        # Guards taking events off `_pending`, the ring and `_unwritten`, so all three keep emit order.
        self._lock = threading.Lock()
        # Held from taking a batch to having written it, so two writers keep the file in emit order.
        self._write_lock = threading.Lock()
        self._unwritten: list[_Line] = []
        self._wake = threading.Event()
        self._urgent = threading.Event()
        # Guards the counts below; `flush()` waits on `_cond` (over the same lock), and a write
        # notifies only while someone waits (`_waiting`).
        self._counts = threading.Lock()
        self._cond = threading.Condition(self._counts)
        self._enqueued = 0
        self._done = 0
        self._waiting = 0
        # The day file kept open and the store index beside it (`store.eventlog.dayfile`).
        self._files = DayFiles(self.context_dir, _RECHECK)
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._closed = False
        # The counters `stats` reads (the writer's own: added to on the write path without a call).
        self._emitted = self._written_n = self._failed = self._batches = self._redacted = 0
        self._warm_loaded = self._torn_on_load = 0
        self.last_error: str | None = None

    @property
    def stats(self) -> WriterStats:
        """The counters, as they are now."""
        return WriterStats(
            self._emitted,
            self._written_n,
            self._failed,
            self._batches,
            self._redacted,
            self._warm_loaded,
            self._torn_on_load,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        """Warm-load the ring and start the writer's thread; returns the events loaded (oldest
        first, what `recent()` would return now, without reading them back from the ring: the
        server rebuilds its turn index from them), or [] when it was started already."""
        if self._thread is not None:
            return []
        events = self._warm_load()
        self._thread = threading.Thread(target=self._run, name="glider-event-writer", daemon=True)
        self._thread.start()
        return events

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event emitted before this call is written (or failed). True if done."""
        with self._counts:
            target = self._enqueued
            if self._thread is None or self._done >= target:
                return self._done >= target  # nothing to wait for: the thread is not woken
        self._urgent.set()
        self._wake.set()
        with self._cond:
            self._waiting += 1
            try:
                return self._cond.wait_for(lambda: self._done >= target, timeout=timeout)
            finally:
                self._waiting -= 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._stopping = True
            self._urgent.set()
            self._wake.set()
            self._thread.join()
            self._thread = None
        # An emit that raced `close()` may have landed after the thread's last batch.
        self._drain()
        with self._write_lock:
            self._files.close()
        if self._failed:
            raise StoreError(
                f"{self._failed} event(s) could not be written to {self.context_dir}: {self.last_error}"
            )

    def __enter__(self) -> EventWriter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warm_load(self) -> int:
        """Fill the ring from the last `warm_load_days` days; returns how many events it loaded."""
        return len(self._warm_load())

    def _warm_load(self) -> list[dict[str, Any]]:
        """Fill the ring from the last `warm_load_days` days; returns the events it loaded.

        Only the newest `max_events` lines are read and parsed (the ring holds no more), from the
        end of the newest day files, and kept as the lines they are; the whole window stays on disk
        for the views that read it. On a day of 44k events (25 MB) that is ~2.3 MB read instead of
        25, no count of its lines and no encoding again (a start's warm load 33-44 ms -> ~12 ms).
        """
        st = log.ReadStats()
        files = log.select_days(self.context_dir, days=self.settings.warm_load_days)
        read = log.read_newest(files, self.settings.max_events, st)
        read.sort(key=lambda e: e[0]["id"])
        kept = read[-self.settings.max_events :]
        with self._lock:
            self._ring.load(kept)
        self._warm_loaded, self._torn_on_load = len(read), st.torn
        return [event for event, _ in kept]

    # -- the sink ----------------------------------------------------------------------------------

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        if self._closed:
            raise StoreError(f"event writer for {self.context_dir} is closed; {type} was not recorded")
        self._pending.append((self._ids(), format_ts(self._clock()), (type, snapshot(data), turn_id)))
        with self._counts:
            self._enqueued += 1
            self._emitted += 1
        if not self._wake.is_set():
            self._wake.set()

    def write_now(self, items: list[tuple[str, Mapping[str, Any], str | None]]) -> None:
        """Stamp, settle and append `items` (type, data, turn_id) on this thread; see the contract."""
        self.stage(items)
        self.write_staged()

    def stage(self, items: list[tuple[str, Mapping[str, Any], str | None]]) -> None:
        """Stamp `items` (type, data, turn_id) and add them to the pending events; see the contract."""
        if self._closed:
            raise StoreError(f"event writer for {self.context_dir} is closed; {len(items)} event(s) lost")
        n = len(items)
        if not n:
            return
        ts = format_ts(self._clock())
        # Each item stays as given, its data too (a Deferred is made when settled: `settle.made`);
        # the ids and the one ts are zipped in (no tuple built here per event but the stamped one).
        self._pending.extend(zip(self._ids.run(n), repeat(ts), items))
        with self._counts:
            self._enqueued += n
            self._emitted += n

    def write_staged(self, limit: int | None = None) -> bool:
        """Settle and append the oldest `limit` pending events (all when None, or when `_BACKLOG` or
        more are pending) on this thread; True when more are pending."""
        with self._write_lock:
            with self._lock:
                pending = self._pending
                # Under a backlog the loop is busy anyway: all at once (slices would fall behind).
                n = len(pending) if limit is None or len(pending) >= _BACKLOG else min(limit, len(pending))
                # Taken one by one (`emit` appends from any thread without the lock), by calls made
                # in C: `operator.call` of `popleft`, n times.
                items = list(map(call, repeat(pending.popleft, n)))
                # The usual batch: nothing else waits, one day, and one scan clears it all.
                clean = settle_clean(items) if items and not self._unwritten else None
                if clean is None:
                    self._settle(items)
                    batch, self._unwritten = self._unwritten, []
                else:
                    self._ring.keep_lines(map(_ID, items), clean.lines)
                more = bool(pending)
            if clean is None:
                if batch:
                    self._write(batch)
                return more
            # The digests' offsets from where this write most likely starts (none to move after it).
            base = self._files.index.next_start(clean.day)
            digests = digests_of(items, clean.datas, clean.lines, base)
            self._write_day(clean.day, n, digests, clean.blob, base)
            self._written(n)
        return more

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The ring's events, oldest first (the last `limit` when given), pending ones included."""
        if limit is not None and limit <= 0:
            return []
        with self._lock:
            self._settle_pending()
            kept = self._ring.tail(limit)
        return ring.read(kept)

    def after(self, cursor: str, limit: int) -> list[dict[str, Any]]:
        """The ring's events with an id above `cursor`, oldest first, at most `limit` (the oldest),
        pending ones included; only those are read back."""
        with self._lock:
            self._settle_pending()
            kept = self._ring.after_cursor(cursor, limit)
        return ring.read(kept)

    # -- the background thread ---------------------------------------------------------------------

    def _settle_pending(self, limit: int | None = None) -> None:
        """Move (up to `limit`) pending events into the ring and `_unwritten` (caller holds `_lock`)."""
        pending = self._pending
        n = len(pending) if limit is None else min(limit, len(pending))
        if n:
            popleft = pending.popleft
            self._settle([popleft() for _ in range(n)])

    def _settle(self, staged: list[Staged]) -> None:
        """Settle stamped events into the ring and `_unwritten`, in order (caller holds `_lock`)."""
        append = self._unwritten.append
        redacted = 0
        settled = settle_many([(id_, t, ts, turn, made(data)) for id_, ts, (t, data, turn) in staged])
        for ev, line, ran in settled:
            turn = ev["turn_id"]
            ts = ev["ts"]
            append((ts[:10], line, digest_of(ev["id"], ts, ev["type"], turn, ev["data"]) if turn else None))
            redacted += ran
        self._ring.add_settled(settled)
        if redacted:
            self._redacted += redacted

    def _take(self, slice_: int | None = None) -> list[_Line] | None:
        """Settle pending events and take a batch to write; None when a slice was settled and more
        are pending (the caller pauses, then comes back)."""
        with self._lock:
            self._settle_pending(slice_ if len(self._pending) < _BACKLOG else None)
            backlog = len(self._pending)
            # Under a backlog the loop is busy anyway (and gets the GIL by forced switches): no pause.
            if 0 < backlog < _BACKLOG and slice_ is not None and len(self._unwritten) < self._batch_max:
                return None
            batch = self._unwritten[: self._batch_max]
            del self._unwritten[: self._batch_max]
        return batch

    def _write(self, batch: list[_Line]) -> None:
        """Append `batch` (callers hold `_write_lock`)."""
        by_day: dict[str, tuple[list[bytes], list[Digest | None]]] = {}
        bad = 0
        for day, line, dg in batch:
            if line is None:
                bad += 1
                continue
            group = by_day.get(day)
            if group is None:
                group = by_day[day] = ([], [])
            group[0].append(line)
            group[1].append(dg)
        if bad:
            self._failed += bad
            self.last_error = f"{bad} event(s) could not be encoded as JSON"
        for day, (lines, digests) in by_day.items():
            kept: list[Digest] = []
            off = 0
            for line, dg in zip(lines, digests, strict=True):
                if dg is not None:
                    dg[0], dg[1] = off, len(line)
                    kept.append(dg)
                off += len(line)
            self._write_day(day, len(lines), kept, b"".join(lines))
        self._written(len(batch))

    def _write_day(self, day: str, n: int, digests: list[Digest], data: bytes, base: int = 0) -> None:
        """Append one day's `n` lines (`data`: joined) and their index line, with the `digests` of
        those that have a turn (`store.index.digests.digests_of`: offsets from the first line plus
        `base`; callers hold `_write_lock`)."""
        try:
            end = self._files.append(day, data)
            self._written_n += n
            self._files.index.record(day, end, len(data), digests, base)
        except OSError as exc:
            self._files.failed()
            self._failed += n
            self.last_error = f"cannot append to the event log in {self.context_dir}: {exc}"

    def _written(self, done: int) -> None:
        self._batches += 1
        with self._counts:
            self._done += done
            if self._waiting:
                self._cond.notify_all()

    def _drain(self, slice_: int | None = None) -> None:
        while True:
            with self._write_lock:
                batch = self._take(slice_)
                if batch:
                    self._write(batch)
            if batch is None:
                # The GIL goes to the event loop between slices: a request never waits on a whole batch.
                time.sleep(_PAUSE)
                continue
            if not batch:
                return

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._stopping:
                # Let a burst gather; flush() and close() cut the wait short.
                self._urgent.wait(self._linger)
            self._wake.clear()
            self._urgent.clear()
            self._drain(_SLICE)
            if self._stopping:
                return
