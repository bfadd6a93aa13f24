"""EventWriter: the `domain.EventSink` that `glider serve` and the delegate runner write through.

Contract:
- `emit(type, data, turn_id=)` never touches disk: it stamps an id and a time, redacts `data`, puts
  the event in the in-memory ring (`context.max_events` long) and on a queue, and returns.
  It is safe to call from the asyncio loop and from any thread.
- One background thread drains the queue in batches and appends them with `log.append_events`.
- `start()` warm-loads the newest events of the last `context.warm_load_days` days into the ring
  and starts the thread;
  `flush()` waits until everything emitted so far is on disk; `close()` flushes and stops.
- A failed write is kept in `stats` and `last_error`; `close()` then raises StoreError, so a
  failure is never silent. Emitting after `close()` raises StoreError.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.settings import ContextSettings
from glider_cli.store import log
from glider_cli.store.events import IdGenerator, format_ts, make_event
from glider_cli.store.redact import redact

_STOP = object()


@dataclass
class WriterStats:
    emitted: int = 0
    written: int = 0
    failed: int = 0
    batches: int = 0
    warm_loaded: int = 0
    warm_window_lines: int = 0
    torn_on_load: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class EventWriter:
    """See the module contract."""

    def __init__(
        self,
        paths: Paths,
        settings: ContextSettings | None = None,
        *,
        clock: Callable[[], float] = time.time,
        batch_max: int = 8192,
    ) -> None:
        self.settings = settings or ContextSettings()
        self.context_dir = paths.context
        self._clock = clock
        self._ids = IdGenerator(clock)
        self._batch_max = batch_max
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=self.settings.max_events)
        self._ring_lock = threading.Lock()
        self._cond = threading.Condition()
        self._enqueued = 0
        self._done = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self.stats = WriterStats()
        self.last_error: str | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self.warm_load()
        self._thread = threading.Thread(target=self._run, name="glider-event-writer", daemon=True)
        self._thread.start()

    def warm_load(self) -> int:
        """Fill the ring from the last `warm_load_days` days; returns how many lines that window holds.

        Only the newest `max_events` lines are parsed (the ring holds no more); the whole window
        stays on disk for the views that read it.
        """
        st = log.ReadStats()
        files = log.select_days(self.context_dir, days=self.settings.warm_load_days)
        events = log.read_tail(files, self.settings.max_events, st)
        events.sort(key=lambda e: e["id"])
        with self._ring_lock:
            live = list(self._ring)
            self._ring.clear()
            self._ring.extend(events[-self.settings.max_events :])
            self._ring.extend(live)
        self.stats.warm_loaded = len(events)
        self.stats.warm_window_lines = st.lines
        self.stats.torn_on_load = st.torn
        return st.lines

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event emitted before this call is written (or failed). True if done."""
        with self._cond:
            target = self._enqueued
            if self._thread is None:
                return self._done >= target
            return self._cond.wait_for(lambda: self._done >= target, timeout=timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None
        # An emit that raced `close()` may have queued behind the stop marker.
        self._drain_sync()
        if self.stats.failed:
            raise StoreError(
                f"{self.stats.failed} event(s) could not be written to {self.context_dir}: {self.last_error}"
            )

    def __enter__(self) -> EventWriter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the sink ----------------------------------------------------------------------------------

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        if self._closed:
            raise StoreError(f"event writer for {self.context_dir} is closed; {type} was not recorded")
        now = self._clock()
        ev = make_event(self._ids(), type, format_ts(now), turn_id, redact(dict(data)))
        with self._ring_lock:
            self._ring.append(ev)
        with self._cond:
            self._enqueued += 1
        self.stats.emitted += 1
        self._queue.put(ev)

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The ring's events, oldest first (the last `limit` when given)."""
        with self._ring_lock:
            items = list(self._ring)
        return items if limit is None else items[-limit:] if limit > 0 else []

    # -- the background thread ---------------------------------------------------------------------

    def _write(self, batch: list[dict[str, Any]]) -> None:
        try:
            self.stats.written += log.append_events(self.context_dir, batch)
            self.stats.batches += 1
        except StoreError as exc:
            self.stats.failed += len(batch)
            self.last_error = str(exc)
        with self._cond:
            self._done += len(batch)
            self._cond.notify_all()

    def _run(self) -> None:
        get = self._queue.get
        get_nowait = self._queue.get_nowait
        stop = False
        while not stop:
            first = get()
            if first is _STOP:
                break
            batch = [first]
            while len(batch) < self._batch_max:
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            self._write(batch)

    def _drain_sync(self) -> None:
        batch: list[dict[str, Any]] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                batch.append(item)
        if batch:
            self._write(batch)
