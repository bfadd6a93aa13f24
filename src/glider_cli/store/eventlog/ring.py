"""`Ring`: the newest events in memory (`context.max_events` of them), as the writer keeps them.

Contract:
- Each event is kept as its id and its line (the exact bytes written to the day file), or as the
  event itself when it has no line (it could not be encoded). Reading decodes new dicts each time,
  so a reader may change what it gets.
- `add_lines` keeps a copy of each line; `keep_lines` keeps lines that are of their own size already
  (the writer's usual batch joins each line from its parts: `store.eventlog.settle.settle_clean`).
- Why bytes: kept as dicts, 4,096 events were ~40k objects that every full garbage collection
  walked again; under load that was a fifth of the server's collector time (issue 29). An
  (id, bytes) pair holds nothing the collector follows. Each line is kept as a copy of its own
  size: the bytes orjson returns keep its whole output buffer (~4 KB for a 200-byte line), which
  for 4,096 events was ~16 MB of the server's memory.
- Not thread-safe on its own: the writer calls it under its lock. `tail` and `after_cursor` return
  what is kept (a list copy); `read` decodes it, outside the lock.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable
from typing import Any

import orjson

# (id, the line written), or the event itself when it could not be encoded.
Kept = tuple[str, bytes] | dict[str, Any]


class Ring:
    """See the module contract."""

    def __init__(self, size: int) -> None:
        self._items: collections.deque[Kept] = collections.deque(maxlen=size)

    def __len__(self) -> int:
        return len(self._items)

    def add_lines(self, ids: Iterable[str], lines: Iterable[bytes]) -> None:
        self._items.extend(zip(ids, map(_own, lines), strict=True))

    def keep_lines(self, ids: Iterable[str], lines: Iterable[bytes]) -> None:
        """`add_lines` for lines that are bytes of their own size already (joined from their parts,
        not an encoder's buffer: `settle.settle_clean`), kept as they are."""
        # Of one length (the writer's batch): zip without `strict=`, whose keyword alone costs a
        # call ~1.5k instructions on the write path.
        self._items.extend(zip(ids, lines))  # noqa: B905

    def add_settled(self, settled: Iterable[tuple[dict[str, Any], bytes | None, bool]]) -> None:
        self._items.extend([(ev["id"], _own(line)) if line is not None else ev for ev, line, _ in settled])

    def load(self, events: Iterable[tuple[dict[str, Any], bytes | None]]) -> None:
        """Put `events` (read back from disk, oldest first, each with its line as read, or None when
        it has to be encoded again: `log.read_newest`) before what is kept now."""
        live = list(self._items)
        self._items.clear()
        dumps = orjson.dumps
        self._items.extend((e["id"], line if line is not None else _own(dumps(e))) for e, line in events)
        self._items.extend(live)

    def tail(self, limit: int | None = None) -> list[Kept]:
        """The newest `limit` kept (all when None), oldest first."""
        items = self._items
        skip = 0 if limit is None else max(0, len(items) - limit)
        return list(itertools.islice(items, skip, None))

    def after_cursor(self, cursor: str, limit: int) -> list[Kept]:
        """Those with an id above `cursor`, oldest first, at most `limit` (the oldest)."""
        items = list(self._items)
        i = len(items)
        while i > 0 and _id(items[i - 1]) > cursor:
            i -= 1
        return items[i : i + limit]


def read(kept: list[Kept]) -> list[dict[str, Any]]:
    """The events as dicts, new ones."""
    loads = orjson.loads
    return [loads(k[1]) if type(k) is tuple else k for k in kept]  # type: ignore[misc]


# Two empty parts joined by a line make a new bytes of the line's size: one allocation and a copy
# (~150 ns for a 1.4 KB line, against ~350 ns through a memoryview, which allocates two objects more).
_TWO_EMPTY = (b"", b"")


def _own(line: bytes) -> bytes:
    """A copy of `line` of its own size (see the module contract: why)."""
    return line.join(_TWO_EMPTY)


def _id(kept: Kept) -> str:
    if type(kept) is tuple:
        return kept[0]
    assert isinstance(kept, dict)
    return str(kept["id"])
