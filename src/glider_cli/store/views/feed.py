"""`Feed`: the requests of the last days, folded from the event log as it grows (the dashboard's data).

Contract:
- `Feed(context_dir, days=2, max_requests=20_000)`. `refresh()` reads only what was appended to the
  day files of the last `days` UTC days since the previous call: a file is read from the byte where
  the last read stopped, a last line without its newline waits for the rest, a file that shrank or was
  replaced (prune, a new inode) is read again from its start. Nothing older than the window is read, so
  the cost of a call is the new lines, whatever the size of the log.
- Every `RouteDecided` becomes one request record (`Request.to_dict()`): id, ts, turn id, session id,
  the request kind the turn index gave it (`family.kind`: new_turn, tool_result, title, summary,
  subagent, retry, continuation), side, rule, priority, backend, model, strategy, delegate, the sticky
  state (bound, reason, forced), the estimated tokens and `reason`: why, the reason of the trace line
  that decided (the rule's own matched line, else the last line that matched). Its outcome is the first later
  `FulfilledLocal` / `OriginPassthrough` of the same turn that no earlier request of that turn took
  (first in, first out: the log has no request id), which fills status, ms, the backend that answered
  and its model (`answered_by`, `answered_model`: the model the backend reported, where the decision
  may name none), `fallback_from`, `escalated` (why a local answer was replaced, `proxy.escalate`),
  token counts, `complete` and `outcome` (None when the reply ended
  well, else `cut`, `failed`, `abandoned` or `refused`: a request the capability gate refused, its
  `RouteDecided` carrying `refused`); an `UpstreamFailed` or `FallbackUsed` in between is counted on
  that same open request (`failures`, `failed_backends`, `fallbacks`, `error`).
  `TurnOpened` gives the turn's `ask` (shown with its new_turn request) and its client.
- At most `max_requests` records are kept, newest last (`dropped` counts the older ones let go); at
  most `MAX_OPEN_TURNS` turns wait for an outcome (the least recently decided are dropped first).
  `since` is the id of the oldest record kept.
- `requests(limit, before=, session=, turn=)`: newest first, a page of at most `limit` records whose
  id is below `before`, and the cursor of the next page (None on the last). Views over the window
  (`store.views.feed_views`) read `records()`.
Thread-safe: one lock around reading and folding.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from glider_cli.store.eventlog import events as ev
from glider_cli.store.eventlog import log

MAX_OPEN_TURNS = 4096
_PIECE = 1 << 20  # bytes read at a time
ASK_CHARS = 200
_OUTCOMES = frozenset({ev.FULFILLED_LOCAL, ev.ORIGIN_PASSTHROUGH})


def id_ms(event_id: str) -> int:
    """The Unix milliseconds an event id starts with (0 when it is not one of ours)."""
    try:
        return int(event_id[:12], 16)
    except ValueError:
        return 0


@dataclass(slots=True)
class Request:
    """One routed request and, once it arrives, its outcome (see the module contract): state, not a
    value (`settle` and `trouble` fill in what the later events say)."""

    id: str
    ts: str
    turn_id: str | None
    session_id: str | None
    kind: str
    link: str | None
    side: str
    rule: str
    priority: int | None
    backend: str | None
    model: str | None
    strategy: str | None
    delegate: str | None
    sticky: bool
    sticky_reason: str | None
    forced: bool
    estimated_tokens: int | None
    reason: str | None = None
    ask: str | None = None
    client: str | None = None
    status: int | None = None
    ms: float | None = None
    answered_by: str | None = None
    answered_model: str | None = None
    fallback_from: str | None = None
    escalated: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    complete: bool | None = None
    failures: int = 0
    failed_backends: list[str] = field(default_factory=list)
    fallbacks: int = 0
    error: str | None = None
    done_ts: str | None = None
    outcome: str | None = None

    @property
    def ms_epoch(self) -> int:
        return id_ms(self.id)

    @property
    def answered(self) -> bool:
        return self.status is not None

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in _FIELDS}
        d["failed_backends"] = list(self.failed_backends)
        return d

    def settle(self, e: Mapping[str, Any]) -> None:
        """Take the outcome event `e` (a `FulfilledLocal` / `OriginPassthrough`) says."""
        d = e.get("data") or {}
        self.status = _int(d.get("status"))
        if self.status is None:
            self.status = 0
        ms = d.get("ms")
        self.ms = float(ms) if isinstance(ms, int | float) and not isinstance(ms, bool) else None
        self.answered_by = _str(d.get("backend"))
        self.answered_model = _shared(d.get("model"))
        self.fallback_from = _str(d.get("fallback_from"))
        self.escalated = _str(d.get("escalated"))
        self.input_tokens = _int(d.get("input_tokens"))
        self.output_tokens = _int(d.get("output_tokens"))
        self.complete = d.get("complete") if isinstance(d.get("complete"), bool) else None
        self.done_ts = _str(e.get("ts"))
        self.outcome = _str(d.get("outcome"))
        if self.outcome and not self.error:
            self.error = (_str(d.get("error")) or "")[:200] or None

    def trouble(self, e: Mapping[str, Any]) -> None:
        """Count the `UpstreamFailed` or `FallbackUsed` event `e` on this request."""
        if e.get("type") == ev.FALLBACK_USED:
            self.fallbacks += 1
            return
        d = e.get("data") or {}
        self.failures += 1
        failed = _str(d.get("backend"))
        if failed and len(self.failed_backends) < 8:
            self.failed_backends.append(failed)
        err = _str(d.get("error"))
        if err:
            self.error = err.splitlines()[0][:200] if err.strip() else None


_FIELDS = tuple(f.name for f in fields(Request))


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _shared(v: Any) -> str | None:
    """A value many records repeat (a kind, a rule, a backend, a session, a reason): one copy of it."""
    return sys.intern(v) if isinstance(v, str) else None


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def request_of(event: Mapping[str, Any], opened: tuple[str | None, str | None] | None = None) -> Request:
    """A `RouteDecided` event -> its request record (no outcome yet). `opened` is what its turn's
    `TurnOpened` said, (ask, client): the client is the request's, the ask only a new turn's."""
    d: Mapping[str, Any] = event.get("data") or {}
    fam = _dict(d.get("family"))
    kind = _shared(fam.get("kind")) or "unknown"
    ask, client = opened if opened is not None else (None, None)
    sticky = _dict(d.get("sticky"))
    summary = _dict(d.get("request"))
    rule = _str(d.get("rule")) or "?"
    return Request(
        id=str(event["id"]),
        ts=str(event["ts"]),
        turn_id=_str(event.get("turn_id")),
        session_id=_shared(fam.get("session_id")),
        kind=kind,
        link=_shared(fam.get("link")),
        side="local" if d.get("target") == "local" else "cloud",
        rule=_shared(rule) or rule,
        priority=_int(d.get("priority")),
        backend=_shared(d.get("backend")),
        model=_shared(d.get("model")),
        strategy=_shared(d.get("strategy")),
        delegate=_shared(d.get("delegate")),
        sticky=bool(sticky.get("bound")),
        sticky_reason=_shared(sticky.get("reason")) or None,
        forced=rule == "sticky",
        estimated_tokens=_int(summary.get("estimated_tokens")),
        reason=_shared(_str(d.get("refused")) or _why(d.get("trace"), rule)),
        ask=ask if kind == "new_turn" else None,
        client=client,
    )


def _why(trace: Any, rule: str) -> str | None:
    """The reason of the trace line that decided: the rule's own matched line, else the last match."""
    if not isinstance(trace, list):
        return None
    matched = [t for t in trace if isinstance(t, dict) and t.get("matched")]
    own = [t for t in matched if t.get("rule") == rule]
    lines = own or matched
    return _str(lines[-1].get("reason")) if lines else None


