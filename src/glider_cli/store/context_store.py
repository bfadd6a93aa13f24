"""ContextStore: the one facade the CLI (`glider context …`, `glider prune`) and the HTTP API share.

It reads the files under `$GLIDER_HOME/context` (and, inside `glider serve`, the live EventWriter's
ring) and returns plain values (dicts, and `values.Frozen` values with `to_dict()`):
- `recent(limit)`: the newest events, oldest first (the writer's ring when there is one; else only
  the newest lines of the files are parsed);
- `episodes(limit)`: episode dicts (see `store.views.episodes`) of the writer's ring, or of the last
  `warm_load_days` days of files, oldest first;
- `turns(limit, before)`: episode dicts of the last `retain_days` days, oldest first; with `limit`,
  the newest `limit` turns listed before the turn `before` (every turn before it when None);
- `turn(id)`: {"turn_id", "episode", "keys", "events"} or None for an unknown turn; only that turn's
  lines are read (by their offsets in the store index);
- `egress(days, session, limit)`: the egress audit (`store.views.egress`) of the last `days` days
  (default `retain_days`): {"days", "session", "limit", "calls", "totals", "omitted"}, the newest
  `limit` calls (default `EGRESS_LIMIT`; None: all); only the lines of the turns whose fold says a
  request left the machine are read (by their offsets), one turn at a time, and the turnless
  `DelegateRun` lines;
- `usage(days, by, prices)`: the usage and cost report (`store.usage`) of the last `days` days
  (default `retain_days`), priced with the `pricing:` entries `prices` over the bundled table; only
  the lines of the types it needs are parsed, and a digest of each day file is kept
  (`store.usage_read`);
- `graph()` / `query(text)`: the entity graph plus the RUNTIME layer derived from the turns of the
  last `retain_days` days (`store.entities.runtime_layer`); kept until the entity store or a turn changes. A
  query gets the layer it needs (`store.queries.query.runtime_scope`): none for a search of every turn for
  symbols or directories, one turn's for a search in that turn, every turn's for the graph modes;
- `index_tree`, `index_symbols`: index a directory into `entities.jsonl` (compacted afterwards
  when most of its lines are dead);
- `export()`: every event (day file by day file, in file order), then every entity-store record, as
  JSONL (bytes, whole lines, about a megabyte a piece), one file in memory at a time;
- `prune_plan(days)` / `prune_apply(plan)`: see `store.eventlog.prune`; `retain()` prunes to `retain_days`
  and returns what an `EventsPruned` event records (serve runs it daily, `server.retention`).
Turn views read the store index (`store.index.turn_index`), never the whole log. With a writer, reads first
wait (briefly) for what it has queued, so an API answer includes events emitted before the request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.entities.graph import EntityStore, Graph
from glider_cli.store.eventlog import log, prune
from glider_cli.store.index.turn_index import TurnIndex, read_spans
from glider_cli.store.views import episodes as ep

if TYPE_CHECKING:
    from glider_cli.config.pricing import Price
    from glider_cli.store.entities.index_symbols import SymbolIndexResult
    from glider_cli.store.entities.index_tree import Progress, TreeIndexResult
    from glider_cli.store.eventlog.writer import EventWriter
    from glider_cli.store.index.turnfold import TurnFold
    from glider_cli.store.queries.query import QueryAnswer
    from glider_cli.store.queries.search import SearchIndex

FLUSH_WAIT = 2.0
_CURRENT = b'{"v":1,'
# Export yields about this many bytes at a time (a server hands each piece over from a thread).
_CHUNK = 1 << 20
# `egress` lists at most this many calls (the newest) by default; its totals count them all.
EGRESS_LIMIT = 200


class ContextStore:
    def __init__(
        self, paths: Paths, settings: ContextSettings | None = None, writer: EventWriter | None = None
    ) -> None:
        self.paths = paths
        self.settings = settings or ContextSettings()
        self.writer = writer
        self.entities = EntityStore(paths)
        self.index = TurnIndex(paths.context)
        self.last_read = log.ReadStats()
        self._lock = threading.Lock()
        # RUNTIME scope (None: the entity store alone; "*": every turn) -> signature, graph, search index
        self._cache: dict[str | None, tuple[Any, Graph, SearchIndex | None]] = {}

    def _flush(self) -> None:
        if self.writer is not None:
            self.writer.flush(timeout=FLUSH_WAIT)

    # -- events ----------------------------------------------------------------------------------

    def events(self, days: int | None = None) -> list[dict[str, Any]]:
        """Events of the last `days` days (all files when None), in id order (parses them all)."""
        self._flush()
        st = log.ReadStats()
        out = list(log.iter_events(self.paths.context, days=days, stats=st))
        out.sort(key=lambda e: e["id"])
        self.last_read = st
        return out

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        if self.writer is not None:
            return self.writer.recent(limit)
        if limit <= 0:
            return []
        files = log.select_days(self.paths.context, days=self.settings.warm_load_days)
        evs = log.read_tail(files, limit)
        evs.sort(key=lambda e: e["id"])
        return evs[-limit:]

    def folds(self, days: int | None = None) -> dict[str, TurnFold]:
        """Every turn of the last `days` days (default `retain_days`), from the store index."""
        self._flush()
        folds = self.index.folds(self.settings.retain_days if days is None else days)
        self.last_read = self.index.last
        return folds

    def episodes(self, limit: int | None = None) -> list[dict[str, Any]]:
        if self.writer is not None:
            eps = ep.build(self.writer.recent())
        else:
            eps = ep.from_folds(self.folds(self.settings.warm_load_days).values())
        out = [e.to_dict() for e in eps]
        return out[-limit:] if limit is not None and limit > 0 else out

    def turns(self, limit: int | None = None, before: str | None = None) -> list[dict[str, Any]]:
        if limit is not None:
            # Only the newest day files the page needs are read (`TurnIndex.newest`).
            self._flush()
            page = self.index.newest(limit, before, self.settings.retain_days)
            self.last_read = self.index.last
        else:
            page = sorted(self.folds().values(), key=lambda f: f.first_id)
            if before is not None:
                at = next((i for i, f in enumerate(page) if f.turn == before), None)
                if at is not None:
                    page = page[:at]
        return [ep.from_fold(f).to_dict() for f in page]

    def turn(self, turn_id: str) -> dict[str, Any] | None:
        self._flush()
        fold = self.index.fold_of(turn_id, self.settings.retain_days)
        keys = {k: {"value": v.value, "prov": v.prov} for k, v in self.entities.keys_for(turn_id).items()}
        evs: list[dict[str, Any]] = []
        if fold is not None:
            for k, (_, value) in fold.keys.items():
                keys[k] = {"value": value, "prov": "RUNTIME"}
            for day, spans in sorted(fold.spans.items()):
                evs += [
                    e
                    for e in read_spans(log.day_path(self.paths.context, day), spans)
                    if e.get("turn_id") == turn_id
                ]
            evs.sort(key=lambda e: e["id"])
        if fold is None and not keys:
            return None
        return {
            "turn_id": turn_id,
            "episode": ep.from_fold(fold).to_dict() if fold is not None else None,
            "keys": keys,
            "events": evs,
        }

    def egress(
        self, days: int | None = None, session: str | None = None, limit: int | None = EGRESS_LIMIT
    ) -> dict[str, Any]:
        from glider_cli.store.eventlog.events import DELEGATE_RUN
        from glider_cli.store.views import egress

        window = self.settings.retain_days if days is None else days
        folds = self.folds(window)
        picked = [
            f
            for f in folds.values()
            if f.egress and (session is None or (f.session is not None and f.session[1] == session))
        ]
        # Turn by turn: only one turn's events are held at a time (the audit keeps `limit` calls).
        audit = egress.Audit(session, limit)
        for fold in picked:
            evs: list[dict[str, Any]] = []
            for day, pairs in sorted(fold.spans.items()):
                path = log.day_path(self.paths.context, day)
                evs += [e for e in read_spans(path, pairs) if e.get("turn_id") == fold.turn]
            audit.add(fold.turn, evs)
        if session is None:  # `glider delegate` run by hand: a delegate run of no turn (and no session)
            for path in log.select_days(self.paths.context, days=window):
                audit.add(None, [e for e in log.read_typed(path, DELEGATE_RUN) if not e.get("turn_id")])
        return {"days": window, "session": session, "limit": limit, **audit.result().to_dict()}

    def usage(
        self, days: int | None = None, by: str = "day", prices: tuple[Price, ...] = ()
    ) -> dict[str, Any]:
        from glider_cli.config.pricing import PriceTable
        from glider_cli.store.views import usage, usage_read

        self._flush()
        window = self.settings.retain_days if days is None else days
        stats = log.ReadStats()
        found = usage_read.digests(self.paths.context, window, stats)
        self.last_read = stats
        return usage.report(found, PriceTable(prices), by=by, days=window)

    # -- graph and query -----------------------------------------------------------------------------

    def _signature(self) -> tuple[Any, ...]:
        try:
            st = self.entities.path.stat()
            return (st.st_size, st.st_mtime_ns, st.st_ino)
        except FileNotFoundError:
            return (None,)

    def graph(self) -> Graph:
        return self._cached("*")[0]

    def _base(self) -> Graph:
        """The entity store's graph, loaded again only when the file changed (callers hold `_lock`)."""
        sig = self._signature()
        hit = self._cache.get(None)
        if hit is not None and hit[0] == sig:
            return hit[1]
        g = self.entities.load()
        self._cache[None] = (sig, g, None)
        return g

    def _cached(self, scope: str | None) -> tuple[Graph, SearchIndex | None]:
        """The graph a query of this RUNTIME scope needs (`store.queries.query.runtime_scope`), cached while
        neither the entity store nor the turns change."""
        from glider_cli.store.entities.runtime_layer import add_folds

        if scope is None:
            with self._lock:
                self._base()
                base = self._cache[None]
                return base[1], base[2]
        self._flush()
        folds = list(self.folds().values()) if scope == "*" else []
        one = self.index.fold_of(scope, self.settings.retain_days) if scope != "*" else None
        with self._lock:
            sig = (self._signature(), self.index.generation, scope)
            hit = self._cache.get(scope)
            if hit is not None and hit[0] == sig and scope == "*":
                return hit[1], hit[2]
            g = self._base().copy()
            add_folds(g, sorted(folds, key=lambda f: f.first_id) if one is None else [one])
            if scope == "*":
                self._cache[scope] = (sig, g, None)
            return g, None

    def query(self, text: str) -> QueryAnswer:
        from glider_cli.store.queries.query import run, runtime_scope
        from glider_cli.store.queries.query_parse import parse
        from glider_cli.store.queries.search import SearchIndex

        scope = runtime_scope(parse(text))
        g, index = self._cached(scope)
        if index is None or index.version != g.version:
            index = SearchIndex(g)
            with self._lock:
                hit = self._cache.get(scope)
                if hit is not None and hit[1] is g:
                    self._cache[scope] = (hit[0], g, index)
        return run(g, text, index)

    # -- indexing ------------------------------------------------------------------------------------

    def index_tree(
        self, root: Path, *, turn_id: str | None = None, progress: Progress | None = None
    ) -> TreeIndexResult:
        from glider_cli.store.entities.index_tree import index_tree

        with self._lock:
            self._cache.clear()
            result = index_tree(self.entities, root, turn_id=turn_id, progress=progress)
            self.entities.compact()
            return result

    def index_symbols(self, root: Path, *, progress: Progress | None = None) -> SymbolIndexResult:
        from glider_cli.store.entities.index_symbols import index_symbols

        with self._lock:
            self._cache.clear()
            result = index_symbols(self.entities, root, progress=progress)
            self.entities.compact()
            return result

    # -- export and prune ------------------------------------------------------------------------------

    def export(self) -> Iterator[bytes]:
        self._flush()
        st = log.ReadStats()
        self.last_read = st
        for path in log.select_days(self.paths.context):
            yield from _export_file(path, st)
        try:
            raw = self.entities.path.read_bytes()
        except FileNotFoundError:
            return
        lines = raw.split(b"\n")
        lines.pop()  # the part after the last newline is empty or a torn record
        yield b"".join(line + b"\n" for line in lines if line.strip())

    def prune_plan(self, days: int | None = None) -> prune.PrunePlan:
        return prune.plan(self.paths.context, days if days is not None else self.settings.retain_days)

    def prune_apply(self, plan: prune.PrunePlan) -> prune.PruneResult:
        result = prune.apply(plan)
        with self._lock:
            self._cache.clear()
        return result

    def retain(self) -> dict[str, Any]:
        """Prune to `retain_days` now; what an `EventsPruned` event records of it."""
        plan = self.prune_plan()
        result = self.prune_apply(plan)
        gone = set(result.deleted)
        return {
            "retain_days": plan.retain_days,
            "cutoff": plan.cutoff,
            "deleted": [i.day for i in plan.delete if i.path in gone],
            "bytes_freed": sum(i.bytes for i in plan.delete if i.path in gone),
        }


def _export_file(path: Path, st: log.ReadStats) -> Iterator[bytes]:
    """The readable events of one day file as JSONL: a current line as written, an older version's
    upgraded; torn and unreadable lines are counted into `st` and left out. Read a piece at a time."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        yield from _export_lines(fh, st)


def _export_lines(fh: BinaryIO, st: log.ReadStats) -> Iterator[bytes]:
    rest = b""
    while block := fh.read(_CHUNK):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        out = []
        for line in lines:
            if line:
                evs = log.parse_lines([line], st)
                if evs:
                    out.append(line + b"\n" if line.startswith(_CURRENT) else orjson.dumps(evs[0]) + b"\n")
        if out:
            yield b"".join(out)
    if rest.strip():
        st.torn_line()
