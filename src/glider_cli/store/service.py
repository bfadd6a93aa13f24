"""ContextStore: the one facade the CLI (`glider context …`, `glider prune`) and the HTTP API share.

It reads the files under `$GLIDER_HOME/context` (and, inside `glider serve`, the live EventWriter's
ring) and returns plain values (dicts, and `values.Frozen` values with `to_dict()`):
- `recent(limit)`: the newest events, oldest first (the writer's ring when there is one);
- `episodes(limit)` / `turns()`: episode dicts (see `store.episodes`), oldest first;
- `turn(id)`: {"turn_id", "episode", "keys", "events"} or None for an unknown turn;
- `graph()` / `query(text)`: the entity graph plus the RUNTIME layer derived from the events of the
  last `retain_days` days; cached until a file changes;
- `index_tree`, `index_symbols`: index a directory into `entities.jsonl` (compacted afterwards
  when most of its lines are dead);
- `export()`: every event, then every entity-store record, as JSONL lines (bytes);
- `prune_plan(days)` / `prune_apply(plan)`: see `store.prune`.
With a writer, reads first wait (briefly) for what it has queued, so an API answer includes events
emitted before the request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store import episodes as ep
from glider_cli.store import log, prune
from glider_cli.store.graph import EntityStore, Graph
from glider_cli.store.index_symbols import SymbolIndexResult, index_symbols
from glider_cli.store.index_tree import Progress, TreeIndexResult, index_tree
from glider_cli.store.query import QueryAnswer, run
from glider_cli.store.search import SearchIndex
from glider_cli.store.writer import EventWriter

FLUSH_WAIT = 2.0


class ContextStore:
    def __init__(
        self, paths: Paths, settings: ContextSettings | None = None, writer: EventWriter | None = None
    ) -> None:
        self.paths = paths
        self.settings = settings or ContextSettings()
        self.writer = writer
        self.entities = EntityStore(paths)
        self.last_read = log.ReadStats()
        self._lock = threading.Lock()
        self._cache: tuple[tuple[Any, ...], Graph, SearchIndex | None] | None = None

    # -- events ----------------------------------------------------------------------------------

    def events(self, days: int | None = None) -> list[dict[str, Any]]:
        """Events of the last `days` days (all files when None), in id order."""
        if self.writer is not None:
            self.writer.flush(timeout=FLUSH_WAIT)
        st = log.ReadStats()
        out = list(log.iter_events(self.paths.context, days=days, stats=st))
        out.sort(key=lambda e: e["id"])
        self.last_read = st
        return out

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        if self.writer is not None:
            return self.writer.recent(limit)
        evs = self.events(self.settings.warm_load_days)
        return evs[-limit:] if limit > 0 else []

    def episodes(self, limit: int | None = None) -> list[dict[str, Any]]:
        source = (
            self.writer.recent() if self.writer is not None else self.events(self.settings.warm_load_days)
        )
        eps = [e.to_dict() for e in ep.build(source)]
        return eps[-limit:] if limit is not None and limit > 0 else eps

    def turns(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in ep.build(self.events(self.settings.retain_days))]

    def turn(self, turn_id: str) -> dict[str, Any] | None:
        evs = [e for e in self.events(self.settings.retain_days) if e.get("turn_id") == turn_id]
        g = self.graph()
        keys = {k: {"value": v.value, "prov": v.prov} for k, v in g.keys.get(turn_id, {}).items()}
        if not evs and not keys:
            return None
        episodes = ep.build(evs)
        return {
            "turn_id": turn_id,
            "episode": episodes[0].to_dict() if episodes else None,
            "keys": keys,
            "events": evs,
        }

    # -- graph and query -----------------------------------------------------------------------------

    def _signature(self) -> tuple[Any, ...]:
        sig: list[Any] = []
        for p in [self.entities.path, *log.select_days(self.paths.context, days=self.settings.retain_days)]:
            try:
                st = p.stat()
                sig.append((str(p), st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                sig.append((str(p), None))
        return tuple(sig)

    def graph(self) -> Graph:
        return self._cached()[0]

    def _cached(self) -> tuple[Graph, SearchIndex | None]:
        if self.writer is not None:
            self.writer.flush(timeout=FLUSH_WAIT)
        with self._lock:
            sig = self._signature()
            if self._cache is not None and self._cache[0] == sig:
                return self._cache[1], self._cache[2]
            g = self.entities.load()
            g.add_runtime(self.events(self.settings.retain_days))
            self._cache = (sig, g, None)
            return g, None

    def query(self, text: str) -> QueryAnswer:
        g, index = self._cached()
        if index is None or index.version != g.version:
            index = SearchIndex(g)
            with self._lock:
                if self._cache is not None and self._cache[1] is g:
                    self._cache = (self._cache[0], g, index)
        return run(g, text, index)

    # -- indexing ------------------------------------------------------------------------------------

    def index_tree(
        self, root: Path, *, turn_id: str | None = None, progress: Progress | None = None
    ) -> TreeIndexResult:
        with self._lock:
            self._cache = None
            result = index_tree(self.entities, root, turn_id=turn_id, progress=progress)
            self.entities.compact()
            return result

    def index_symbols(self, root: Path, *, progress: Progress | None = None) -> SymbolIndexResult:
        with self._lock:
            self._cache = None
            result = index_symbols(self.entities, root, progress=progress)
            self.entities.compact()
            return result

    # -- export and prune ------------------------------------------------------------------------------

    def export(self) -> Iterator[bytes]:
        for e in self.events(None):
            yield orjson.dumps(e) + b"\n"
        try:
            raw = self.entities.path.read_bytes()
        except FileNotFoundError:
            return
        lines = raw.split(b"\n")
        lines.pop()  # the part after the last newline is empty or a torn record
        for line in lines:
            if line.strip():
                yield line + b"\n"

    def prune_plan(self, days: int | None = None) -> prune.PrunePlan:
        return prune.plan(self.paths.context, days if days is not None else self.settings.retain_days)

    def prune_apply(self, plan: prune.PrunePlan) -> prune.PruneResult:
        result = prune.apply(plan)
        with self._lock:
            self._cache = None
        return result
