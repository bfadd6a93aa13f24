"""`index-tree`: files and directories of a repository into the entity store.

`index_tree(store, root, turn_id=)`:
- walks `root` honouring `.gitignore` (see `store.entities.walk`);
- appends an EXTRACTED `dir`/`file` entity for every new or changed path (a file is unchanged when its
  size and mtime are those recorded; a directory when it exists already) and a `contains` edge from
  its parent directory; paths under `root` that are gone get a `drop` record;
- when `turn_id` is given, writes that turn's `file-tree` key: {"root", "files", "dirs"}.
Entity data: rel (to root), root, size and mtime_ns for files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from glider_cli.store.entities.graph import Edge, Entity, EntityStore, Graph, drop_record, key_record
from glider_cli.store.entities.walk import walk
from glider_cli.values import Frozen, init_fields

Progress = Callable[[int, str], None]


class TreeIndexResult(Frozen):
    root: str
    files: int
    dirs: int
    changed: int
    unchanged: int
    removed: int
    turn_id: str | None
    ms: float

    def __init__(
        self,
        root: str,
        files: int,
        dirs: int,
        changed: int,
        unchanged: int,
        removed: int,
        turn_id: str | None,
        ms: float,
    ) -> None:
        init_fields(self, root, files, dirs, changed, unchanged, removed, turn_id, ms)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def index_tree(
    store: EntityStore,
    root: Path,
    *,
    turn_id: str | None = None,
    graph: Graph | None = None,
    progress: Progress | None = None,
) -> TreeIndexResult:
    """See the module contract. `graph` is the store's current view (loaded when not given)."""
    t0 = time.perf_counter()
    g = graph if graph is not None else store.load()
    base = os.path.abspath(root)
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    files = dirs = changed = unchanged = 0
    for n, entry in enumerate(walk(Path(base)), 1):
        kind = "dir" if entry.is_dir else "file"
        eid = f"{kind}:{entry.path}"
        seen.add(eid)
        old = g.entities.get(eid)
        if entry.is_dir:
            dirs += 1
            data: dict[str, Any] = {"rel": entry.rel, "root": base}
        else:
            files += 1
            data = {"rel": entry.rel, "root": base, "size": entry.size, "mtime_ns": entry.mtime_ns}
        if (
            old is not None
            and old.prov == "EXTRACTED"
            and (old.turn == turn_id or turn_id is None)
            and all(old.data.get(k) == v for k, v in data.items())
        ):
            unchanged += 1
        else:
            if old is not None:
                data = {**old.data, **data}
            e = Entity(
                eid,
                kind,
                os.path.basename(entry.path) or entry.path,
                entry.path,
                "EXTRACTED",
                turn_id if turn_id is not None else (old.turn if old else None),
                data,
            )
            g.add_entity(e)
            records.append(e.record())
            if entry.rel != ".":
                edge = Edge(f"dir:{os.path.dirname(entry.path)}", eid, "contains", "EXTRACTED")
                g.add_edge(edge)
                records.append(edge.record())
            changed += 1
        if progress is not None and n % 256 == 0:
            progress(n, entry.rel)
    removed = 0
    prefix = base.rstrip("/") + "/"
    for eid, e in list(g.entities.items()):
        stale = e.kind in ("file", "dir") and e.prov == "EXTRACTED" and eid not in seen
        if stale and e.path and (e.path.startswith(prefix) or e.path == base):
            g.drop(eid)
            records.append(drop_record(eid))
            removed += 1
    if turn_id is not None:
        value = {"root": base, "files": files, "dirs": dirs}
        g.set_key(turn_id, "file-tree", value, "EXTRACTED")
        records.append(key_record(turn_id, "file-tree", value, "EXTRACTED"))
    store.append(records)
    return TreeIndexResult(
        base, files, dirs, changed, unchanged, removed, turn_id, round((time.perf_counter() - t0) * 1000, 1)
    )
