"""Views over a `store.views.feed.Feed`'s request records: counts for a window, backend health, sessions.

All functions are pure: records in (oldest first, as `Feed.records()` gives them), plain dicts out;
the time is passed in (`now_ms`, Unix milliseconds). A record's time is its event id's millisecond.

- `window_stats(records, window_s=, now_ms=, buckets=, dropped=)`: the requests decided in the last `window_s`
  seconds: `total`, `sides` {local, cloud}, `rules` [{rule, local, cloud, total}] most hits first,
  `fallbacks`, `failures`, `answered`, `p50_ms`, `series` (`buckets` equal slices of the window,
  oldest first, each {t (its start), local, cloud}), `backends` {name: {requests, answered, ok, errors,
  failures, p50_ms, last_ts, last_status, last_error}}, and `covered_from`: when the feed has let
  older records go (`dropped`) and the oldest it keeps is inside the window, that record's time (the
  counts start there), else None.
- `backend_state(stats_entry)`: "ok", "failing" or "idle" for one `backends` entry.
- `sessions(records, limit, before=)`: sessions by last activity, newest first, each {session_id,
  first_ts, last_ts, last_id, requests, turns, local, cloud, sticky, kinds {kind: n}, client, ask};
  requests without a session id form the session None. `before` is a `last_id` cursor; returns
  (page, next cursor or None).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from glider_cli.store.views.feed import Request, id_ms


def _p50(values: list[float]) -> float | None:
    if not values:
        return None
    values.sort()
    return round(values[len(values) // 2], 1)


def _window(records: Sequence[Request], since_ms: int) -> Sequence[Request]:
    keys = [r.ms_epoch for r in records]
    return records[bisect.bisect_left(keys, since_ms) :]


def window_stats(
    records: Sequence[Request], *, window_s: int, now_ms: int, buckets: int, dropped: bool = False
) -> dict[str, Any]:
    since_ms = now_ms - window_s * 1000
    sel = _window(records, since_ms)
    width = max(window_s * 1000 // max(buckets, 1), 1)
    series = [{"t": since_ms + i * width, "local": 0, "cloud": 0} for i in range(buckets)]
    sides = {"local": 0, "cloud": 0}
    rules: dict[str, dict[str, Any]] = {}
    backends: dict[str, dict[str, Any]] = {}
    latencies: dict[str, list[float]] = {}
    all_ms: list[float] = []
    fallbacks = failures = answered = 0

    def backend(name: str) -> dict[str, Any]:
        b = backends.get(name)
        if b is None:
            b = backends[name] = {
                "requests": 0,
                "answered": 0,
                "ok": 0,
                "errors": 0,
                "failures": 0,
                "p50_ms": None,
                "last_ts": None,
                "last_status": None,
                "last_error": None,
            }
        return b

    for r in sel:
        side = r.side
        sides[side] += 1
        slot = min((r.ms_epoch - since_ms) // width, buckets - 1)
        if slot >= 0:
            series[slot][side] += 1
        row = rules.get(r.rule)
        if row is None:
            row = rules[r.rule] = {"rule": r.rule, "local": 0, "cloud": 0, "total": 0}
        row[side] += 1
        row["total"] += 1
        if r.backend:
            backend(r.backend)["requests"] += 1
        for name in r.failed_backends:
            b = backend(name)
            b["failures"] += 1
            b["last_ts"], b["last_status"], b["last_error"] = r.ts, None, r.error
        failures += r.failures
        fallbacks += 1 if (r.fallbacks or r.fallback_from) else 0
        if r.status is None:
            continue
        answered += 1
        if r.ms is not None:
            all_ms.append(r.ms)
        if r.answered_by:
            b = backend(r.answered_by)
            b["answered"] += 1
            ok = 0 < r.status < 400
            b["ok" if ok else "errors"] += 1
            b["last_ts"], b["last_status"] = r.done_ts or r.ts, r.status
            b["last_error"] = None if ok else r.error
            if r.ms is not None:
                latencies.setdefault(r.answered_by, []).append(r.ms)
    for name, values in latencies.items():
        backends[name]["p50_ms"] = _p50(values)
    covered_from = None
    if dropped and records and id_ms(records[0].id) > since_ms:
        covered_from = records[0].ts
    return {
        "window_s": window_s,
        "since_ms": since_ms,
        "now_ms": now_ms,
        "bucket_ms": width,
        "total": len(sel),
        "sides": sides,
        "rules": sorted(rules.values(), key=lambda x: (-x["total"], x["rule"])),
        "fallbacks": fallbacks,
        "failures": failures,
        "answered": answered,
        "p50_ms": _p50(all_ms),
        "series": series,
        "backends": backends,
        "covered_from": covered_from,
    }


def backend_state(entry: dict[str, Any] | None) -> str:
    """ "idle" with no traffic in the window, "failing" when the last thing seen was a failure."""
    if not entry or not (entry["answered"] or entry["failures"]):
        return "idle"
    status = entry["last_status"]
    return "ok" if status is not None and 0 < status < 400 else "failing"


def sessions(
    records: Sequence[Request], limit: int, *, before: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    by: dict[str | None, dict[str, Any]] = {}
    turns: dict[str | None, set[str]] = {}
    for r in records:
        s = by.get(r.session_id)
        if s is None:
            s = by[r.session_id] = {
                "session_id": r.session_id,
                "first_ts": r.ts,
                "last_ts": r.ts,
                "last_id": r.id,
                "requests": 0,
                "turns": 0,
                "local": 0,
                "cloud": 0,
                "sticky": 0,
                "kinds": {},
                "client": None,
                "ask": None,
            }
            turns[r.session_id] = set()
        s["last_ts"], s["last_id"] = r.ts, r.id
        s["requests"] += 1
        s[r.side] += 1
        s["sticky"] += 1 if r.sticky else 0
        s["kinds"][r.kind] = s["kinds"].get(r.kind, 0) + 1
        if r.client:
            s["client"] = r.client
        if r.ask:
            s["ask"] = r.ask
        if r.turn_id:
            turns[r.session_id].add(r.turn_id)
    for sid, s in by.items():
        s["turns"] = len(turns[sid])
    ordered = sorted(by.values(), key=lambda s: s["last_id"], reverse=True)
    if before is not None:
        ordered = [s for s in ordered if s["last_id"] < before]
    page = ordered[:limit]
    more = len(ordered) > limit
    return page, (page[-1]["last_id"] if more and page else None)
