"""Compaction of a continuity record: over 40 entries, the older ones fold into the rolling summary.

Contract (memory-and-context.md, "Compaction"):
- Triggered when a record holds more than `THRESHOLD` (40) entries and at least `MIN_NEW` (10)
  entries before the tail are not yet in the summary (so a pass runs at most once per that many
  turns). The newest `KEEP_TAIL` (20) stay unchanged; the older ones fold into the one rolling
  `[session summary]` entry at the head of the record (`delegate.rolling`): its digest (counts, the
  first turns, every delegate outcome verbatim with its files) is carried forward and extended, never
  paraphrased again, and a summary is never re-summarised as if it were a turn (the model is given
  the new entries only; a summary found before the tail is carried as it is).
- Who writes the new entries' prose: `context.summary.sources` in order (default origin, cloud,
  local). `none` ends the list. A source without configuration is skipped, a source that fails is
  passed over, and so is one whose text does not stand for the entries (`rolling.check`: it must
  name every file the covered delegate runs changed and the vendor of those that changed none).
  With `enabled: false`, or when no source answers, the summary gets no prose: the deterministic
  digest alone stands for the entries. Compaction never fails and never leaves nothing.
- It runs in the background (`Compactor`, one worker thread), never on a request's clock. The slow
  summary is made without holding the record's lock; the swap re-reads the record under the lock and
  replaces only the summary and the entries that were folded, so entries appended meanwhile are kept.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from glider_cli.config.settings import SummarySettings
from glider_cli.delegate import continuity, rolling
from glider_cli.delegate.entry import SUMMARY_MARK, Entry
from glider_cli.delegate.ranking import truncate_middle
from glider_cli.domain import EventSink
from glider_cli.paths import Paths
from glider_cli.store.eventlog.events import CONTINUITY_COMPACTED, CONTINUITY_CORRUPT
from glider_cli.values import Frozen, init_fields

__all__ = ["SUMMARY_MARK", "Compactor", "compact", "digest", "needs_compaction", "summarise"]

THRESHOLD = 40
KEEP_TAIL = 20
MIN_NEW = 10
ENTRY_CHARS_FOR_SUMMARY = 1500

# A summariser turns a prompt into summary text; it raises (anything) or returns "" when it fails.
Summarizer = Callable[[str], str]


class Attempt(Frozen):
    source: str
    status: str  # "used" | "skipped" | "failed"
    detail: str

    def __init__(self, source: str, status: str, detail: str = "") -> None:
        init_fields(self, source, status, detail)

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "status": self.status, "detail": self.detail}


class CompactionResult(Frozen):
    compacted: bool
    removed: int
    source: str
    attempts: tuple[Attempt, ...]
    summary: Entry | None

    def __init__(
        self,
        compacted: bool,
        removed: int = 0,
        source: str = "",
        attempts: tuple[Attempt, ...] = (),
        summary: Entry | None = None,
    ) -> None:
        init_fields(self, compacted, removed, source, attempts, summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "removed": self.removed,
            "source": self.source,
            "attempts": [a.to_dict() for a in self.attempts],
        }


def needs_compaction(entries: Sequence[Entry]) -> bool:
    return len(entries) > THRESHOLD and sum(not e.is_summary for e in to_summarise(entries)) >= MIN_NEW


def to_summarise(entries: Sequence[Entry]) -> list[Entry]:
    """The entries a pass folds into the rolling summary: everything before the tail but the head
    summary itself (an older summary found there is folded as it is, never re-summarised)."""
    if len(entries) <= THRESHOLD:
        return []
    older = list(entries[: len(entries) - KEEP_TAIL])
    return older[1:] if older and older[0].is_summary else older


def _line(e: Entry, limit: int) -> str:
    return " ".join(truncate_middle(e.text, limit)[0].split())


def summary_prompt(entries: Sequence[Entry]) -> str:
    lines = [
        "Summarise this earlier part of a coding session for another agent that will continue the work.",
        "Keep the goals, the decisions, what each delegate run changed (name every file and the agent,",
        "success or failure) and open problems. Plain prose or bullets, at most 300 words, no preamble.",
        "",
    ]
    for e in entries:
        who = f"{e.delegate} run ({'ok' if e.ok else 'failed'})" if e.kind == "delegate" else "user"
        files = f" files: {', '.join(e.files)}" if e.files else ""
        lines.append(f"[{e.ts}] {who}{files}: {_line(e, ENTRY_CHARS_FOR_SUMMARY)}")
    return "\n".join(lines)


def digest(entries: Sequence[Entry]) -> str:
    """The deterministic summary of `entries` alone: first turns, every delegate outcome, the counts."""
    return rolling.fold(None, entries).text


def summarise(
    entries: Sequence[Entry], settings: SummarySettings, sources: Mapping[str, Summarizer | None]
) -> tuple[str, str, tuple[Attempt, ...]]:
    """(prose, source used, attempts) for the turns and outcomes in `entries` (summaries are left
    out of the prompt). Prose "" and source "digest" when no source gave an acceptable one; never raises."""
    attempts: list[Attempt] = []
    fresh = [e for e in entries if not e.is_summary]
    if not fresh:
        return "", "digest", ()
    if settings.enabled:
        prompt = summary_prompt(fresh)
        for name in settings.sources:
            if name == "none":
                attempts.append(Attempt("none", "skipped", "end of the source list"))
                break
            fn = sources.get(name)
            if fn is None:
                attempts.append(Attempt(name, "skipped", "not configured"))
                continue
            try:
                text = fn(prompt).strip()
            except Exception as exc:  # a summariser is third-party territory: any failure means "next"
                attempts.append(Attempt(name, "failed", f"{type(exc).__name__}: {exc}"[:300]))
                continue
            if text.startswith(SUMMARY_MARK):
                text = text[len(SUMMARY_MARK) :].strip()
            why = "empty answer" if not text else rolling.check(text, fresh)
            if why is not None:
                attempts.append(Attempt(name, "failed", why[:300]))
                continue
            attempts.append(Attempt(name, "used"))
            return text, name, tuple(attempts)
    else:
        attempts.append(Attempt("summary", "skipped", "context.summary.enabled is false"))
    return "", "digest", tuple(attempts)


def _origin_cli(entries: Sequence[Entry]) -> str:
    counts = Counter(e.source_cli for e in entries)
    return counts.most_common(1)[0][0] if counts else ""


def compact(
    paths: Paths,
    workspace: str | Path,
    settings: SummarySettings,
    sources: Callable[[str], Mapping[str, Summarizer | None]],
    *,
    events: EventSink | None = None,
) -> CompactionResult:
    """One compaction pass over a workspace's record. `sources(origin_cli)` gives the summarisers."""
    snapshot = continuity.read(paths, workspace)
    if not needs_compaction(snapshot.entries):
        return CompactionResult(compacted=False)
    older = to_summarise(snapshot.entries)
    head = snapshot.entries[0] if snapshot.entries[0].is_summary else None
    text, used, attempts = summarise(older, settings, sources(_origin_cli(older)))
    summary = rolling.fold(head, older, (used, text) if text else None)
    folded = {e.id for e in older}
    ids = folded | ({head.id} if head is not None else set())
    removed = 0

    def swap(current: tuple[Entry, ...]) -> list[Entry]:
        nonlocal removed
        if current and current[0].is_summary and current[0].id not in ids:
            return list(current)  # the ring overflowed meanwhile and made a newer summary: next pass
        out: list[Entry] = [summary]
        for e in current:
            if e.id in ids:
                removed += e.id in folded
            else:
                out.append(e)
        return out

    result = continuity.update(paths, workspace, swap)
    res = CompactionResult(
        compacted=removed > 0,
        removed=removed,
        source=used,
        attempts=attempts,
        summary=summary if removed else None,
    )
    if events is not None:
        events.emit(
            CONTINUITY_COMPACTED, {"workspace": str(workspace), "record": str(result.path), **res.to_dict()}
        )
        if result.set_aside is not None:
            events.emit(CONTINUITY_CORRUPT, {"workspace": str(workspace), "set_aside": str(result.set_aside)})
    return res


