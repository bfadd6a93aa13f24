"""The append-only event log: one append function and one tolerant reader.

Files are `<context dir>/events-YYYY-MM-DD.jsonl`, one per UTC day (the day of the event's `ts`); their
names, listing and identity are `store.eventlog.days`.

Writing: `append_events` serialises a batch with orjson and hands each day's lines to the kernel in
one `os.write` on an `O_APPEND` descriptor. On a local filesystem the kernel serialises appends to a
file, so lines from two processes never interleave and no lock file is needed; a short write (disk
full, a signal during a huge write) is continued until the batch is written or an OSError is raised.

Opening a file to append seals a torn tail first: a file that does not end in a newline gets one, so
an event written after a crash never shares a line with the bytes the crash left.

Reading: `read_file` never fails on content. A last line without its newline (a writer killed in the
middle of a write) is skipped and counted as torn, and so is a complete line that is the start of an
event and no more (a torn tail sealed by a later writer); any other line that is not an event is
skipped and counted as corrupt. If a torn line had another writer's line glued to it (a file written
before sealing existed), the glued event is recovered.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import orjson

from glider_cli.errors import StoreError
from glider_cli.store import gcpause
from glider_cli.store.eventlog.days import day_path as day_path
from glider_cli.store.eventlog.days import list_day_files as list_day_files
from glider_cli.store.eventlog.days import select_days as select_days
from glider_cli.store.eventlog.events import upgrade

_EVENT_START = b'{"v":'


class ReadStats:
    """Counters one read adds to (state, not a value: readers count into it through its methods)."""

    def __init__(
        self,
        *,
        files: int = 0,
        lines: int = 0,
        events: int = 0,
        torn: int = 0,
        corrupt: int = 0,
        recovered: int = 0,
    ) -> None:
        self.files = files
        self.lines = lines
        self.events = events
        self.torn = torn
        self.corrupt = corrupt
        self.recovered = recovered

    def file_read(self) -> None:
        self.files += 1

    def torn_line(self) -> None:
        """A line cut short (a torn tail, or one a later writer sealed)."""
        self.torn += 1

    def corrupt_line(self) -> None:
        self.corrupt += 1

    def recovered_line(self) -> None:
        """A torn line that had another writer's complete event glued to it: torn, and recovered."""
        self.torn += 1
        self.recovered += 1

    def parsed(self, lines: int, events: int) -> None:
        """`lines` complete lines looked at, `events` read from them."""
        self.lines += lines
        self.events += events

    def add_damage(self, other: ReadStats) -> None:
        """Count `other`'s torn, corrupt and recovered lines here too (its files, lines and events not)."""
        self.torn += other.torn
        self.corrupt += other.corrupt
        self.recovered += other.recovered

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def open_append(path: Path) -> int:
    """An O_APPEND descriptor on `path` (created 0600): each `write_all` on it appends whole lines.

    A file that does not end in a newline (a writer died in the middle of a line) gets one first,
    so the torn line stays one line of its own and the next event is not glued to it. Two
    processes doing this at once leave an empty line, which readers skip."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
    except OSError:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write `data` to `fd`: one write, more only if the kernel took part of it."""
    n = os.write(fd, data)
    if n < len(data):
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view) :]


def append_bytes(path: Path, data: bytes) -> None:
    """Append whole lines to `path` with one write on an O_APPEND descriptor (see the contract)."""
    fd = open_append(path)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def encode(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event, default=str) + b"\n"


def append_events(context_dir: Path, events: Iterable[dict[str, Any]]) -> int:
    """Append already-built (and redacted) events, grouped by their UTC day. Returns the count."""
    by_day: dict[str, list[bytes]] = {}
    n = 0
    for ev in events:
        by_day.setdefault(ev["ts"][:10], []).append(encode(ev))
        n += 1
    if not by_day:
        return 0
    try:
        context_dir.mkdir(parents=True, exist_ok=True)
        for day, lines in by_day.items():
            append_bytes(day_path(context_dir, day), b"".join(lines))
    except OSError as exc:
        raise StoreError(f"cannot append to the event log in {context_dir}: {exc}") from exc
    return n


