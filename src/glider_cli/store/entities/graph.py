"""The entity and edge store: `$GLIDER_HOME/context/entities.jsonl`, and the graph view over it.

File contract (append-only JSONL, schema version 1; later records win):

    {"v": 1, "rec": "entity", "id", "kind", "name", "path", "prov", "turn", "data"}
    {"v": 1, "rec": "edge",   "src", "dst", "type", "prov"}
    {"v": 1, "rec": "drop",   "id"}                 the entity and every edge touching it are gone
    {"v": 1, "rec": "unlink", "src", "type"}        every edge of `type` leaving `src` is gone
    {"v": 1, "rec": "key",    "turn", "key", "value", "prov"}   one turn-index key

- kinds: file, dir, symbol, note, turn; provenance: EXTRACTED (read from the source), INFERRED
  (resolved by a heuristic, e.g. an import), RUNTIME (seen by `glider serve`).
- Entity ids are `file:<abs path>`, `dir:<abs path>`, `sym:<abs path>#<qualified name>`,
  `note:<event id>`, `turn:<turn id>`.
- Turn-index keys: clone_path, goal, plan, file-tree.
- The reader tolerates a torn last line exactly like the event log.
- `compact()` rewrites the file with only live records once most lines are dead (drops, replaced
  entities); appends and compaction hold `entities.lock`, readers never wait.

`Graph` is the in-memory view: entities, directed typed edges (traversed undirected by queries) and
the turn index. `store.entities.runtime_layer` adds what the event log says (turn and note entities, `touched`
edges, goal/plan/clone_path keys), so the graph is rebuilt from files alone.
`EntityStore.keys_for(turn)` reads one turn's key records without loading the graph.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from glider_cli.errors import StoreError
from glider_cli.paths import Paths
from glider_cli.store import gcpause
from glider_cli.store.eventlog import log
from glider_cli.values import Frozen

PROVENANCES: tuple[str, ...] = ("EXTRACTED", "INFERRED", "RUNTIME")
KINDS: tuple[str, ...] = ("file", "dir", "symbol", "note", "turn")
TURN_KEYS: tuple[str, ...] = ("clone_path", "goal", "plan", "file-tree")
ENTITIES_FILE = "entities.jsonl"
LOCK_FILE = "entities.lock"


class Entity(Frozen):
    id: str
    kind: str
    name: str
    path: str | None
    prov: str
    turn: str | None
    data: Mapping[str, Any]

    def __init__(
        self,
        id: str,
        kind: str,
        name: str,
        path: str | None,
        prov: str,
        turn: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.id = id
        s.kind = kind
        s.name = name
        s.path = path
        s.prov = prov
        s.turn = turn
        s.data = {} if data is None else data

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "prov": self.prov,
            "turn": self.turn,
            "data": dict(self.data),
        }

    def record(self) -> dict[str, Any]:
        return {"v": 1, "rec": "entity", **self.to_dict()}


class Edge(Frozen):
    src: str
    dst: str
    type: str
    prov: str

    def __init__(self, src: str, dst: str, type: str, prov: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.src = src
        s.dst = dst
        s.type = type
        s.prov = prov

    def to_dict(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "type": self.type, "prov": self.prov}

    def record(self) -> dict[str, Any]:
        return {"v": 1, "rec": "edge", **self.to_dict()}


class KeyValue(Frozen):
    value: Any
    prov: str

    def __init__(self, value: Any, prov: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.value = value
        s.prov = prov


def drop_record(entity_id: str) -> dict[str, Any]:
    return {"v": 1, "rec": "drop", "id": entity_id}


def unlink_record(src: str, type_: str) -> dict[str, Any]:
    return {"v": 1, "rec": "unlink", "src": src, "type": type_}


def key_record(turn: str, key: str, value: Any, prov: str) -> dict[str, Any]:
    return {"v": 1, "rec": "key", "turn": turn, "key": key, "value": value, "prov": prov}


class Graph:
    """Entities, typed directed edges and the turn index (see the module contract)."""

    def __init__(
        self,
        *,
        entities: dict[str, Entity] | None = None,
        out_edges: dict[str, dict[tuple[str, str], str]] | None = None,
        in_edges: dict[str, dict[tuple[str, str], str]] | None = None,
        keys: dict[str, dict[str, KeyValue]] | None = None,
        turns: dict[str, dict[str, Any]] | None = None,
        version: int = 0,
    ) -> None:
        """An empty graph, or one holding these contents (taken as they are, not copied)."""
        self.entities: dict[str, Entity] = {} if entities is None else entities
        self._out: dict[str, dict[tuple[str, str], str]] = {} if out_edges is None else out_edges
        self._in: dict[str, dict[tuple[str, str], str]] = {} if in_edges is None else in_edges
        self.keys: dict[str, dict[str, KeyValue]] = {} if keys is None else keys
        self.turns: dict[str, dict[str, Any]] = {} if turns is None else turns
        self.version = version
        # Views derived from the graph, each kept with the version it was computed at (`store.entities.hubs`).
        self.derived: dict[str, tuple[int, Any]] = {}

    def copy(self) -> Graph:
        """A graph with the same contents that can be changed without changing this one."""
        return Graph(
            entities=dict(self.entities),
            out_edges={k: dict(v) for k, v in self._out.items()},
            in_edges={k: dict(v) for k, v in self._in.items()},
            keys={k: dict(v) for k, v in self.keys.items()},
            turns={k: dict(v) for k, v in self.turns.items()},
            version=self.version,
        )

    # -- mutation --------------------------------------------------------------------------------

    def add_entity(self, e: Entity) -> None:
        self.entities[e.id] = e
        self.version += 1

    def add_edge(self, e: Edge) -> None:
        self._out.setdefault(e.src, {})[(e.dst, e.type)] = e.prov
        self._in.setdefault(e.dst, {})[(e.src, e.type)] = e.prov
        self.version += 1

    def drop(self, entity_id: str) -> None:
        self.entities.pop(entity_id, None)
        for dst, t in self._out.pop(entity_id, {}):
            self._in.get(dst, {}).pop((entity_id, t), None)
        for src, t in self._in.pop(entity_id, {}):
            self._out.get(src, {}).pop((entity_id, t), None)
        self.version += 1

    def unlink(self, src: str, type_: str) -> None:
        out = self._out.get(src)
        if not out:
            return
        for dst, t in [k for k in out if k[1] == type_]:
            del out[(dst, t)]
            self._in.get(dst, {}).pop((src, t), None)
        self.version += 1

    def set_key(self, turn: str, key: str, value: Any, prov: str) -> None:
        self.keys.setdefault(turn, {})[key] = KeyValue(value, prov)
        self.turns.setdefault(turn, {})

    def apply(self, rec: Mapping[str, Any]) -> bool:
        """Apply one file record; False when it is not a record this version understands."""
        kind = rec.get("rec")
        try:
            if kind == "entity":
                self.add_entity(
                    Entity(
                        rec["id"],
                        rec["kind"],
                        rec["name"],
                        rec.get("path"),
                        rec["prov"],
                        rec.get("turn"),
                        rec.get("data") or {},
                    )
                )
                if rec.get("turn"):
                    self.turns.setdefault(rec["turn"], {})
            elif kind == "edge":
                self.add_edge(Edge(rec["src"], rec["dst"], rec["type"], rec["prov"]))
            elif kind == "drop":
                self.drop(rec["id"])
            elif kind == "unlink":
                self.unlink(rec["src"], rec["type"])
            elif kind == "key":
                self.set_key(rec["turn"], rec["key"], rec.get("value"), rec.get("prov", "RUNTIME"))
            else:
                return False
        except (KeyError, TypeError):
            return False
        return True

    # -- reading ---------------------------------------------------------------------------------

    def edges(self) -> Iterator[Edge]:
        for src, out in self._out.items():
            for (dst, t), prov in out.items():
                yield Edge(src, dst, t, prov)

    def neighbours(self, entity_id: str) -> list[tuple[str, str, str, str]]:
        """(other id, edge type, provenance, "out"|"in") for every edge touching `entity_id`."""
        res = [(d, t, p, "out") for (d, t), p in self._out.get(entity_id, {}).items()]
        res += [(s, t, p, "in") for (s, t), p in self._in.get(entity_id, {}).items()]
        return res

    def adjacent(self, entity_id: str) -> set[str]:
        adj = {d for d, _ in self._out.get(entity_id, {})}
        adj.update(s for s, _ in self._in.get(entity_id, {}))
        adj.discard(entity_id)
        return adj

    def degree(self, entity_id: str) -> int:
        return len(self.adjacent(entity_id))

    def out_edges(self, entity_id: str, type_: str | None = None) -> list[str]:
        return [d for (d, t) in self._out.get(entity_id, {}) if type_ is None or t == type_]

    def key(self, turn: str, key: str) -> KeyValue | None:
        return self.keys.get(turn, {}).get(key)

    def turn_roots(self, turn: str) -> list[str]:
        """Directories a turn is about: its clone_path and its file-tree root."""
        roots: list[str] = []
        cp = self.key(turn, "clone_path")
        if cp is not None and isinstance(cp.value, str) and cp.value:
            roots.append(cp.value.rstrip("/") or "/")
        ft = self.key(turn, "file-tree")
        if ft is not None and isinstance(ft.value, dict) and isinstance(ft.value.get("root"), str):
            roots.append(ft.value["root"].rstrip("/") or "/")
        return roots


class EntityStore:
    """Reads and appends `entities.jsonl` (see the module contract)."""

    def __init__(self, paths: Paths) -> None:
        self.dir = paths.context
        self.path = paths.context / ENTITIES_FILE

    def load(self, stats: log.ReadStats | None = None) -> Graph:
        st = stats if stats is not None else log.ReadStats()
        g = Graph()
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return g
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from exc
        st.file_read()
        lines = raw.split(b"\n")
        if lines.pop().strip():
            st.torn_line()
        with gcpause.paused():
            self._apply_lines(g, lines, st)
        return g

    @staticmethod
    def _apply_lines(g: Graph, lines: list[bytes], st: log.ReadStats) -> None:
        for line in lines:
            if not line:
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                if line.startswith(b'{"v":') or b'{"v":'.startswith(line):
                    st.torn_line()  # a record cut short, sealed by the next append (log.open_append)
                else:
                    st.corrupt_line()
                continue
            if not isinstance(rec, dict) or rec.get("v") != 1 or not g.apply(rec):
                st.corrupt_line()
        st.parsed(len(lines) - lines.count(b""), 0)

    def keys_for(self, turn: str) -> dict[str, KeyValue]:
        """The turn-index keys the file holds for `turn` (later records win), found by the bytes of
        their records (`key_record`'s key order) instead of by loading the whole graph."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from exc
        needle = b'"rec":"key","turn":' + orjson.dumps(turn) + b","
        out: dict[str, KeyValue] = {}
        at = raw.find(needle)
        while at >= 0:
            start = raw.rfind(b"\n", 0, at) + 1
            end = raw.find(b"\n", at)
            if end < 0:
                break  # a torn last record
            try:
                rec = orjson.loads(raw[start:end])
            except orjson.JSONDecodeError:
                rec = None
            if isinstance(rec, dict) and rec.get("rec") == "key" and rec.get("turn") == turn:
                out[str(rec.get("key"))] = KeyValue(rec.get("value"), rec.get("prov", "RUNTIME"))
            at = raw.find(needle, end)
        return out

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Appends and compaction exclude each other (a lock file beside the store); reads never wait."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def append(self, records: Iterable[Mapping[str, Any]]) -> int:
        blob = b"".join(orjson.dumps(r, default=str) + b"\n" for r in records)
        if not blob:
            return 0
        try:
            with self._locked():
                log.append_bytes(self.path, blob)
        except OSError as exc:
            raise StoreError(f"cannot append to {self.path}: {exc}") from exc
        return blob.count(b"\n")

    def compact(self, min_waste: float = 0.5) -> tuple[int, int]:
        """Rewrite the file with only its live records when at least `min_waste` of its lines are dead.

        Returns (lines before, lines after). The new file replaces the old one atomically
        (`os.replace` after fsync), so a reader sees one or the other and a crash loses nothing.
        """
        try:
            with self._locked():
                st = log.ReadStats()
                g = self.load(st)
                live = [e.record() for e in g.entities.values()]
                live += [e.record() for e in g.edges()]
                live += [key_record(t, k, v.value, v.prov) for t, kv in g.keys.items() for k, v in kv.items()]
                if st.lines == 0 or (st.lines - len(live)) / st.lines < min_waste:
                    return st.lines, st.lines
                tmp = self.path.with_name(ENTITIES_FILE + ".tmp")
                with open(tmp, "wb") as f:
                    f.write(b"".join(orjson.dumps(r, default=str) + b"\n" for r in live))
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
                return st.lines, len(live)
        except OSError as exc:
            raise StoreError(f"cannot compact {self.path}: {exc}") from exc
