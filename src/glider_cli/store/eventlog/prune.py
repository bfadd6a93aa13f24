"""Prune: delete event files older than `context.retain_days`, as a plan first and an act second.

`plan_for(files, retain_days, today)` is pure: given (day, path, size) triples it returns a PrunePlan
(`cutoff` is the first day kept: today - (retain_days - 1); `retain_days` 0 deletes every file but
today's, like 1). `plan(context_dir, ...)` lists the
directory and calls it. `apply(plan)` deletes the planned files one `unlink` at a time.

Safety:
- today's file, and any file dated on or after the cutoff, is never deleted, even if a hand-made
  plan lists it (apply re-checks each path's day against the plan's cutoff and the current UTC day);
- a file is either there or gone: an interrupted prune has removed only files that were due to go,
  and running it again finishes the job;
- `glider serve` only appends to the file of the current day, so pruning beside it loses no new event.
The entity store (`entities.jsonl`) is not touched.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from glider_cli.errors import StoreError
from glider_cli.store.eventlog import log
from glider_cli.values import Frozen, init_fields


class PruneItem(Frozen):
    path: str
    day: str
    bytes: int

    def __init__(self, path: str, day: str, bytes: int) -> None:
        init_fields(self, path, day, bytes)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "day": self.day, "bytes": self.bytes}


class PrunePlan(Frozen):
    today: str
    retain_days: int
    cutoff: str
    delete: tuple[PruneItem, ...]
    keep: tuple[PruneItem, ...]

    def __init__(
        self,
        today: str,
        retain_days: int,
        cutoff: str,
        delete: tuple[PruneItem, ...],
        keep: tuple[PruneItem, ...],
    ) -> None:
        init_fields(self, today, retain_days, cutoff, delete, keep)

    @property
    def bytes_freed(self) -> int:
        return sum(i.bytes for i in self.delete)

    def to_dict(self) -> dict[str, Any]:
        return {
            "today": self.today,
            "retain_days": self.retain_days,
            "cutoff": self.cutoff,
            "delete": [i.to_dict() for i in self.delete],
            "keep": [i.to_dict() for i in self.keep],
            "bytes_freed": self.bytes_freed,
        }


class PruneResult(Frozen):
    deleted: tuple[str, ...]
    already_gone: tuple[str, ...]
    refused: tuple[str, ...]

    def __init__(
        self,
        deleted: tuple[str, ...],
        already_gone: tuple[str, ...],
        refused: tuple[str, ...],
    ) -> None:
        init_fields(self, deleted, already_gone, refused)

    def to_dict(self) -> dict[str, Any]:
        return {
            "deleted": list(self.deleted),
            "already_gone": list(self.already_gone),
            "refused": list(self.refused),
        }


def plan_for(files: Iterable[tuple[dt.date, str, int]], retain_days: int, today: dt.date) -> PrunePlan:
    """The pure plan (see the module contract)."""
    if retain_days < 0:
        raise StoreError(f"retain days must be at least 0, got {retain_days}")
    # 0 keeps as much as 1: today's file, which a running `glider serve` appends to, always stays.
    cutoff = today - dt.timedelta(days=max(retain_days, 1) - 1)
    delete: list[PruneItem] = []
    keep: list[PruneItem] = []
    for day, path, size in sorted(files):
        item = PruneItem(path, day.isoformat(), size)
        (delete if day < cutoff and day != today else keep).append(item)
    return PrunePlan(today.isoformat(), retain_days, cutoff.isoformat(), tuple(delete), tuple(keep))


def plan(context_dir: Path, retain_days: int, today: dt.date | None = None) -> PrunePlan:
    now = today or dt.datetime.now(dt.UTC).date()
    files = []
    for day, path in log.list_day_files(context_dir):
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            continue
        files.append((day, str(path), size))
    return plan_for(files, retain_days, now)


def apply(p: PrunePlan, *, today: dt.date | None = None) -> PruneResult:
    """Delete what the plan lists, re-checking each file (see the module contract)."""
    now = today or dt.datetime.now(dt.UTC).date()
    cutoff = dt.date.fromisoformat(p.cutoff)
    deleted: list[str] = []
    gone: list[str] = []
    refused: list[str] = []
    for item in p.delete:
        day = dt.date.fromisoformat(item.day)
        name_ok = os.path.basename(item.path) == f"events-{item.day}.jsonl"
        if not name_ok or day >= cutoff or day >= now:
            refused.append(item.path)
            continue
        try:
            os.unlink(item.path)
        except FileNotFoundError:
            gone.append(item.path)
            continue
        except OSError as exc:
            raise StoreError(f"cannot delete {item.path}: {exc}") from exc
        deleted.append(item.path)
    return PruneResult(tuple(deleted), tuple(gone), tuple(refused))
