"""Episodes: short deterministic summaries of turns, derived from events alone.

`build(events)` groups events by `turn_id` (events without one are ignored) and returns one Episode
per turn, oldest first (by the first event's id). The same events always give the same episodes,
so the CLI (reading the log) and `glider serve` (reading its ring) agree. An episode holds:
- asked: the user's text from TurnOpened (`ask`, else `goal`), cut to 200 characters;
- routed: from the last RouteDecided (target, backend, model, rule, delegate);
- outcome: from the last FulfilledLocal / OriginPassthrough / UpstreamFailed / DelegateRun, with any
  FallbackUsed noted; "open" while none has arrived;
- files: every path named in a `files` list, first mention order.
`summary` is the one line a local model is given: `asked …; routed …; outcome …; files …`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from glider_cli.store import events as ev
from glider_cli.values import Frozen

ASK_CHARS = 200
MAX_FILES = 20


class Episode(Frozen):
    turn_id: str
    first_ts: str
    last_ts: str
    events: int
    asked: str
    routed: str
    outcome: str
    files: tuple[str, ...]

    def __init__(
        self,
        turn_id: str,
        first_ts: str,
        last_ts: str,
        events: int,
        asked: str,
        routed: str,
        outcome: str,
        files: tuple[str, ...],
    ) -> None:
        self.__dict__.update(
            turn_id=turn_id,
            first_ts=first_ts,
            last_ts=last_ts,
            events=events,
            asked=asked,
            routed=routed,
            outcome=outcome,
            files=files,
        )

    @property
    def summary(self) -> str:
        parts = [f"asked: {self.asked or '(unknown)'}", f"routed: {self.routed}", f"outcome: {self.outcome}"]
        if self.files:
            parts.append("files: " + ", ".join(self.files))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "events": self.events,
            "asked": self.asked,
            "routed": self.routed,
            "outcome": self.outcome,
            "files": list(self.files),
            "summary": self.summary,
        }


def _routed(d: Mapping[str, Any]) -> str:
    target = d.get("target") or "?"
    where = "/".join(str(x) for x in (d.get("backend"), d.get("model")) if x)
    s = f"{target}" + (f" via {where}" if where else "")
    if d.get("delegate"):
        s += f" delegate {d['delegate']}"
    if d.get("rule"):
        s += f" (rule {d['rule']})"
    return s


def _outcome(t: str, d: Mapping[str, Any]) -> str:
    status = f" status {d['status']}" if d.get("status") is not None else ""
    toks = f", {d['output_tokens']} tokens out" if d.get("output_tokens") is not None else ""
    if t == ev.FULFILLED_LOCAL:
        where = "/".join(str(x) for x in (d.get("backend"), d.get("model")) if x)
        return f"answered locally{' by ' + where if where else ''}{status}{toks}"
    if t == ev.ORIGIN_PASSTHROUGH:
        return f"answered by {d.get('backend') or 'origin'}{status}{toks}"
    if t == ev.UPSTREAM_FAILED:
        err = str(d.get("error") or "").splitlines()[0][:120] if d.get("error") else ""
        return f"failed at {d.get('backend') or 'upstream'}{status}{': ' + err if err else ''}"
    summary = str(d.get("summary") or "").splitlines()[0][:120] if d.get("summary") else ""
    return f"delegated to {d.get('vendor') or '?'} exit {d.get('exit_code')}" + (
        f": {summary}" if summary else ""
    )


class _Acc:
    __slots__ = ("asked", "fallback", "files", "first_id", "first_ts", "last_ts", "n", "outcome", "routed")

    def __init__(self, e: Mapping[str, Any]) -> None:
        self.first_id = str(e.get("id"))
        self.first_ts = str(e.get("ts"))
        self.last_ts = self.first_ts
        self.n = 0
        self.asked = ""
        self.routed = "not routed"
        self.outcome = "open"
        self.fallback = ""
        self.files: dict[str, None] = {}


def build(events: Iterable[Mapping[str, Any]]) -> list[Episode]:
    """See the module contract."""
    accs: dict[str, _Acc] = {}
    for e in sorted(events, key=lambda x: str(x.get("id"))):
        turn = e.get("turn_id")
        if not isinstance(turn, str) or not turn:
            continue
        a = accs.get(turn)
        if a is None:
            a = accs[turn] = _Acc(e)
        a.n += 1
        a.last_ts = str(e.get("ts"))
        t = e.get("type")
        d = e.get("data") or {}
        if t == ev.TURN_OPENED and not a.asked:
            ask = d.get("ask") or d.get("goal") or ""
            a.asked = " ".join(str(ask).split())[:ASK_CHARS]
        elif t == ev.ROUTE_DECIDED:
            a.routed = _routed(d)
        elif t == ev.FALLBACK_USED:
            a.fallback = f" after fallback {d.get('from')} -> {d.get('to')}"
        elif t in ev.OUTCOME_TYPES:
            a.outcome = _outcome(str(t), d)
        files = d.get("files")
        if isinstance(files, list):
            for f in files:
                if isinstance(f, str) and f and len(a.files) < MAX_FILES:
                    a.files[f] = None
    out = [
        Episode(turn, a.first_ts, a.last_ts, a.n, a.asked, a.routed, a.outcome + a.fallback, tuple(a.files))
        for turn, a in accs.items()
    ]
    out.sort(key=lambda x: accs[x.turn_id].first_id)
    return out
