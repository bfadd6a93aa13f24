"""The usage view's reading of the event log: one `store.usage.Digest` per day file, kept on disk.

    digests(context_dir, days) -> list[Digest]       # the selected days, oldest first
    read_types(day_file, types) -> list[event]       # one file's events of these types (no digest)

Files, under `<context dir>/index/` (the day files stay the source of truth):

    events-YYYY-MM-DD.usage   {"v": 1, "file": <ident>, "size": N, "digest": Digest.to_json()}

`size` is how many bytes of the day file the digest covers (whole lines). A day file whose ident
(`store.eventlog.days.file_ident`) is the kept one's and that is at least `size` long is read on from
`size` only (appended lines); any other is read whole again. Only the complete lines that name one of
`USAGE_TYPES` (`"type":"<T>"`, as `store.log.encode` writes it) are parsed. The file is written again
(a temporary file, then renamed) when the digest grew; a home that cannot be written is only read.
A `.usage` file whose day file is gone (pruned) is removed. Strategy members no `StrategyChosen`
settled yet stay in the kept digest (`pending`), so a later append can still settle them; the
digests returned count them as calls.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

from glider_cli.errors import StoreError
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.days import file_ident
from glider_cli.store.views.usage import USAGE_TYPES, Digest

VERSION = 4  # 3: Escalated events are read too; 4: a group's client input (the savings' basis)
INDEX_DIR = "index"  # store.index_day's directory


def index_dir(context_dir: Path) -> Path:
    return context_dir / INDEX_DIR


_NEEDLES = tuple(b'"type":' + orjson.dumps(t) for t in USAGE_TYPES)


def _lines(raw: bytes, start: int) -> tuple[list[bytes], int]:
    """The complete lines from `start` that name a usage type, and where the complete lines end."""
    end_all = raw.rfind(b"\n") + 1
    if end_all <= start:
        return [], start
    lines: list[bytes] = []
    for needle in _NEEDLES:
        pos = raw.find(needle, start, end_all)
        while pos >= 0:
            a = raw.rfind(b"\n", 0, pos) + 1
            b = raw.find(b"\n", pos)
            lines.append(raw[a:b])
            pos = raw.find(needle, b, end_all)
    return lines, end_all


def _usage_path(context_dir: Path, day_file: Path) -> Path:
    return index_dir(context_dir) / (day_file.name.removesuffix(".jsonl") + ".usage")


def _load(path: Path) -> dict[str, Any] | None:
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, dict) or raw.get("v") != VERSION:
        return None
    return raw


def _save(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(orjson.dumps(value))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def day_digest(context_dir: Path, day_file: Path, stats: log.ReadStats | None = None) -> Digest:
    st = stats if stats is not None else log.ReadStats()
    kept_path = _usage_path(context_dir, day_file)
    ident = file_ident(day_file)
    try:
        size = day_file.stat().st_size
    except FileNotFoundError:
        return Digest()
    except OSError as exc:
        raise StoreError(f"cannot read {day_file}: {exc}") from exc
    kept = _load(kept_path)
    digest, start = Digest(), 0
    if (
        kept is not None
        and ident is not None
        and kept.get("file") == ident
        and 0 <= kept.get("size", -1) <= size
    ):
        try:
            digest, start = Digest.from_json(kept["digest"]), int(kept["size"])
        except (KeyError, TypeError, ValueError):
            digest, start = Digest(), 0
    if start == size:
        return digest
    try:
        with open(day_file, "rb") as fh:
            fh.seek(start)
            raw = fh.read()
    except OSError as exc:
        raise StoreError(f"cannot read {day_file}: {exc}") from exc
    st.file_read()
    lines, used = _lines(raw, 0)
    if lines:
        wanted = set(USAGE_TYPES)
        digest.feed(e for e in log.parse_lines(lines, st) if e["type"] in wanted)
    if ident is not None and used:
        _save(kept_path, {"v": VERSION, "file": ident, "size": start + used, "digest": digest.to_json()})
    return digest


def digests(context_dir: Path, days: int | None, stats: log.ReadStats | None = None) -> list[Digest]:
    files = log.select_days(context_dir, days=days)
    out = []
    for f in files:
        d = day_digest(context_dir, f, stats)
        if d.pending:
            d = Digest.from_json(d.to_json())
            d.settle()
        out.append(d)
    _forget_gone(context_dir)
    return out


def _forget_gone(context_dir: Path) -> None:
    """Remove the `.usage` files of day files that are gone."""
    idx = index_dir(context_dir)
    try:
        names = [n for n in os.listdir(idx) if n.endswith(".usage")]
    except OSError:
        return
    for n in names:
        if not (context_dir / (n.removesuffix(".usage") + ".jsonl")).exists():
            with contextlib.suppress(OSError):
                (idx / n).unlink()


def read_types(
    path: Path, types: tuple[str, ...], stats: log.ReadStats | None = None
) -> list[dict[str, Any]]:
    """The readable events of these types in one day file (whole lines that name one, parsed)."""
    st = stats if stats is not None else log.ReadStats()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    st.file_read()
    end = raw.rfind(b"\n") + 1
    lines: list[bytes] = []
    for needle in (b'"type":' + orjson.dumps(t) for t in types):
        pos = raw.find(needle, 0, end)
        while pos >= 0:
            a = raw.rfind(b"\n", 0, pos) + 1
            b = raw.find(b"\n", pos)
            lines.append(raw[a:b])
            pos = raw.find(needle, b, end)
    wanted = set(types)
    return [e for e in log.parse_lines(lines, st) if e["type"] in wanted]