class _FileState:
    """Where the reading of one day file stands: its inode and the byte the next read starts at."""

    __slots__ = ("inode", "offset")

    def __init__(self, inode: int, offset: int) -> None:
        self.inode = inode
        self.offset = offset

    def advance(self, n: int) -> None:
        self.offset += n


class Feed:
    """See the module contract."""

    def __init__(self, context_dir: Path, *, days: int = 2, max_requests: int = 20_000) -> None:
        self.context_dir = context_dir
        self.days = max(days, 1)
        self._records: collections.deque[Request] = collections.deque(maxlen=max_requests)
        self._open: collections.OrderedDict[str | None, collections.deque[Request]] = (
            collections.OrderedDict()
        )
        self._turns: collections.OrderedDict[str, tuple[str | None, str | None]] = collections.OrderedDict()
        self._files: dict[Path, _FileState] = {}
        self.dropped = 0
        self._lock = threading.Lock()
        self.lines = 0

    # -- reading ---------------------------------------------------------------------------------

    def refresh(self) -> int:
        """Fold in the lines appended since the last call; returns how many events were read."""
        with self._lock:
            paths = log.select_days(self.context_dir, days=self.days)
            for gone in set(self._files) - set(paths):
                del self._files[gone]
            n = 0
            for path in paths:
                n += self._read_new(path)
            return n

    def fold(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Fold events (oldest first) into the records, as `refresh` does with what it reads."""
        with self._lock:
            return self._fold(events)

    def _read_new(self, path: Path) -> int:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self._files.pop(path, None)
            return 0
        try:
            st = os.fstat(fd)
            state = self._files.get(path)
            if state is None or state.inode != st.st_ino or st.st_size < state.offset:
                state = self._files[path] = _FileState(st.st_ino, 0)
            n, piece = 0, _PIECE
            # A piece at a time: a whole day file in memory at once would stay in the server's RSS.
            while state.offset < st.st_size:
                os.lseek(fd, state.offset, os.SEEK_SET)
                raw = os.read(fd, min(st.st_size - state.offset, piece))
                end = raw.rfind(b"\n") + 1
                if not end:
                    if len(raw) < piece:
                        break  # a last line without its newline waits for the rest
                    piece *= 2  # one line longer than a piece: read it whole
                    continue
                state.advance(end)
                piece = _PIECE
                n += self._fold(_parse(raw[:end].split(b"\n")))
            return n
        finally:
            os.close(fd)

    def _fold(self, events: Iterable[Mapping[str, Any]]) -> int:
        n = 0
        for e in events:
            n += 1
            t = e.get("type")
            if t == ev.ROUTE_DECIDED:
                self._decided(e)
            elif t in _OUTCOMES:
                self._outcome(e)
            elif t == ev.UPSTREAM_FAILED or t == ev.FALLBACK_USED:
                self._trouble(e)
            elif t == ev.TURN_OPENED:
                tid = e.get("turn_id")
                if isinstance(tid, str):
                    d = e.get("data") or {}
                    ask = _str(d.get("ask")) or _str(d.get("goal"))
                    self._turns[tid] = (ask[:ASK_CHARS] if ask else None, _str(d.get("client")))
                    while len(self._turns) > MAX_OPEN_TURNS:
                        self._turns.popitem(last=False)
        self.lines += n
        return n

    def _decided(self, e: Mapping[str, Any]) -> None:
        tid = e.get("turn_id")
        req = request_of(e, self._turns.get(tid) if isinstance(tid, str) and tid else None)
        if len(self._records) == self._records.maxlen:
            self.dropped += 1
        self._records.append(req)
        queue = self._open.get(req.turn_id)
        if queue is None:
            queue = self._open[req.turn_id] = collections.deque(maxlen=64)
        else:
            self._open.move_to_end(req.turn_id)
        queue.append(req)
        while len(self._open) > MAX_OPEN_TURNS:
            self._open.popitem(last=False)

    def _first_open(self, turn_id: Any) -> Request | None:
        queue = self._open.get(turn_id if isinstance(turn_id, str) else None)
        return queue[0] if queue else None

    def _outcome(self, e: Mapping[str, Any]) -> None:
        tid = e.get("turn_id")
        req = self._first_open(tid)
        if req is None:
            return
        queue = self._open[tid if isinstance(tid, str) else None]
        queue.popleft()
        if not queue:
            del self._open[tid if isinstance(tid, str) else None]
        req.settle(e)

    def _trouble(self, e: Mapping[str, Any]) -> None:
        req = self._first_open(e.get("turn_id"))
        if req is not None:
            req.trouble(e)

    # -- reading the records --------------------------------------------------------------------

    def records(self) -> list[Request]:
        """Every record kept, oldest first (a copy of the list; the records themselves are live)."""
        with self._lock:
            return list(self._records)

    @property
    def since(self) -> str | None:
        with self._lock:
            return self._records[0].id if self._records else None

    def requests(
        self,
        limit: int,
        *,
        before: str | None = None,
        session: str | None = None,
        turn: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A page of records, newest first, and the cursor of the next page (see the contract)."""
        out: list[dict[str, Any]] = []
        with self._lock:
            for req in reversed(self._records):
                if before is not None and req.id >= before:
                    continue
                if session is not None and req.session_id != session:
                    continue
                if turn is not None and req.turn_id != turn:
                    continue
                if len(out) == limit:
                    return out, out[-1]["id"]
                out.append(req.to_dict())
        return out, None


def _parse(lines: list[bytes]) -> Iterable[dict[str, Any]]:
    for line in lines:
        if not line:
            continue
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        e = ev.upgrade(raw)
        if e is not None:
            yield e
