"""The event log's day files: where they are, which of them a read covers, and how a file is known.

Contract: a day's events are in `<context dir>/events-YYYY-MM-DD.jsonl` (`day_path`), one file per
UTC day; `list_day_files` lists them oldest day first (other names are not event files), and
`select_days` picks the last `days` UTC days of them (today included; all when `days` is None).
`file_ident` is a day file's identity (its inode and a checksum of its first 64 bytes), the key the
turn index and the usage digests keep a file's reading under. Names and metadata only: nothing
here reads an event (`store.eventlog.log` does, and re-exports the three path functions).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import zlib
from pathlib import Path

_DAY_FILE = re.compile(r"^events-(\d{4}-\d{2}-\d{2})\.jsonl$")


def day_path(context_dir: Path, day: dt.date | str) -> Path:
    d = day if isinstance(day, str) else day.isoformat()
    return context_dir / f"events-{d}.jsonl"


def list_day_files(context_dir: Path) -> list[tuple[dt.date, Path]]:
    """Every event file under `context_dir`, oldest day first."""
    if not context_dir.is_dir():
        return []
    out: list[tuple[dt.date, Path]] = []
    for entry in os.scandir(context_dir):
        m = _DAY_FILE.match(entry.name)
        if not m:
            continue
        try:
            day = dt.date.fromisoformat(m.group(1))
        except ValueError:
            continue
        out.append((day, Path(entry.path)))
    out.sort()
    return out


def select_days(context_dir: Path, *, days: int | None = None, today: dt.date | None = None) -> list[Path]:
    """The event files of the last `days` UTC days (today included); all files when `days` is None."""
    files = list_day_files(context_dir)
    if days is None:
        return [p for _, p in files]
    now = today or dt.datetime.now(dt.UTC).date()
    first = now - dt.timedelta(days=max(days, 1) - 1)
    return [p for d, p in files if d >= first]


def file_ident(path: Path) -> str | None:
    """A day file's identity: its inode and a checksum of its first 64 bytes (None while it is shorter).
    The turn index (`store.index.index_day`) and the usage digests (`store.views.usage_read`) key what
    they keep of a day file by it, so a file replaced under the same name is read anew."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            ino = os.fstat(fh.fileno()).st_ino
    except OSError:
        return None
    return f"{ino}-{zlib.crc32(head):08x}" if len(head) == 64 else None