class Compactor:
    """A background worker: `schedule(workspace)` queues a pass; repeated requests for one workspace coalesce.

    `run_pass(workspace)` is the work (usually `compact` with settings bound); errors it raises are
    reported to `on_error` and never reach the caller of `schedule`.
    """

    def __init__(
        self, run_pass: Callable[[str], object], on_error: Callable[[str, BaseException], None] | None = None
    ) -> None:
        self.run_pass = run_pass
        self.on_error = on_error
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def schedule(self, workspace: str | Path) -> bool:
        """Queue a pass; False when one for this workspace is already waiting."""
        ws = str(workspace)
        with self._lock:
            if ws in self._pending:
                return False
            self._pending.add(ws)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="glider-compaction", daemon=True)
                self._thread.start()
        self._queue.put(ws)
        return True

    def _work(self) -> None:
        while True:
            ws = self._queue.get()
            if ws is None:
                self._queue.task_done()
                return
            with self._lock:
                self._pending.discard(ws)
            try:
                self.run_pass(ws)
            except Exception as exc:  # the worker must outlive any one pass; the error is reported
                if self.on_error is not None:
                    self.on_error(ws, exc)
            finally:
                self._queue.task_done()

    def wait(self) -> None:
        """Block until every queued pass has run (tests, shutdown)."""
        self._queue.join()

    def close(self) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join()
