"""The egress audit: every call of the event log whose request left the machine. Pure (events in,
values out); `store.context_store.ContextStore.egress` gives it the events, `glider context egress` and
`GET /api/context/egress` show it.

    audit(events, session=None, limit=None) -> Egress   # .calls (oldest first), .totals, .omitted
    Audit(session=None, limit=None)                      # the same, fed one turn at a time:
        .add(turn_id, events); .result() -> Egress       #   memory: one turn's events + `limit` calls

A call left the machine when its event is one of (`left_machine` says which events these are):
- `OriginPassthrough`: a cloud-side backend was sent the request (answered, failed with a status,
  or the client left while it worked);
- `StrategyMember` on the cloud side: one member call of a fan_out / pipeline / ensemble plan, or a
  model judge's call (a cloud member counts as cloud whether or not its answer was chosen, and
  whatever its outcome: for an `error` or `cancelled` one the log does not say whether the request
  got out before it ended, so it is listed);
- `UpstreamFailed` at a cloud backend (`side` cloud), before the first byte: the request was sent
  even though no answer came back;
- `DelegateRun`: the task went to another agent CLI, and with it to that CLI's vendor.
Two events of one call are one call: a `mid_stream` UpstreamFailed is the same call as the outcome
event that follows it (that call's `outcome` is then `failed mid-stream`, with the error); the outcome
event a request ends with when every attempt failed (`outcome: failed`, the status Glider answered
with) is the same call as the UpstreamFailed of its last attempt, listed once (`failed`); and the
chosen member's outcome event (the FulfilledLocal / OriginPassthrough after a `StrategyChosen` that
names a member, at that member's backend) is the same call as the member's `StrategyMember`.

`events` are every event of the turns to audit (any order: they are read per turn in id order; a
`RouteDecided` starts a request, whose rule, fallbacks and chosen member are those of the events up
to the next one), plus any turnless `DelegateRun` (`glider delegate` run by hand). Two requests of
one turn that overlap in time are read as if the later decision started a new request (a chosen
member's outcome may then be listed as a call of its own: the audit lists too much, never too little).

A call (`EgressCall.to_dict()`): id (of its event), ts, turn_id, session (the turn's TurnOpened
`session_id`), event (its type), backend (a delegate run: its vendor), model, why, outcome, status
(the HTTP status; a delegate run's exit code), input_tokens, output_tokens, ms, error, changed (a
delegate run's changes in the workspace, `2 files +3 −1`, from its event's `changes`). `why`:
- `fallback from X (reason)` when a FallbackUsed of the same request went to this backend (or the
  outcome names `fallback_from`);
- `strategy member (S #i)` (a pipeline stage: its role, `strategy member (pipeline review)`) and
  `strategy judge (S)` for a model judge's call;
- `rule R`, the request's decision rule (`rule ?` when its RouteDecided is not among the events);
  a turnless delegate run: `glider delegate`;
- a side request's (a title, utility call or summary riding along the turn: `store.index.digests.
  side_kind`) ends with its kind: `rule R (title)`.
`outcome`: a member's own (ok | error | timeout | cancelled); `failed` for an UpstreamFailed;
`disconnected` when the client left; `error` for a status of 400 and above; `incomplete` for an
answer that did not end; else `ok`. A delegate run: ok | error | timeout.
Totals (`BackendTotal`), one per backend (delegate vendors apart: `delegate` true), by name: calls,
failed (outcome not ok), input_tokens and output_tokens (of the calls that reported them).
With `session`, only the calls of turns of that session are kept.
With `limit`, only the newest `limit` calls (by event id) are listed, still oldest first; `omitted` says
how many more there were. The totals always count every call. An `Audit` keeps only those calls and
the totals, so a caller can read the log turn by turn (`store.context_store.ContextStore.egress` does).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from glider_cli.store.eventlog import events as ev
from glider_cli.store.index.digests import changed_line, left_machine, side_kind

__all__ = ["Audit", "BackendTotal", "Egress", "EgressCall", "audit", "left_machine"]

ERROR_CHARS = 200


@dataclass(frozen=True, slots=True)
class EgressCall:
    id: str
    ts: str
    turn_id: str | None
    session: str | None
    event: str
    backend: str
    model: str | None
    why: str
    outcome: str
    status: int | None
    input_tokens: int | None
    output_tokens: int | None
    ms: float | None
    error: str | None
    changed: str | None = None  # a delegate run: what it changed in the workspace (`2 files +3 −1`)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class BackendTotal:
    backend: str
    delegate: bool
    calls: int
    failed: int
    input_tokens: int
    output_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Egress:
    calls: tuple[EgressCall, ...]
    totals: tuple[BackendTotal, ...]
    omitted: int = 0  # the older calls past `limit`: counted in the totals, not listed

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": [c.to_dict() for c in self.calls],
            "totals": [t.to_dict() for t in self.totals],
            "omitted": self.omitted,
        }


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _num(v: Any) -> float | None:
    return float(v) if type(v) in (int, float) else None


def _text(v: Any) -> str | None:
    return str(v).splitlines()[0][:ERROR_CHARS] if v else None


class _Request:
    """What the events so far of one request say: its rule, fallbacks, chosen member, a cut stream."""

    def __init__(self, decided: Mapping[str, Any] | None = None) -> None:
        d = decided or {}
        self.rule = d.get("rule")
        self.backend = d.get("backend")
        self.model = d.get("model")
        self.fallbacks: dict[str, tuple[Any, Any]] = {}  # to -> (from, reason)
        self.chosen: Any = None  # the chosen member's backend, until its outcome event
        self.cut: dict[str, str] = {}  # backend -> the error of its mid-stream failure
        self.failed: set[str] = set()  # backends whose attempt failed before the first byte (listed)
        self.kind = side_kind(d)  # a side request's kind (title, ...), None for a main one

    def choose(self, chosen: Any) -> None:
        """The strategy chose the member of backend `chosen` (None: no member, or its outcome seen)."""
        self.chosen = chosen

    def why(self, backend: str, fallback_from: Any = None) -> str:
        hop = self.fallbacks.get(backend)
        if hop is not None:
            why = f"fallback from {hop[0]}" + (f" ({hop[1]})" if hop[1] else "")
        elif fallback_from:
            why = f"fallback from {fallback_from}"
        else:
            why = f"rule {self.rule or '?'}"
        return why + (f" ({self.kind})" if self.kind else "")


def _outcome(d: Mapping[str, Any]) -> str:
    status = _int(d.get("status"))
    if d.get("outcome") == "abandoned":
        return "abandoned"
    if d.get("client_disconnected"):
        return "disconnected"
    if status is not None and status >= 400:
        return "error"
    if d.get("complete") is False:
        return "incomplete"
    return "ok"


def _turn(events: list[Mapping[str, Any]], turn: str | None) -> list[EgressCall]:
    out: list[EgressCall] = []
    opened = (e.get("data") or {} for e in events if e.get("type") == ev.TURN_OPENED)
    session = next((s for d in opened if isinstance(s := d.get("session_id"), str) and s), None)
    req = _Request()
    for e in events:
        t, d = e.get("type"), e.get("data") or {}
        if t == ev.ROUTE_DECIDED:
            req = _Request(d)
            continue
        if t == ev.FALLBACK_USED:
            req.fallbacks[str(d.get("to"))] = (d.get("from"), d.get("reason"))
            continue
        if t == ev.STRATEGY_CHOSEN:
            req.choose(d.get("backend") if d.get("index") is not None else None)
            continue
        backend = str(d.get("backend") or d.get("vendor") or "?")
        if t in (ev.FULFILLED_LOCAL, ev.ORIGIN_PASSTHROUGH) and req.chosen == backend:
            req.choose(None)
            continue  # the chosen member's own record: its StrategyMember is the call
        if t == ev.UPSTREAM_FAILED and d.get("stage") == "mid_stream":
            req.cut[backend] = str(d.get("error") or "failed mid-stream")
            continue  # the outcome event of the same call follows
        ended = t in (ev.FULFILLED_LOCAL, ev.ORIGIN_PASSTHROUGH) and d.get("outcome") == "failed"
        if ended and backend in req.failed and backend not in req.cut:
            req.failed.discard(backend)
            continue  # every attempt failed: the last attempt's UpstreamFailed is the call
        if not left_machine(t, d):
            continue
        model = d.get("model")
        status, error = _int(d.get("status")), _text(d.get("error"))
        tokens = (_int(d.get("input_tokens")), _int(d.get("output_tokens")))
        changed: str | None = None
        if t == ev.ORIGIN_PASSTHROUGH:
            why, outcome = req.why(backend, d.get("fallback_from")), _outcome(d)
            if backend in req.cut:
                outcome, error = "failed mid-stream", _text(req.cut.pop(backend))
        elif t == ev.STRATEGY_MEMBER:
            strategy = d.get("strategy") or "?"
            role = d.get("role")
            if role == "judge":
                why = f"strategy judge ({strategy})"
            else:
                why = f"strategy member ({strategy} {role or '#' + str(d.get('index'))})"
            outcome = str(d.get("outcome") or "ok")
        elif t == ev.UPSTREAM_FAILED:
            why, outcome = req.why(backend), "failed"
            req.failed.add(backend)
            model = req.model if backend == req.backend else None
        else:  # DelegateRun
            why = f"rule {req.rule or '?'}" if turn is not None else "glider delegate"
            code = _int(d.get("exit_code"))
            status, tokens = code, (None, None)
            outcome = "timeout" if d.get("timed_out") else ("ok" if d.get("ok", code == 0) else "error")
            error = None if outcome == "ok" else _text(d.get("summary"))
            changed = changed_line(d)
        out.append(
            EgressCall(
                id=str(e.get("id")),
                ts=str(e.get("ts")),
                turn_id=turn,
                session=session,
                event=str(t),
                backend=backend,
                model=model if isinstance(model, str) else None,
                why=why,
                outcome=outcome,
                status=status,
                input_tokens=tokens[0],
                output_tokens=tokens[1],
                ms=_num(d.get("ms")),
                error=error,
                changed=changed,
            )
        )
    return out


class Audit:
    """The audit fed one turn at a time (see the module contract): keeps the totals of every call and
    only the newest `limit` calls (all of them when `limit` is None)."""

    def __init__(self, session: str | None = None, limit: int | None = None) -> None:
        self.session = session
        self.limit = limit
        self._heap: list[tuple[str, int, EgressCall]] = []  # the newest `limit`, oldest on top
        self._seen = 0
        self._acc: dict[tuple[str, bool], list[int]] = {}

    def add(self, turn: str | None, events: Iterable[Mapping[str, Any]]) -> None:
        """Every event of one turn (`turn` None: turnless delegate runs), in any order."""
        for c in _turn(sorted(events, key=lambda e: str(e.get("id"))), turn):
            if self.session is not None and c.session != self.session:
                continue
            row = self._acc.setdefault((c.backend, c.event == ev.DELEGATE_RUN), [0, 0, 0, 0])
            row[0] += 1
            row[1] += c.outcome != "ok"
            row[2] += c.input_tokens or 0
            row[3] += c.output_tokens or 0
            self._seen += 1
            item = (c.id, self._seen, c)
            if self.limit is None or len(self._heap) < self.limit:
                heapq.heappush(self._heap, item)
            elif self.limit > 0 and item > self._heap[0]:
                heapq.heapreplace(self._heap, item)

    def result(self) -> Egress:
        calls = tuple(c for _, _, c in sorted(self._heap))
        totals = tuple(BackendTotal(b, dl, *row) for (b, dl), row in sorted(self._acc.items()))
        return Egress(calls, totals, self._seen - len(calls))


def audit(
    events: Iterable[Mapping[str, Any]], session: str | None = None, limit: int | None = None
) -> Egress:
    """See the module contract."""
    turns: dict[str | None, list[Mapping[str, Any]]] = {}
    for e in events:
        turn = e.get("turn_id")
        if isinstance(turn, str) and turn:
            turns.setdefault(turn, []).append(e)
        elif e.get("type") == ev.DELEGATE_RUN:
            turns.setdefault(None, []).append(e)
    acc = Audit(session, limit)
    for turn, evs in turns.items():
        acc.add(turn, evs)
    return acc.result()