def _parse(line: bytes, stats: ReadStats) -> dict[str, Any] | None:
    try:
        ev = upgrade(orjson.loads(line))
    except orjson.JSONDecodeError:
        ev = None
        # A torn line followed by another writer's complete line: recover the complete one.
        at = line.rfind(_EVENT_START)
        if at > 0:
            try:
                ev = upgrade(orjson.loads(line[at:]))
            except orjson.JSONDecodeError:
                ev = None
            if ev is not None:
                stats.recovered_line()
                return ev
    if ev is None:
        if line.startswith(_EVENT_START) or _EVENT_START.startswith(line):
            stats.torn_line()  # an event cut short (sealed by the next writer's newline)
        else:
            stats.corrupt_line()
    return ev


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc


def read_file(path: Path, stats: ReadStats | None = None) -> list[dict[str, Any]]:
    """All readable events of one file, in file order (see the contract for what is skipped)."""
    st = stats if stats is not None else ReadStats()
    raw = _read(path)
    if raw is None:
        return []
    st.file_read()
    lines = raw.split(b"\n")
    tail = lines.pop()
    if tail.strip():
        st.torn_line()
    with gcpause.paused():
        return _parse_lines(lines, st)


def _parse_lines(lines: list[bytes], st: ReadStats) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    append = out.append
    loads = orjson.loads
    for line in lines:
        if not line:
            continue
        try:
            ev = loads(line)
        except orjson.JSONDecodeError:
            ev = _parse(line, st)
            if ev is not None:
                append(ev)
            continue
        if type(ev) is dict and ev.get("v") == 1 and "id" in ev and "type" in ev and "ts" in ev:
            append(ev)
        else:
            ev = upgrade(ev)
            if ev is None:
                st.corrupt_line()
            else:
                append(ev)
    st.parsed(len(lines) - lines.count(b""), len(out))
    return out


def iter_events(
    context_dir: Path,
    *,
    days: int | None = None,
    today: dt.date | None = None,
    stats: ReadStats | None = None,
) -> Iterator[dict[str, Any]]:
    """Events of the selected days, oldest file first, in file order within a file."""
    st = stats if stats is not None else ReadStats()
    for path in select_days(context_dir, days=days, today=today):
        yield from read_file(path, st)


def read_tail(paths: list[Path], limit: int, stats: ReadStats | None = None) -> list[dict[str, Any]]:
    """The newest `limit` readable events of `paths` (given oldest first), in file order.

    Only those lines are parsed; `stats.lines` still counts every complete line of every file (the
    writer's warm load uses `read_newest`, which reads only the files' ends).
    """
    st = stats if stats is not None else ReadStats()
    scratch = ReadStats()
    picked: list[list[dict[str, Any]]] = []
    need = limit
    for path in reversed(paths):
        raw = _read(path)
        if raw is None:
            continue
        st.file_read()
        end = raw.rfind(b"\n") + 1
        if raw[end:].strip():
            st.torn_line()
        st.parsed(raw.count(b"\n", 0, end), 0)
        got: list[dict[str, Any]] = []
        pos = end - 1  # the newline that ends the last complete line
        while need > 0 and pos >= 0:
            start = raw.rfind(b"\n", 0, pos) + 1
            line = raw[start:pos]
            pos = start - 1
            if not line:
                continue
            ev = _parse_lines([line], scratch)
            if ev:
                got.append(ev[0])
                need -= 1
        got.reverse()
        picked.append(got)
    return _in_file_order(picked, st, scratch)


# How much of a day file `read_newest` reads at a time, from its end (doubled at each step back).
_BLOCK = 256 << 10
_WRITTEN = b'{"v":1,"id":'  # how every line the writer encodes starts (`encode`)


