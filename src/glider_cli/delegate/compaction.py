"""Compaction of a continuity record: over 40 entries, the older ones become one summary entry.

Contract (memory-and-context.md, "Compaction"):
- Triggered when a record holds more than `THRESHOLD` (40) entries. The newest `KEEP_TAIL` (20) stay
  unchanged; older entries are replaced by one `summary` entry whose text starts with
  `[session summary]`. Older summaries (recognised by that mark) are kept as they are and never
  summarised again.
- Who writes the summary: `context.summary.sources` in order (default origin, cloud, local). `none`
  ends the list. A source without configuration is skipped, a source that fails is passed over.
  With `enabled: false`, or when no source answers, a deterministic digest is written instead: it
  keeps the first turns and every delegate outcome and says how many entries it removed. Compaction
  never fails and never leaves nothing.
- It runs in the background (`Compactor`, one worker thread), never on a request's clock. The slow
  summary is made without holding the record's lock; the swap re-reads the record under the lock and
  replaces only the entries that were summarised, so entries appended meanwhile are kept.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from glider_cli.config.settings import SummarySettings
from glider_cli.delegate import continuity
from glider_cli.delegate.continuity import SUMMARY_MARK, Entry
from glider_cli.delegate.ranking import truncate_middle
from glider_cli.domain import EventSink
from glider_cli.paths import Paths
from glider_cli.values import Frozen, init_fields

THRESHOLD = 40
KEEP_TAIL = 20
DIGEST_FIRST_TURNS = 3
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
    return len(entries) > THRESHOLD and bool(to_summarise(entries))


def to_summarise(entries: Sequence[Entry]) -> list[Entry]:
    """The older entries a pass would replace: everything before the tail except earlier summaries."""
    if len(entries) <= THRESHOLD:
        return []
    return [e for e in entries[: len(entries) - KEEP_TAIL] if not e.is_summary]


def _line(e: Entry, limit: int) -> str:
    return " ".join(truncate_middle(e.text, limit)[0].split())


def summary_prompt(entries: Sequence[Entry]) -> str:
    lines = [
        "Summarise this earlier part of a coding session for another agent that will continue the work.",
        "Keep the goals, the decisions, what each delegate run changed (files, success or failure) and",
        "open problems. Plain prose or bullets, at most 300 words, no preamble.",
        "",
    ]
    for e in entries:
        who = f"{e.delegate} run ({'ok' if e.ok else 'failed'})" if e.kind == "delegate" else "user"
        files = f" files: {', '.join(e.files)}" if e.files else ""
        lines.append(f"[{e.ts}] {who}{files}: {_line(e, ENTRY_CHARS_FOR_SUMMARY)}")
    return "\n".join(lines)


def digest(entries: Sequence[Entry]) -> str:
    """The deterministic summary: first turns, every delegate outcome, and what was removed."""
    turns = [e for e in entries if e.kind == "turn"]
    outcomes = [e for e in entries if e.kind == "delegate"]
    span = f"{entries[0].ts} to {entries[-1].ts}" if entries else "nothing"
    out = [f"{SUMMARY_MARK} Digest of {len(entries)} earlier entries ({span}), written without a model."]
    if turns:
        out.append("First turns:")
        out += [f"- [{e.ts}] {_line(e, 300)}" for e in turns[:DIGEST_FIRST_TURNS]]
    if outcomes:
        out.append("Delegate outcomes:")
        for e in outcomes:
            files = f"; files: {', '.join(e.files)}" if e.files else ""
            status = "ok" if e.ok else "failed"
            out.append(f"- [{e.ts}] {e.delegate} {status} for {e.source_cli}{files}: {_line(e, 300)}")
    out.append(
        f"Removed {len(entries)} entries: {len(turns)} turns, {len(outcomes)} delegate outcomes, "
        f"{len(entries) - len(turns) - len(outcomes)} other."
    )
    return "\n".join(out)


def summarise(
    entries: Sequence[Entry], settings: SummarySettings, sources: Mapping[str, Summarizer | None]
) -> tuple[str, str, tuple[Attempt, ...]]:
    """(summary text, source used, attempts). Falls back to `digest`; never raises."""
    attempts: list[Attempt] = []
    if settings.enabled:
        prompt = summary_prompt(entries)
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
            if not text:
                attempts.append(Attempt(name, "failed", "empty answer"))
                continue
            attempts.append(Attempt(name, "used"))
            span = f"{entries[0].ts} to {entries[-1].ts}"
            body = text if text.startswith(SUMMARY_MARK) else f"{SUMMARY_MARK} {text}"
            return (
                f"{body}\n\n(Summarised by {name} from {len(entries)} entries, {span}.)",
                name,
                tuple(attempts),
            )
    else:
        attempts.append(Attempt("summary", "skipped", "context.summary.enabled is false"))
    return digest(entries), "digest", tuple(attempts)


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
    older = to_summarise(snapshot.entries)
    if not older:
        return CompactionResult(compacted=False)
    text, used, attempts = summarise(older, settings, sources(_origin_cli(older)))
    summary = Entry(kind="summary", text=text, source_cli=_origin_cli(older), ts=older[-1].ts)
    ids = {e.id for e in older}
    removed = 0

    def swap(current: tuple[Entry, ...]) -> list[Entry]:
        nonlocal removed
        out: list[Entry] = []
        placed = False
        for e in current:
            if e.id in ids:
                removed += 1
                if not placed:
                    out.append(summary)
                    placed = True
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
            "ContinuityCompacted", {"workspace": str(workspace), "record": str(result.path), **res.to_dict()}
        )
        if result.set_aside is not None:
            events.emit(
                "ContinuityCorrupt", {"workspace": str(workspace), "set_aside": str(result.set_aside)}
            )
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
