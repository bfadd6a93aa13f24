"""One day file's part of the store index: the files beside it, the writer's appender, the day's state.

See `store.index.turn_index` for the format and the reading rules; this module holds their mechanics:
`IndexAppender` (a writer's side), `DayState` (what one day file's index says: its folds and the
byte ranges they cover), and `DayReader.refresh(day, path, past)`, which brings a DayState up to
date (compacted file, delta lines, catch-up from the day file, compaction of a past day).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

import orjson

from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.days import file_ident
from glider_cli.store.index.digests import Digest, digest
from glider_cli.store.index.turnfold import TurnFold

INDEX_DIR = "index"
# The index's format and what its digests keep (`store.index.digests`). Files and delta lines of another
# version are not read: the day files are folded again and the index rewritten (2: strategies, member
# counts and egress; 3: side requests apart from the turn's main ones, and the outcome lines that say
# refused, failed or left).
VERSION = 3


def index_dir(context_dir: Path) -> Path:
    return context_dir / INDEX_DIR


def delta_path(context_dir: Path, day: str) -> Path:
    return index_dir(context_dir) / f"events-{day}.delta"


def turns_path(context_dir: Path, day: str) -> Path:
    return index_dir(context_dir) / f"events-{day}.turns"


_NL = orjson.OPT_APPEND_NEWLINE


def delta_line(ident: str, start: int, end: int, digests: list[Digest]) -> bytes:
    return orjson.dumps({"v": VERSION, "file": ident, "at": [start, end], "e": digests}, option=_NL)


class IndexAppender:
    """A writer's side of the index: `record(day, end, size, digests, base)` after each day-file
    write (see the module contract). Callers serialise calls (the writer's write lock). Failures are
    counted, never raised: the index is rebuilt from the day files."""

    def __init__(self, context_dir: Path) -> None:
        self.context_dir = context_dir
        self.failed = 0
        self._fd: int | None = None
        self._day: str | None = None
        self._ident: str | None = None
        self._ready = False
        # The day file's end at the last record (`next_start`).
        self._end_day: str | None = None
        self._end = 0

    def next_start(self, day: str) -> int:
        """Where the next write to the day's file most likely starts: its end at this appender's last
        record for that day (0 when none). Another process may have appended since: a guess, which
        `record` corrects."""
        return self._end if self._end_day == day else 0

    def record(self, day: str, end: int, size: int, digests: list[Digest], base: int = 0) -> None:
        """The index line for `size` bytes of whole lines just written to the day's file (whose end
        is now at `end`), with the `digests` of those of their events that have a turn, each holding
        its line's offset from the first line written plus `base` (made the offset in the file here:
        no change when `base` was where they start, `next_start`'s usual guess) and its length."""
        self._end_day, self._end = day, end
        if self._ident is None or self._day != day:
            self._ident = file_ident(log.day_path(self.context_dir, day))
        if self._ident is None:
            return  # too short to tell apart yet: readers catch up from the day file
        start = end - size
        if start != base:
            shift = start - base
            for dg in digests:
                dg[0] += shift
        # `delta_line`, without the call (a write's every index line).
        line = orjson.dumps({"v": VERSION, "file": self._ident, "at": [start, end], "e": digests}, option=_NL)
        try:
            fd = self._fd if self._fd is not None and self._day == day else self._open(day)
            n = os.write(fd, line)  # `log.write_all`, its one usual write made here
            if n < len(line):
                log.write_all(fd, line[n:])
        except OSError:
            self.failed += 1
            self.close()

    def _open(self, day: str) -> int:
        self.close()
        if not self._ready:
            index_dir(self.context_dir).mkdir(parents=True, exist_ok=True)
            self._ready = True
        fd = os.open(delta_path(self.context_dir, day), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._fd, self._day = fd, day
        return fd

    def reopen(self) -> None:
        """Open the delta file again on the next record (the writer reopened its day file)."""
        self.close()
        self._ready = False
        self._ident = None
        self._end_day = None

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd, self._day = self._fd, None, None
            with contextlib.suppress(OSError):
                os.close(fd)


class DayState:
    """What is known of one day file: its folds and which of its bytes they cover."""

    def __init__(self, ident: str | None) -> None:
        self.ident = ident
        self.folds: dict[str, TurnFold] = {}
        self.ranges: list[tuple[int, int]] = []
        self.seen: set[int] = set()
        self.compact_size = 0
        self.delta_pos = 0
        self.size = 0
        self.torn = 0
        self.corrupt = 0
        self.compacted = False
        self.changes = 0
        self.tail = 0  # 1 while the file ends in a line without its newline (torn, or being written)

    def load_compacted(self, folds: dict[str, TurnFold], size: int, torn: int, corrupt: int) -> None:
        """The state as the compacted file says: its folds cover the first `size` bytes."""
        self.folds = folds
        self.compact_size = self.size = size
        self.ranges = [(0, size)]
        self.torn, self.corrupt = torn, corrupt
        self.compacted = True

    def compacted_to(self, size: int) -> None:
        """The folds were written to the compacted file, covering the first `size` bytes; no delta left."""
        self.compacted = True
        self.compact_size = size
        self.ranges = [(0, size)]
        self.seen = set()
        self.delta_pos = 0

    def read_to(self, size: int) -> None:
        """The day file was read up to `size` bytes."""
        self.size = size

    def deltas_read(self, n: int) -> None:
        """`n` more bytes of the delta file were read."""
        self.delta_pos += n

    def damaged(self, torn: int, corrupt: int) -> None:
        """Torn and corrupt lines met while catching up."""
        self.torn += torn
        self.corrupt += corrupt

    def ends_unfinished(self, tail: bool) -> None:
        """Whether the file ends in a line without its newline (torn, or being written)."""
        self.tail = 1 if tail else 0

    def add(self, day: str, dg: Digest) -> None:
        off = dg[0]
        if off < self.compact_size or off in self.seen:
            return
        self.seen.add(off)
        self.changes += 1
        turn = dg[5]
        if not isinstance(turn, str) or not turn:
            return
        f = self.folds.get(turn)
        if f is None:
            f = self.folds[turn] = TurnFold(turn)
        f.add(dg, day)

    def gaps(self, size: int) -> list[tuple[int, int]]:
        """The byte ranges below `size` no record covers (the covered ranges are merged as a side effect)."""
        out: list[tuple[int, int]] = []
        merged: list[tuple[int, int]] = []
        pos = 0
        for a, b in sorted(self.ranges):
            if a > pos:
                out.append((pos, a))
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
            pos = max(pos, b)
        if pos < size:
            out.append((pos, size))
        self.ranges = merged
        return out


class DayReader:
    """Brings day states up to date (see the module contract); `days` is the cache of a TurnIndex."""

    def __init__(self, context_dir: Path, persist: bool, keep_past: int = 2) -> None:
        self.context_dir = context_dir
        self.persist = persist
        self.keep_past = keep_past
        self.days: dict[str, DayState] = {}

    def trim(self) -> None:
        """Forget all but the newest `keep_past` compacted days (read again when asked for): a long-lived
        process keeps today's state and a little more, not two weeks of folds."""
        done = sorted(d for d, st in self.days.items() if st.compacted and st.size == st.compact_size)
        for day in done[: max(len(done) - self.keep_past, 0)]:
            del self.days[day]

    def refresh(self, day: str, path: Path, past: bool) -> DayState | None:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            self.days.pop(day, None)
            return None
        state = self.days.get(day)
        ident = file_ident(path)
        if state is None or state.ident != ident or stat.st_size < state.size:
            state = self.days[day] = DayState(ident)
            if ident is not None:
                self._load_compacted(day, state, stat.st_size)
        if state.compacted and state.size == stat.st_size:
            return state
        self._read_deltas(day, state, stat.st_size)
        self._catch_up(day, path, state, stat.st_size)
        state.read_to(stat.st_size)
        if past and self.persist and (not state.compacted or state.size > state.compact_size):
            self._compact(day, state)
        return state

    def _load_compacted(self, day: str, state: DayState, size: int) -> None:
        try:
            raw = turns_path(self.context_dir, day).read_bytes()
        except OSError:
            return
        lines = raw.split(b"\n")
        try:
            head = orjson.loads(lines[0])
            if (
                head.get("v") != VERSION
                or head.get("file") != state.ident
                or head.get("size", 1 << 62) > size
            ):
                return
            folds = {}
            for line in lines[1:]:
                if line:
                    f = TurnFold.from_record(orjson.loads(line))
                    folds[f.turn] = f
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, IndexError):
            return
        state.load_compacted(folds, int(head["size"]), int(head.get("torn", 0)), int(head.get("corrupt", 0)))

    def _read_deltas(self, day: str, state: DayState, size: int) -> None:
        try:
            with open(delta_path(self.context_dir, day), "rb") as fh:
                fh.seek(state.delta_pos)
                raw = fh.read()
        except OSError:
            return
        end = raw.rfind(b"\n") + 1  # a delta line still being written is read next time
        for line in raw[:end].split(b"\n"):
            if not line:
                continue
            try:
                rec = orjson.loads(line)
                if state.ident is None or rec.get("v") != VERSION or rec.get("file") != state.ident:
                    continue
                a, b = rec["at"]
                digests = rec["e"]
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                continue
            if b <= state.compact_size or b > size:
                continue  # compacted already, or not of this file (one cut short by hand)
            state.ranges.append((int(a), int(b)))
            for dg in digests:
                if isinstance(dg, list) and len(dg) == 7:
                    state.add(day, dg)
        state.deltas_read(end)

    def _catch_up(self, day: str, path: Path, state: DayState, size: int) -> None:
        gaps = state.gaps(size)
        state.ends_unfinished(False)
        if not gaps:
            return
        with open(path, "rb") as fh:
            for a, b in gaps:
                fh.seek(a)
                raw = fh.read(b - a)
                stop = raw.rfind(b"\n") + 1  # a line still being written is not covered yet
                if stop < len(raw) and b == size:
                    state.ends_unfinished(True)
                if stop == 0:
                    continue
                digests = self._parse(raw[:stop], a, state)
                for dg in digests:
                    state.add(day, dg)
                state.ranges.append((a, a + stop))
                if self.persist and state.ident is not None:
                    self._append_delta(day, state.ident, a, a + stop, digests)

    def _parse(self, raw: bytes, base: int, state: DayState) -> list[Digest]:
        st = log.ReadStats()
        out: list[Digest] = []
        pos = base
        for line in raw.split(b"\n")[:-1]:
            n = len(line) + 1
            if line:
                evs = log.parse_lines([line], st)
                if evs and evs[0].get("turn_id"):
                    out.append(digest(evs[0], pos, n))
            pos += n
        state.damaged(st.torn, st.corrupt)
        return out

    def _append_delta(self, day: str, ident: str, a: int, b: int, digests: list[Digest]) -> None:
        try:
            index_dir(self.context_dir).mkdir(parents=True, exist_ok=True)
            log.append_bytes(delta_path(self.context_dir, day), delta_line(ident, a, b, digests))
        except OSError:
            pass  # a read-only home: the next reader catches up again

    def _compact(self, day: str, state: DayState) -> None:
        if state.ident is None or state.gaps(state.size):
            return  # a line still being written: not complete yet
        head = {"v": VERSION, "file": state.ident, "size": state.size, "torn": state.torn}
        head["corrupt"] = state.corrupt
        blob = b"".join(
            [orjson.dumps(head) + b"\n", *(orjson.dumps(f.to_record()) + b"\n" for f in state.folds.values())]
        )
        target = turns_path(self.context_dir, day)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            index_dir(self.context_dir).mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, target)
            delta_path(self.context_dir, day).unlink(missing_ok=True)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        state.compacted_to(state.size)

    def peek(self, day: str, path: Path, turn: str) -> TurnFold | None:
        """The turn's fold in one day file, from the compacted file's line that names it when that file
        covers the whole day file (no other line is parsed); else from the day's refreshed state."""
        state = self.days.get(day)
        if state is None:
            try:
                size = os.stat(path).st_size
                raw = turns_path(self.context_dir, day).read_bytes()
            except OSError:
                raw, size = b"", -1
            end = raw.find(b"\n")
            try:
                head = orjson.loads(raw[:end]) if end > 0 else None
            except orjson.JSONDecodeError:
                head = None
            if (
                isinstance(head, dict)
                and head.get("v") == VERSION
                and head.get("size") == size
                and head.get("file") == file_ident(path)
            ):
                at = raw.find(b'["' + turn.encode() + b'",')
                if at < 0:
                    return None
                try:
                    return TurnFold.from_record(orjson.loads(raw[at : raw.find(b"\n", at)]))
                except (orjson.JSONDecodeError, TypeError, ValueError, IndexError):
                    pass  # read the day in full below
        found = self.refresh(day, path, False)
        return found.folds.get(turn) if found is not None else None