def read_newest(
    paths: list[Path], limit: int, stats: ReadStats | None = None
) -> list[tuple[dict[str, Any], bytes | None]]:
    """The newest `limit` readable events of `paths` (given oldest first), in file order, each with
    its line as read when the writer wrote it so (None for a line upgraded from an older version or
    recovered from a torn one). What `read_tail` returns, but each file is read from its end, a block
    at a time, only as far back as those lines go: a warm start on a long day reads the part it
    keeps, not the day. `stats.lines` counts the lines looked at, not the files'."""
    st = stats if stats is not None else ReadStats()
    scratch = ReadStats()
    loads = orjson.loads
    picked: list[list[tuple[dict[str, Any], bytes | None]]] = []
    need = limit
    for path in reversed(paths):
        if need <= 0:
            break
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc
        got: list[tuple[dict[str, Any], bytes | None]] = []
        with fh:
            st.file_read()
            size = os.fstat(fh.fileno()).st_size
            end = _after_last_newline(fh, size)
            if end < size:
                fh.seek(end)
                if fh.read(size - end).strip():
                    st.torn_line()
            looked = 0
            for line in _lines_backwards(fh, end):
                if not line:
                    continue
                looked += 1
                try:
                    ev = loads(line)
                except orjson.JSONDecodeError:
                    ev = None
                if line.startswith(_WRITTEN) and type(ev) is dict and "type" in ev and "ts" in ev:
                    got.append((ev, line))  # as the writer wrote it: kept as read
                else:  # torn, recovered, corrupt or from an older version: as `read_tail` reads it
                    back = _parse_lines([line], scratch)  # `looked` counts the line: scratch only its damage
                    if not back:
                        continue
                    got.append((back[0], None))
                need -= 1
                if need <= 0:
                    break
            st.parsed(looked, 0)
        got.reverse()
        picked.append(got)
    return _in_file_order(picked, st, scratch)


T = TypeVar("T")


def _in_file_order(picked: list[list[T]], st: ReadStats, scratch: ReadStats) -> list[T]:
    """The tail readers' end: the files' picks (newest file first, each in file order) joined in file
    order, and the damage the parse counted (in `scratch`) added to `st`."""
    out = [e for chunk in reversed(picked) for e in chunk]
    st.parsed(0, len(out))
    st.add_damage(scratch)
    return out


def _after_last_newline(fh: BinaryIO, size: int) -> int:
    """The offset just after the file's last newline (0 without one): what follows is a torn tail."""
    pos = size
    while pos > 0:
        n = min(8 << 10, pos)  # a torn tail is one line at most: small steps
        pos -= n
        fh.seek(pos)
        at = fh.read(n).rfind(b"\n")
        if at >= 0:
            return pos + at + 1
    return 0


def _lines_backwards(fh: BinaryIO, end: int) -> Iterator[bytes]:
    """The lines of the file's first `end` bytes (which end with a newline), last first, without
    their newlines (and an empty one for that last newline), read a block at a time from `end`."""
    pos, carry, block = end, b"", _BLOCK
    while pos > 0:
        n = min(block, pos)
        pos -= n
        fh.seek(pos)
        parts = (fh.read(n) + carry).split(b"\n")
        # The first part begins before this block (unless the file starts here): kept for the next.
        carry = parts[0] if pos > 0 else b""
        yield from reversed(parts[1:] if pos > 0 else parts)
        block = min(block * 2, 8 << 20)


def read_typed(path: Path, type_: str, stats: ReadStats | None = None) -> list[dict[str, Any]]:
    """The readable events of type `type_` in one day file, in file order. Only the complete lines that
    name the type as `encode` writes it (`"type":"<type_>"`) are parsed; the rest is not looked at."""
    st = stats if stats is not None else ReadStats()
    raw = _read(path)
    if raw is None:
        return []
    st.file_read()
    needle = b'"type":' + orjson.dumps(type_)
    out: list[dict[str, Any]] = []
    pos = raw.find(needle)
    while pos >= 0:
        start = raw.rfind(b"\n", 0, pos) + 1
        end = raw.find(b"\n", pos)
        if end < 0:
            break  # a last line without its newline: torn, or still being written
        out += [e for e in parse_lines([raw[start:end]], st) if e["type"] == type_]
        pos = raw.find(needle, end)
    return out


def parse_lines(lines: list[bytes], stats: ReadStats) -> list[dict[str, Any]]:
    """The readable events of these complete lines (no newlines), counted into `stats` as `read_file` does."""
    return _parse_lines(lines, stats)
