"""The event schema: one JSON object per line in `$GLIDER_HOME/context/events-YYYY-MM-DD.jsonl`.

Contract (schema version 1), every line is exactly one event:

    {"v": 1, "id": "<32 hex>", "type": "RouteDecided", "ts": "2026-11-29T21:50:01.123Z",
     "turn_id": "<id or null>", "prov": "RUNTIME", "data": {...}}

- `id` is time-ordered: 12 hex digits of Unix milliseconds then 20 hex digits that start random and
  are incremented within one millisecond, so ids sort as they were made in one process, and by
  millisecond across processes.
- `ts` is ISO-8601 UTC with milliseconds; the file an event goes to is the UTC day of its `ts`.
- `prov` is always RUNTIME for the log (EXTRACTED/INFERRED belong to the entity store).
- `data` is redacted (see `store.eventlog.redact`) before the line is written.
- Readers upgrade older versions in `upgrade()`; a line of a newer version than this module knows is
  skipped and counted, never guessed at. The log is never rewritten in place.

Event types and the `data` keys the views read (all optional; extra keys are kept as they are):

    TurnOpened        ask (the user's text as sent), goal (the same, cleaned of client-injected blocks),
                      clone_path (the workspace root the client names), session_id, client, messages
    TurnContext       plan (the latest plan the agent wrote: Claude Code's TodoWrite, Codex's
                      update_plan), files (paths the turn's tool calls wrote), tool; later ones win
    RouteDecided      RouteDecision.to_record(): target, rule, backend, model, strategy, delegate,
                      the evaluated trace and `not_reached` (how many rules came after the winner)
    StickyBound       family, target, ttl
    ToolCallsIssued   family, session_id, side, backend, model, calls [{id, name, prompt}] (turns.sticky)
    FulfilledLocal    backend, model, status, input_tokens, output_tokens, ms, files; and for usage
                      accounting (`turns.calibration.accounting`, `store.usage`): cache_read_tokens,
                      cache_write_tokens, cache_in_input (the input count includes the cached tokens:
                      OpenAI, Gemini), estimated (the counts Glider estimated: the backend reported
                      none), rule, requested_model (the model the client asked for)
    OriginPassthrough the same keys as FulfilledLocal
    FallbackUsed      from, to, reason
    Escalated         a turn a rule sent local, moved to the cloud because its answer could not be used
                      (`proxy.escalate`, `turns.sticky`): reason (bad_tool_name | bad_tool_args |
                      empty_reply | client_failure:<which>), detail, from, to (backends), rule, and for
                      a checked reply the local attempt's model, input_tokens, output_tokens, ms (spent)
    UpstreamFailed    backend, side (local | cloud), status, error, stage (before_first_byte: the
                      fallback may take over; mid_stream: the same call's outcome event follows)
    StrategyMember    one member call of a fan_out / pipeline / ensemble plan (`proxy.strategies.members`):
                      strategy, index, role (a pipeline stage's, or `judge` for a model judge's call),
                      backend, side, model, temperature, outcome (ok | error | timeout | cancelled),
                      status, input_tokens, output_tokens, ms, tool_calls, error, requested_model,
                      cache_read_tokens, cache_write_tokens, estimated
    StrategyChosen    which candidate won (`strategies.orchestrator`): strategy, judge, members, complete
                      (the indexes that answered), index (None: every member failed and the ordinary
                      call serves it), backend, model, why, scores; the chosen member's own outcome
                      event (FulfilledLocal / OriginPassthrough) follows it, for the same call
    DelegateRun       vendor, exit_code, ms, files, summary, input_tokens, output_tokens (estimated),
                      changes (what it changed in the workspace: source, files, added, removed, diff),
                      refused (what its CLI refused: tool, target, grant), grant_offered (a one-shot
                      token was given; never the token)
                      stopped (a run stopped before it ended: by client_left | SIGINT | SIGTERM |
                      SIGHUP, pid, processes ended, run_dir_removed; null otherwise)
    Note              text (a free note attached to a turn; it becomes a `note` entity)
    LocalRegret       a locally served turn the user did not accept (`turns.regret`): kind
                      (repeat_cloud | repeat_soon | interrupted | local_error), later_turn, evidence,
                      rule, backend, model
    EventsPruned      retain_days, cutoff, deleted (day files), bytes_freed (serve's daily retention)
    BackendOpened     backend, failures, window, cooldown, error, trial (`backends.breaker`: the backend
                      is skipped for `cooldown` seconds; trial: the request that tried it again failed)
    BackendClosed     backend, by (request | probe: what found it answering again), open_s
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

SCHEMA_VERSION = 1
PROV_RUNTIME = "RUNTIME"

TURN_OPENED = "TurnOpened"
ROUTE_DECIDED = "RouteDecided"
STICKY_BOUND = "StickyBound"
FULFILLED_LOCAL = "FulfilledLocal"
ORIGIN_PASSTHROUGH = "OriginPassthrough"
FALLBACK_USED = "FallbackUsed"
ESCALATED = "Escalated"
UPSTREAM_FAILED = "UpstreamFailed"
DELEGATE_RUN = "DelegateRun"
STRATEGY_MEMBER = "StrategyMember"
STRATEGY_CHOSEN = "StrategyChosen"
NOTE = "Note"
TURN_CONTEXT = "TurnContext"
EVENTS_PRUNED = "EventsPruned"
LOCAL_REGRET = "LocalRegret"
BACKEND_OPENED = "BackendOpened"
BACKEND_CLOSED = "BackendClosed"
# Event kinds written outside the request's own records (not in EVENT_TYPES, as before).
TOOL_CALLS_ISSUED = "ToolCallsIssued"
CONFIG_RELOADED = "ConfigReloaded"
CONTINUITY_CORRUPT = "ContinuityCorrupt"
CONTINUITY_COMPACTED = "ContinuityCompacted"
CONTINUITY_COMPACTION_FAILED = "ContinuityCompactionFailed"
CONTINUITY_WRITE_FAILED = "ContinuityWriteFailed"
TOOL_STEP_DECIDED = "ToolStepDecided"  # a Cursor tool step's allow/deny (`cursor.agent_loop`)

EVENT_TYPES: tuple[str, ...] = (
    TURN_OPENED,
    ROUTE_DECIDED,
    STICKY_BOUND,
    FULFILLED_LOCAL,
    ORIGIN_PASSTHROUGH,
    FALLBACK_USED,
    ESCALATED,
    UPSTREAM_FAILED,
    DELEGATE_RUN,
    STRATEGY_MEMBER,
    STRATEGY_CHOSEN,
    NOTE,
    TURN_CONTEXT,
    EVENTS_PRUNED,
    LOCAL_REGRET,
    BACKEND_OPENED,
    BACKEND_CLOSED,
)

# Events that close a turn's request, in the order an episode reports them.
OUTCOME_TYPES: tuple[str, ...] = (FULFILLED_LOCAL, ORIGIN_PASSTHROUGH, UPSTREAM_FAILED, DELEGATE_RUN)

# The requests that ride along a turn without being one of its replies: a count, the title, a utility
# call, a summary. A `RouteDecided` names its request's kind in `family.kind`, an outcome event in
# `request_kind`; a turn's summary is its main request's, these are listed under it.
SIDE_REQUEST_KINDS = frozenset(("count_tokens", "title", "utility", "summary"))

_REQUIRED = ("id", "type", "ts")


class IdGenerator:
    """Monotonic time-ordered ids (see the module contract). Thread-safe. An id is kept as one int
    (milliseconds << 80 | counter) until it is written out as 32 hex digits; the clock must read
    between 1970 and the year 10889 (12 hex digits of milliseconds)."""

    def __init__(self, clock: Any = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_ms = -1
        self._next = 0  # the next id within `_last_ms`, as an int

    def __call__(self) -> str:
        """One id (`run(1)`'s, made without its iterator: a new turn takes one per request)."""
        return self._reserve(1, self._clock()).to_bytes(16, "big").hex()

    def many(self, n: int) -> list[str]:
        """`n` consecutive ids, as `n` calls would give them, under one clock read and one lock."""
        return list(self.run(n))

    def run(self, n: int, now: float | None = None) -> Iterator[str]:
        """`many(n)` as an iterator, `now` being the clock's reading when the caller has it (the
        writer's `stage` zips the ids into its pending events: no list is built)."""
        first = self._reserve(n, self._clock() if now is None else now)
        # Ids that differ only in their last two hex digits share the rest, made once (bytes turned
        # to hex: a format spec costs ~3x as much; issue 29).
        low = first & 0xFF
        if low + n <= 0x100:
            return map((first >> 8).to_bytes(15, "big").hex().__add__, _HEX2[low : low + n])
        return iter([c.to_bytes(16, "big").hex() for c in range(first, first + n)])

    def _reserve(self, n: int, now: float) -> int:
        """The first of `n` consecutive ids at clock reading `now`, as an int; the next start after them."""
        ms = int(now * 1000)
        lock = self._lock
        lock.acquire()
        try:
            if ms > self._last_ms:
                self._last_ms = ms
                # Leave headroom so the counter never overflows its 80 bits within one millisecond.
                first = (ms << 80) | random.getrandbits(79)
            else:
                first = self._next
            self._next = first + n
        finally:
            lock.release()
        return first


_HEX2 = tuple(f"{i:02x}" for i in range(0x100))
_ts_cache: tuple[int, str] = (-1, "")
_ts_last: tuple[int, str] = (-1, "")
# ".000Z" .. ".999Z", made when the first time is formatted (not at import: `glider serve`'s cold start).
_MS: tuple[str, ...] = ()


def format_ts(t: float) -> str:
    """Unix seconds -> `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC)."""
    global _ts_cache, _ts_last, _MS
    ms = int(t * 1000)
    last_ms, last = _ts_last
    if ms == last_ms:  # a request's events mostly share their millisecond
        return last
    sec = ms // 1000
    cached_sec, prefix = _ts_cache
    if cached_sec != sec:
        # strftime dominates the cost of an event; most events share their second with the last one.
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _ts_cache = (sec, prefix)
        if not _MS:
            _MS = tuple(f".{i:03d}Z" for i in range(1000))
    out = prefix + _MS[ms % 1000]
    _ts_last = (ms, out)
    return out


def make_event(id_: str, type_: str, ts: str, turn_id: str | None, data: Mapping[str, Any]) -> dict[str, Any]:
    """An event with a copy of `data`."""
    return event_of(id_, type_, ts, turn_id, dict(data))


def event_of(id_: str, type_: str, ts: str, turn_id: str | None, data: dict[str, Any]) -> dict[str, Any]:
    """An event holding `data` itself (the writer's, whose data is its own copy already)."""
    return {
        "v": SCHEMA_VERSION,
        "id": id_,
        "type": type_,
        "ts": ts,
        "turn_id": turn_id,
        "prov": PROV_RUNTIME,
        "data": data,
    }


def upgrade(raw: Any) -> dict[str, Any] | None:
    """A parsed line -> a current-version event, or None when it is not a readable event.

    Version 1 is the only version so far; a line without `v` predates versioning and is read as
    version 1 when it has the required fields.
    """
    if not isinstance(raw, dict):
        return None
    v = raw.get("v", SCHEMA_VERSION)
    if v != SCHEMA_VERSION:
        return None
    for k in _REQUIRED:
        if not isinstance(raw.get(k), str):
            return None
    if "v" not in raw:
        raw["v"] = SCHEMA_VERSION
    if not isinstance(raw.get("data"), dict):
        raw["data"] = {}
    raw.setdefault("turn_id", None)
    raw.setdefault("prov", PROV_RUNTIME)
    return raw
