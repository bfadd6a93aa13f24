"""Rebuild the turn-family index from the event log, so `glider serve` keeps its families across restarts.

`rebuild_event(index, event)` folds one logged event (oldest first) into a `FamilyIndex`:
`TurnOpened` (family, session, opening message), `RouteDecided` (its `family` entry, written by
`turns.sticky`: the side that decided, the calls it answered), `ToolCallsIssued` (the side/backend/
model that served a reply and each call it issued, with an Agent/Task call's prompt and its
`subagent_type`: tool results still go home and subagents still link after a restart) and
`StickyBound` (a cloud or local binding, with the rule of a local one), and the outcome of each reply
(`FulfilledLocal`, `OriginPassthrough`: `_served`) for the family's count of local replies in a row
that stopped at the output-token limit (`Family.local_limits`, `turns.sticky` "Off local"): a local
outcome with `stopped_at_limit` adds one, any other reply sets it back to 0, and an outcome that
answered nothing (status 0: the client left first; 400 and above: an error) or that is a side
request's (`request_kind`: a title, utility call or summary riding along the turn) leaves it, as
`Family.replied` and `Stickiness.served` do in the running app: a continuation still leaves local
after a restart in the middle of a looping turn. Unknown types are ignored.
A logged prompt shorter than `PROMPT_CAP` is whole and a subagent must repeat it whole; the log is
redacted, so a logged prompt is cut at its first `[REDACTED]`, and a capped or cut prompt is
matched by its start.
The credentials fingerprint of a family is never logged: after a restart only a session id links a
subagent to its parent.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from glider_cli.store.eventlog.events import (
    FULFILLED_LOCAL,
    ORIGIN_PASSTHROUGH,
    ROUTE_DECIDED,
    STICKY_BOUND,
    TOOL_CALLS_ISSUED,
    TURN_OPENED,
)
from glider_cli.store.eventlog.redact import REDACTED
from glider_cli.turns.records import SIDE_KINDS, Binding, Family

if TYPE_CHECKING:
    from glider_cli.turns.families import FamilyIndex

__all__ = ["rebuild_event", "ts_seconds"]


def _seconds(ts: Any) -> float:
    """`ts_seconds(str(ts)) or 0.0`, the last string's answer kept (`_parsed`): the events one
    request logs mostly share their millisecond."""
    return _parsed(ts) if type(ts) is str else ts_seconds(str(ts)) or 0.0


@functools.lru_cache(maxsize=1)
def _parsed(ts: str) -> float:
    return ts_seconds(ts) or 0.0


def ts_seconds(ts: str) -> float | None:
    """An event's ISO `ts` (`2026-11-29T21:50:01.123Z`) as Unix seconds."""
    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# The types the index is rebuilt from: any other is passed over before its time is parsed (a fifth
# of a warm-loaded log under the bench's load is OriginPassthrough; issue 29's cold start).
_FOLDED = frozenset((TURN_OPENED, ROUTE_DECIDED, TOOL_CALLS_ISSUED, STICKY_BOUND))
# The outcomes: read for the count of local replies at the limit only (no time, no family made).
_OUTCOMES = frozenset((FULFILLED_LOCAL, ORIGIN_PASSTHROUGH))
# `isinstance(x, int | float)` builds the union each time it runs: against a tuple made once it is
# ~40 ns instead of ~145 (four checks per StickyBound, the most common event folded in; issue 29).
_NUMBER = (int, float)


