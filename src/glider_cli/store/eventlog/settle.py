"""The writer's redaction fast path: an event's owned copy at emit time, and its settled line.

Contract (what `store.eventlog.writer.EventWriter` relies on):
- `snapshot(data)` is an owned copy of `data` as it is at emit time: a JSON round trip in C for
  JSON-native values; anything else goes through the `redact` walk (which copies) there and then.
- `settle((id, type, ts, turn_id, data))` is `(event, line, redacted)`: the event with `data` redacted
  (`store.eventlog.redact`), its JSONL line (None when it cannot be encoded, e.g. an integer beyond 64 bits)
  and whether the full `redact` walk ran. An event whose data is found clean (its whole line cleared
  by one `redact.may_need_redaction` scan, or else the top two levels walked as `redact` would, with
  a substring check for strings; deeper lists and dicts judged by `redact.may_need_redaction` on the
  exact JSON bytes they are written as) is written as is, and `redact(data) == data` holds for it;
  every other event takes the full walk. Redaction always happens before a line exists.
- `settle_clean(staged)` is the writer's usual batch, stamped events `(id, ts, (type, data,
  turn_id))` of one UTC day: each event's data is encoded once (orjson, strict), one
  `redact.may_need_redaction` scan of the data encoded, joined, clears them all at once (a match
  in one event's data is a match in the joined bytes; a false one across two only costs the walk),
  and each line is joined from its parts: the envelope (`v`, `id`, `type`, `ts`, `turn_id`, `prov`,
  in that order) written from the writer's own strings (the id and ts it made; type and turn id
  as orjson writes them, remembered), then the data's bytes. The envelope is never scanned: the
  walk never redacts it either. The lines are the bytes `orjson.dumps(event, OPT_APPEND_NEWLINE)`
  gives for the same event (`test_store_event_bytes`, `test_store_redact_fastpath`). None when the
  batch spans two days, a value is not JSON-native or the scan finds anything: the batch is then
  settled event by event.
- `settle_many(items)` is `[settle(item) for item in items]`, computed in fewer steps (the one scan
  of `settle_clean` first).
- A settled event's `data` is the `data` given (no copy: `snapshot` made it, or the caller handed it
  over), or the redacted copy.
- `made(data)` is staged data made a dict to settle: a `domain.Deferred` made (once), another
  mapping copied.
Pure apart from two small caches: verdicts keyed by the bytes checked, JSON texts of types and turn ids.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson

from glider_cli.domain import Deferred
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import PROV_RUNTIME, SCHEMA_VERSION, event_of
from glider_cli.store.eventlog.redact import (
    blob_matcher,
    may_need_redaction,
    redact,
    sensitive_name,
    text_may_need_redaction,
)

# (id, ts, (type, data, turn_id)) as stamped: the item as handed over (`EventWriter.stage` keeps a
# `Deferred` or another mapping as given); (id, type, ts, turn_id, data) as settled event by event,
# its data as `made` gives it: a dict of its own.
Staged = tuple[str, str, tuple[str, Mapping[str, Any], "str | None"]]
Pending = tuple[str, str, str, "str | None", dict[str, Any]]

# Only JSON-native values take the fast path; everything else is handed to `redact` first.
_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
_LINE = _STRICT | orjson.OPT_APPEND_NEWLINE

# Most of an event's bytes repeat from event to event (a RouteDecided's trace, a backend's name), so
# the check runs per top-level key and value and remembers its verdicts by the exact bytes checked.
# Parts that carry ids change every time and cycle through; the repeating ones stay (a small cache:
# its keys are the bytes themselves).
_suspect = functools.lru_cache(maxsize=256)(may_need_redaction)


def _clean(data: dict[str, Any], top: bool = True) -> bool:
    """True when `redact(data) == data`. Walks the top level and the dicts right under it the way
    `redact` does (strings by a substring check, numbers as they are); deeper lists and dicts are
    judged on the JSON bytes they are written as. Anything not JSON-native: False (the full walk)."""
    for k, v in data.items():
        if type(k) is not str:
            return False
        t = type(v)
        if t is str:
            if sensitive_name(k) or text_may_need_redaction(v):
                return False
        elif v is None or t is int or t is float or t is bool:
            continue
        elif t is dict and top:
            if not _clean(v, False):
                return False
        elif t is dict or t is list:
            if _suspect(orjson.dumps(v, option=_STRICT)):
                return False
        else:
            return False
    return True


def snapshot(data: Mapping[str, Any]) -> dict[str, Any]:
    """An owned copy of `data` as it is at emit time: a JSON round trip (C speed), or for values
    that are not JSON-native the `redact` walk (which copies as it goes) there and then."""
    try:
        copy = orjson.loads(orjson.dumps(data, option=_STRICT))
    except TypeError:
        return dict(redact(dict(data)))
    return copy if isinstance(copy, dict) else dict(redact(dict(data)))


Settled = tuple[dict[str, Any], "bytes | None", bool]

# A line as `orjson.dumps(event_of(...), option=_LINE)` writes it, made of its parts (one f-string:
# %-formatting costs ~1.7x as much): the envelope's fields are strings the writer made (the
# id, the ts: nothing in them to escape) or JSON texts (type, turn id: `_JSON`), and the data is
# the only part orjson encodes. `test_store_line_parts` and `test_store_event_bytes` hold the two
# to the same bytes.
_V = f'{{"v":{SCHEMA_VERSION},"id":"'
_PROV = f',"prov":"{PROV_RUNTIME}","data":'
_TAIL = b"}\n"
# JSON texts of the types and turn ids seen lately (a request's events share theirs), each made
# once by orjson (`_json`). Cleared when it grows past `_JSON_MAX`: turn ids are new every turn.
_JSON: dict[Any, str] = {None: "null"}
_JSON_MAX = 512


def _json(value: Any) -> str:
    """`value` (a type or a turn id) as orjson writes it, remembered when it is a string; TypeError
    when it is not JSON-native (the event then takes the `settle` path)."""
    text = orjson.dumps(value, option=_STRICT).decode()
    if type(value) is str:
        if len(_JSON) >= _JSON_MAX:
            _JSON.clear()
            _JSON[None] = "null"
        _JSON[value] = text
    return text


class Clean(NamedTuple):
    """A batch that one scan cleared: its UTC day, its lines, the lines joined, and each event's
    data as it was encoded (a `Deferred` made)."""

    day: str
    lines: list[bytes]
    blob: bytes
    datas: list[dict[str, Any]]


def settle_clean(staged: Sequence[Staged]) -> Clean | None:
    """The lines `settle_many` would give these stamped events, when they are of one UTC day and one
    scan of their data clears every one (no `redact` walk runs, no line is None); None otherwise (see
    the contract). Each line is a bytes object of its own size (joined from its parts, not an
    encoder's buffer). The events staged together share their `ts` (one string): most are passed
    over by identity in the one-day check."""
    ts0 = staged[0][1]
    day = ts0[:10]
    dumps, strict = orjson.dumps, _STRICT
    v, prov, tail, js = _V, _PROV, _TAIL, _JSON
    datas: list[dict[str, Any]] = []
    encoded: list[bytes] = []
    lines: list[bytes] = []
    try:
        for id_, ts, (t, data, turn) in staged:
            if ts is not ts0 and not ts.startswith(day):
                return None
            if type(data) is not dict:  # `made`, without a call for the usual dict
                data = data.resolve() if type(data) is Deferred else dict(data)
            b = dumps(data, option=strict)
            datas.append(data)
            encoded.append(b)
            head = (
                f'{v}{id_}","type":{js.get(t) or _json(t)},"ts":"{ts}",'
                f'"turn_id":{js.get(turn) or _json(turn)}{prov}'
            )  # one string built (adjacent f-strings are one)
            lines.append(b"".join((head.encode(), b, tail)))
    except TypeError:  # not JSON-native (orjson's errors are TypeErrors), or an unhashable type
        return None
    if (_match or _matcher())(b"\n".join(encoded)) is not None:  # `may_need_redaction`, one call less
        return None
    # The tuple made in C (a NamedTuple's own `__new__` is a Python frame); a batch per write.
    return _tuple_new(Clean, (day, lines, b"".join(lines), datas))


# `redact.blob_matcher()`, kept once the first batch asked for it (the patterns compile on first use).
_match: Callable[[bytes], Any] | None = None
_tuple_new = tuple.__new__


def _matcher() -> Callable[[bytes], Any]:
    global _match
    _match = blob_matcher()
    return _match


def settle_many(items: Sequence[Pending]) -> list[Settled]:
    """`[settle(item) for item in items]` (see the contract)."""
    if items:
        clean = settle_clean([(id_, ts, (t, data, turn)) for id_, t, ts, turn, data in items])
        if clean is not None:
            return [(event_of(*item), line, False) for item, line in zip(items, clean.lines, strict=True)]
    return [settle(item) for item in items]


def settle(item: Pending) -> Settled:
    """A pending event -> (the redacted event, its JSONL line or None, whether `redact` ran)."""
    ev = event_of(*item)
    try:
        line = orjson.dumps(ev, option=_LINE)
    except TypeError:
        return _walked(item)  # not JSON-native: the full walk
    return _settled(item, ev, line)


def _settled(item: Pending, ev: dict[str, Any], line: bytes) -> Settled:
    # One RE2 scan of the line to be written clears most events at once (about half the cost
    # of the walk below, which goes field by field from Python); the walk, with its caches,
    # clears what that scan finds suspect in a field it has seen before.
    if not may_need_redaction(line) or _clean(item[4]):
        return ev, line, False
    return _walked(item)


def _walked(item: Pending) -> Settled:
    id_, type_, ts, turn_id, data = item
    ev = event_of(id_, type_, ts, turn_id, redact(data))  # redact returns a copy
    try:
        return ev, log.encode(ev), True
    except TypeError:  # e.g. an integer beyond 64 bits
        return ev, None, True


def made(data: Mapping[str, Any]) -> dict[str, Any]:
    """Staged data made into a dict to settle: a `Deferred` is made here, once; another mapping copied."""
    if type(data) is dict:
        return data
    return data.resolve() if type(data) is Deferred else dict(data)
