"""The per-turn fold: what every turn view needs from a turn's events, one event at a time, mergeable.

An event becomes a *digest* (`store.index.digests`: the few values the views read), and the store
index (`store.index.turn_index`) keeps digests and folds so no view parses the event log again.

`TurnFold` folds digests in any order: each field keeps the id of the event that set it and keeps
the first or the last by id, exactly as `store.views.episodes` defines an episode (first ask, first
decision, last outcome, first mention of each file, ...); the strategy is the last decision's that
named one; the decision and outcome are the turn's main requests' (a title, utility call or summary
never stands for the turn: their lines are kept apart, `asides`, at most `MAX_ASIDES`, the first by
id, and `side_requests()` lists them, a decision and its outcome on one line), and the member calls
are counted (`members`: every StrategyMember but a judge's, of which
`cloud_members` were on the cloud side; `judge_calls`: a model judge's calls, counted apart). Two folds
of one turn merge (a turn that
spans two day files), so folding per day and merging equals folding everything at once. A fold
round-trips through `to_record()` / `from_record()` (one JSON list; the compacted index's line). A
record's fields are positional; those added later are at its end, and a shorter record (an older
index's) reads them as unset (the index's own version, `store.index.index_day.VERSION`, has the old files
rebuilt from the day files, so their folds gain what older digests did not keep).
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from glider_cli.store.eventlog import events as ev
from glider_cli.store.index.digests import (
    MAX_FILES,
    TURN_KEYS,
    Digest,
    changed_line,
    digest,
    digest_of,
    left_machine,
)

# Still importable from here (they were defined here before `store.index.digests`).
__all__ = ["Digest", "TurnFold", "changed_line", "digest", "digest_of", "fold_events", "left_machine"]

# Side requests a fold remembers (a turn is one title and one or two utility calls; a long agent run
# may have some dozens).
MAX_ASIDES = 40

# Which event set a field: (event id, value) (a list when read back from a record).
_Tagged = Sequence[Any]
# The positional fields of a record, after the turn id and the event count.
_TAGGED = ("first", "last", "asked", "text", "routed", "outcome", "fallback", "session", "base")


def _first(cur: _Tagged | None, id_: str, value: Any) -> _Tagged:
    return (id_, value) if cur is None or id_ < cur[0] else cur


def _last(cur: _Tagged | None, id_: str, value: Any) -> _Tagged:
    return (id_, value) if cur is None or id_ > cur[0] else cur


class TurnFold:
    """One turn's fold (state, not a value: `add` and `merge` change it). See the module contract."""

    __slots__ = (
        "_packed",
        "_spans",
        "asides",
        "asked",
        "base",
        "cloud_members",
        "egress",
        "fallback",
        "files",
        "first",
        "judge_calls",
        "keys",
        "last",
        "members",
        "n",
        "notes",
        "opened",
        "outcome",
        "routed",
        "session",
        "strategy",
        "text",
        "turn",
    )

    def __init__(self, turn: str) -> None:
        self.turn = turn
        self.first: _Tagged | None = None  # (id, ts) of the first event
        self.last: _Tagged | None = None
        self.n = 0
        self.opened = False  # a TurnOpened is among the events: the turn starts here
        self.asked: _Tagged | None = None
        self.text: _Tagged | None = None
        self.routed: _Tagged | None = None  # value: [line, side, rule]
        self.outcome: _Tagged | None = None
        self.fallback: _Tagged | None = None
        self.session: _Tagged | None = None
        self.base: _Tagged | None = None
        self.keys: dict[str, _Tagged] = {}
        self.files: dict[str, str] = {}  # path -> id of its first mention
        self.notes: dict[str, str] = {}  # note event id -> text
        self.asides: dict[str, list[str]] = {}  # a side request's event id -> [kind, "r" | "o", line]
        self.strategy: _Tagged | None = None
        self.members = 0
        self.cloud_members = 0
        self.judge_calls = 0
        self.egress = False  # a request of the turn left the machine (store.views.egress)
        # day -> offset, length, offset, length, ... of the turn's lines in that day file; read from a
        # record, kept packed (base64 of the int64 array) until asked for: most views never need it.
        self._spans: dict[str, array[int]] = {}
        self._packed: dict[str, str] | None = None

    @property
    def spans(self) -> dict[str, array[int]]:
        if self._packed is not None:
            for day, b64 in self._packed.items():
                sp = array("q")
                sp.frombytes(base64.b64decode(b64))
                self._spans.setdefault(day, array("q")).extend(sp)
            self._packed = None
        return self._spans

    def add(self, dg: Digest, day: str | None = None) -> None:
        off, length, id_, ts, t, _turn, x = dg
        self.n += 1
        if t == ev.TURN_OPENED:
            self.opened = True
        self.first = _first(self.first, id_, ts)
        self.last = _last(self.last, id_, ts)
        if day is not None and off >= 0:
            spans = self.spans
            sp = spans.get(day)
            if sp is None:
                sp = spans[day] = array("q")
            sp.append(off)
            sp.append(length)
        if not x:
            return
        if "asked" in x:
            self.asked = _first(self.asked, id_, x["asked"])
        if "text" in x:
            self.text = _last(self.text, id_, x["text"])
        if "routed" in x:
            # The decision that opened the turn: its continuations follow it (`sticky`, tool results).
            self.routed = _first(self.routed, id_, [x["routed"], x.get("side"), x.get("rule")])
        if "outcome" in x:
            self.outcome = _last(self.outcome, id_, x["outcome"])
        if "fallback" in x:
            self.fallback = _last(self.fallback, id_, x["fallback"])
        if "session" in x:
            self.session = _last(self.session, id_, x["session"])
        if "note" in x:
            self.notes[id_] = x["note"]
        if "aside" in x:
            self._aside(id_, x["aside"])
        if "strategy" in x:
            self.strategy = _last(self.strategy, id_, x["strategy"])
        if "member" in x:
            if x.get("judge"):
                self.judge_calls += 1
            else:
                self.members += 1
                if x["member"] == "cloud":
                    self.cloud_members += 1
        if "egress" in x:
            self.egress = True
        for k in TURN_KEYS:
            if k in x:
                self.keys[k] = _last(self.keys.get(k), id_, x[k])
        if "files" in x:
            self._files(x["files"], id_)
            if "workspace" in x:
                self.base = _last(self.base, id_, x["workspace"])

    def _files(self, paths: Iterable[str], id_: str) -> None:
        files = self.files
        for p in paths:
            seen = files.get(p)
            if seen is None or id_ < seen:
                files[p] = id_
        if len(files) > MAX_FILES:
            # Keep the first mentions: an episode lists the earliest files, whatever order folds came in.
            keep = sorted(files.items(), key=lambda kv: (kv[1], kv[0]))[:MAX_FILES]
            self.files = dict(keep)

    def _aside(self, id_: str, value: list[str]) -> None:
        asides = self.asides
        asides[id_] = value
        if len(asides) > MAX_ASIDES:
            del asides[max(asides)]

    def merge(self, o: TurnFold) -> None:
        self.n += o.n
        self.opened = self.opened or o.opened
        for name in _TAGGED:
            theirs = getattr(o, name)
            if theirs is not None:
                pick = _first if name in ("first", "asked", "routed") else _last
                setattr(self, name, pick(getattr(self, name), theirs[0], theirs[1]))
        for k, v in o.keys.items():
            self.keys[k] = _last(self.keys.get(k), v[0], v[1])
        for p, id_ in o.files.items():
            self._files((p,), id_)
        self.notes.update(o.notes)
        for id_, value in o.asides.items():
            self._aside(id_, value)
        if o.strategy is not None:
            self.strategy = _last(self.strategy, o.strategy[0], o.strategy[1])
        self.members += o.members
        self.cloud_members += o.cloud_members
        self.judge_calls += o.judge_calls
        self.egress = self.egress or o.egress
        mine = self.spans
        for day, spans in o.spans.items():
            mine.setdefault(day, array("q")).extend(spans)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def first_id(self) -> str:
        return self.first[0] if self.first else ""

    def key(self, name: str) -> str | None:
        kv = self.keys.get(name)
        return kv[1] if kv else None

    def side_requests(self) -> list[dict[str, str]]:
        """The turn's side requests in order, each {kind, routed, outcome} (a line empty when it is not
        in the log: a request still open, an outcome whose decision was cut away)."""
        out: list[list[str]] = []  # [kind, decision line, outcome line]
        for id_ in sorted(self.asides):
            kind, what, line = self.asides[id_]
            if what == "o":
                open_ = next((r for r in reversed(out) if r[0] == kind and not r[2]), None)
                if open_ is not None:
                    open_[2] = line
                    continue
                out.append([kind, "", line])
            else:
                out.append([kind, line, ""])
        return [{"kind": k, "routed": r, "outcome": o} for k, r, o in out]

    def file_list(self, limit: int | None = None) -> list[str]:
        """Files in first-mention order (the first `limit`)."""
        ranked = sorted(self.files.items(), key=lambda kv: (kv[1], kv[0]))
        return [p for p, _ in (ranked if limit is None else ranked[:limit])]

    # -- the compacted index's record --------------------------------------------------------------

    def to_record(self) -> list[Any]:
        """[turn, n, first, last, asked, text, routed, outcome, fallback, session, base, keys, files,
        notes, spans, opened, strategy, members, cloud_members, judge_calls, egress, asides]: tagged
        fields as [id, value] or null, spans packed per day."""
        spans = {d: base64.b64encode(s.tobytes()).decode("ascii") for d, s in self.spans.items()}
        rec: list[Any] = [self.turn, self.n]
        rec += [None if (v := getattr(self, name)) is None else list(v) for name in _TAGGED]
        rec += [self.keys or None, self.files or None, self.notes or None, spans or None, self.opened]
        strategy = None if self.strategy is None else list(self.strategy)
        rec += [strategy, self.members, self.cloud_members, self.judge_calls, self.egress]
        rec.append(self.asides or None)
        return rec

    @classmethod
    def from_record(cls, rec: Sequence[Any]) -> TurnFold:
        """The fold a `to_record` record describes."""
        fold = cls(str(rec[0]))
        fold._restore(rec)
        return fold

    def _restore(self, rec: Sequence[Any]) -> None:
        """Take the record's fields (this fold is new: nothing added yet)."""
        self.n = int(rec[1])
        # One string per event id, and one per path, side, rule or session shared by every fold:
        # a long-lived index holds tens of thousands of folds.
        ids: dict[str, str] = {}
        tagged = [None if v is None else (ids.setdefault(v[0], v[0]), v[1]) for v in rec[2:11]]
        (
            self.first,
            self.last,
            self.asked,
            self.text,
            self.routed,
            self.outcome,
            self.fallback,
            self.session,
            self.base,
        ) = tagged
        if self.routed is not None:
            line, side, rule = self.routed[1]
            self.routed = (self.routed[0], (_intern(line), _intern(side), _intern(rule)))
        if self.session is not None:
            self.session = (self.session[0], _intern(self.session[1]))
        keys, files, notes, packed, self.opened = rec[11:16]
        if keys:
            self.keys = {
                k: (ids.setdefault(v[0], v[0]), _intern(v[1]) if k == "clone_path" else v[1])
                for k, v in keys.items()
            }
        if files:
            self.files = {_intern(p): ids.setdefault(i, i) for p, i in files.items()}
        if notes:
            self.notes = notes
        if packed:
            self._packed = packed
        if len(rec) > 16:  # fields added after the first index version (see the module contract)
            strategy, self.members, self.cloud_members, self.judge_calls, self.egress = rec[16:21]
            if strategy is not None:
                self.strategy = (ids.setdefault(strategy[0], strategy[0]), _intern(strategy[1]))
        if len(rec) > 21 and rec[21]:
            self.asides = {ids.setdefault(i, i): list(v) for i, v in rec[21].items()}


def _intern(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def fold_events(events: Iterable[Mapping[str, Any]]) -> dict[str, TurnFold]:
    """Every turn's fold over `events` (events without a turn id are left out)."""
    folds: dict[str, TurnFold] = {}
    for e in events:
        turn = e.get("turn_id")
        if not isinstance(turn, str) or not turn:
            continue
        f = folds.get(turn)
        if f is None:
            f = folds[turn] = TurnFold(turn)
        f.add(digest(e))
    return folds