def rebuild_event(ix: FamilyIndex, event: Mapping[str, Any]) -> None:
    """Fold one logged event (oldest first) into the index; unknown types are ignored."""
    kind = event.get("type")
    turn = event.get("turn_id")
    data = event.get("data")
    if kind not in _FOLDED:
        if kind in _OUTCOMES and type(turn) is str:
            fam = ix.families.get(turn)
            # While a family's count is 0 only a local reply at the limit changes it: most outcomes
            # are passed over here (a logged event's data is a dict; `_served` reads the rest).
            if fam is not None and (
                fam.local_limits
                or (kind == FULFILLED_LOCAL and type(data) is dict and "stopped_at_limit" in data)
            ):
                _served(fam, kind, data)
        return
    # `type(...) is dict` first: a logged event's data is a dict, and the Mapping check goes through
    # the ABC's `__instancecheck__` (~140 ns a check against ~20; issue 29's cold start).
    if not isinstance(turn, str) or (type(data) is not dict and not isinstance(data, Mapping)):
        return
    fam = ix.families.get(turn)
    if kind == STICKY_BOUND and fam is None:
        return
    at = _seconds(event.get("ts", ""))
    if kind == TURN_OPENED:
        messages = data.get("messages")
        ask = str(data.get("ask") or "")
        ix.restore(turn, _str(data.get("session_id")), at, ask, messages if isinstance(messages, int) else 0)
    elif kind == ROUTE_DECIDED:
        _decided(ix, turn, fam, data, at)
    elif kind == TOOL_CALLS_ISSUED:
        _issued(ix, turn, fam, data, at)
    elif kind == STICKY_BOUND and fam is not None:
        bound_at = data.get("bound_at")
        start = float(bound_at) if isinstance(bound_at, _NUMBER) else at
        ttl, grace = data.get("ttl"), data.get("grace")
        ended = data.get("ended_at")
        prev = fam.binding
        fam.bind(
            Binding(
                str(data.get("target") or "cloud"),
                prev.bound_at if prev is not None and ended is not None else start,
                float(ttl) if isinstance(ttl, _NUMBER) else 0.0,
                float(grace) if isinstance(grace, _NUMBER) else 0.0,
                str(data.get("reason") or "restored from the event log"),
                float(ended) if isinstance(ended, _NUMBER) else None,
                _str(data.get("rule")),
            )
        )
        fam.seen(max(fam.last_seen, at))


def _served(fam: Family, kind: str, data: Any) -> None:
    """An outcome of `fam`: one more local reply at the limit in a row, or a reply that ends the run."""
    if not isinstance(data, Mapping):
        return
    status = data.get("status")
    if type(status) is not int or data.get("request_kind") in SIDE_KINDS:
        return  # no status, or a title, summary... riding along the turn: never counted in memory
    fam.replied("local" if kind == FULFILLED_LOCAL else "cloud", data.get("stopped_at_limit") is True, status)


def _touch(ix: FamilyIndex, turn: str, fam: Family | None, session: Any, at: float) -> Family:
    """The family of a logged event (made when the log holds no TurnOpened for it), seen at `at`."""
    if fam is None:
        fam = ix.add(Family(turn, _str(session), at, at))
    fam.seen(max(fam.last_seen, at))
    ix.families.move_to_end(turn)
    return fam


def _decided(ix: FamilyIndex, turn: str, fam: Family | None, data: Mapping[str, Any], at: float) -> None:
    info: Any = data.get("family")
    mapped = type(info) is dict or isinstance(info, Mapping)
    if fam is None and not mapped:
        return
    fam = _touch(ix, turn, fam, info.get("session_id") if mapped else None, at)
    target = data.get("target")
    if target in ("local", "cloud"):
        fam.sent_to(str(target), _str(data.get("backend")), _str(data.get("model")))
    if not mapped:
        return
    for cid in info.get("answered") or ():
        if isinstance(cid, str):
            ix.answer(fam, cid)


def _issued(ix: FamilyIndex, turn: str, fam: Family | None, data: Mapping[str, Any], at: float) -> None:
    """`ToolCallsIssued` (written by `turns.sticky`): the calls go back to the side that issued
    them, and an Agent/Task call's prompt links its subagent, across a restart."""
    fam = _touch(ix, turn, fam, data.get("session_id"), at)
    side = data.get("side")
    if side in ("local", "cloud"):
        fam.sent_to(str(side), _str(data.get("backend")), _str(data.get("model")))
    calls = data.get("calls")
    for c in calls if isinstance(calls, list) else ():
        cid = c.get("id") if isinstance(c, Mapping) else None
        if isinstance(cid, str) and cid and isinstance(c, Mapping):
            prompt, cut = _logged_prompt(c.get("prompt"))
            ix.issued(
                turn,
                cid,
                str(c.get("name") or ""),
                prompt,
                subagent_type=_str(c.get("subagent_type")),
                prefix=cut,
            )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _logged_prompt(value: Any) -> tuple[str, bool]:
    """An Agent prompt as logged, and whether it is only its start: the log is redacted, so only the
    text before the first redaction can still be found in the subagent's (unredacted) first message;
    too short a start links nothing."""
    if not isinstance(value, str):
        return "", False
    cut = value.find(REDACTED)
    if cut < 0:
        return value, False
    text = value[:cut].rstrip()
    return (text if len(text) >= 32 else ""), True
