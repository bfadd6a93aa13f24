"""The writer's usual batch (`settle.settle_clean`) joins each line from its parts: the envelope from
the writer's own strings, then the data as orjson encodes it. The lines must be the bytes the whole
event encoded by orjson gives, and one scan of the data must never clear an event `redact` would
change; the ids made as bytes turned to hex must be those the format spec gave."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from glider_cli.domain import Deferred
from glider_cli.store.eventlog import settle
from glider_cli.store.eventlog.events import IdGenerator, event_of
from glider_cli.store.eventlog.redact import redact

TS = "2026-12-01T10:00:00.123Z"
TEXTS = [
    "",
    "plain",
    "caf\u00e9 \u00fcber \u4e2d\u6587 \U0001f680",
    'quote " and back\\slash',
    "line\nbreak\ttab\r\x00\x1f control",
    "\u2028\u2029 separators",
    "x" * 3000,
]
SECRETS = [
    "sk-ant-api03-AbCdEfGhIjKlMnOp",
    "Bearer abcdefghijkl",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_0123456789abcdefABCDEF",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
]


def _value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return rng.choice(TEXTS)
    if pick == 1:
        return rng.choice((0, -1, 7, 2**63 - 1, -(2**63)))
    if pick == 2:
        return rng.choice((0.5, -1e300, 2.5e-8, 1796658029.5235488))
    if pick == 3:
        return rng.choice((True, False, None))
    if pick == 4:
        return rng.choice(("cloud", "origin", "explicit_cloud"))
    if pick == 5:
        return rng.choice(TEXTS[:3])
    if pick in (6, 7):
        return {
            rng.choice(("rule", "reason", "k\u00e9y", "", 'a"b')): _value(rng, depth + 1) for _ in range(3)
        }
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _whole(id_: str, t: str, ts: str, turn: str | None, data: dict[str, Any]) -> bytes:
    return orjson.dumps(event_of(id_, t, ts, turn, data), option=orjson.OPT_APPEND_NEWLINE)


def test_a_line_joined_from_its_parts_is_the_whole_event_encoded() -> None:
    rng = random.Random(41)
    types = ["RouteDecided", "Note", "T\u00fcrn", 'odd"type', "line\nbreak"]
    turns = [None, "01a25129e3d36dea3b1122838af629a2", "t\u00e9", 'q"uote', ""]
    for b in range(400):
        items = []
        for i in range(rng.randint(1, 6)):
            data = {rng.choice(("ask", "trace", "family", "n", "\u00e9")): _value(rng, 0) for _ in range(4)}
            items.append((f"{b:016x}{i:016x}", TS, (rng.choice(types), data, rng.choice(turns))))
        clean = settle.settle_clean(items)
        assert clean is not None, items
        want = [_whole(id_, t, ts, turn, d) for id_, ts, (t, d, turn) in items]
        assert clean.lines == want
        assert clean.blob == b"".join(want)
        assert clean.day == TS[:10]
        assert clean.datas == [d for _, _, (_, d, _) in items]


def test_made_data_is_encoded_and_handed_back() -> None:
    made = {"target": "cloud", "trace": [{"rule": "r", "matched": True}]}
    items = [("0" * 32, TS, ("RouteDecided", Deferred(lambda: made), "t1"))]
    clean = settle.settle_clean(items)
    assert clean is not None and clean.datas == [made]
    assert clean.lines == [_whole("0" * 32, "RouteDecided", TS, "t1", made)]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_anywhere_in_any_events_data_stops_the_batch(secret: str) -> None:
    """Deep in a nested record, under a sensitive name, or in a two-item header pair: `settle_clean`
    never clears it, and settling event by event redacts it."""
    places: list[dict[str, Any]] = [
        {"trace": [{"rule": "r", "reason": f"saw {secret}"}]},
        {"family": {"kind": "new_turn", "deep": [[{"x": secret}]]}},
        {"headers": [["X-Api-Key", "opaque-value-42"]]},
        {"request": {"client_secret": "opaque-value-42"}},
        {"ask": secret},
    ]
    for data in places:
        clean_events = [("a" * 32, TS, ("Note", {"text": "fine"}, "t1"))]
        items = [*clean_events, ("b" * 32, TS, ("RouteDecided", data, "t1"))]
        assert settle.settle_clean(items) is None, data
        pending = [(id_, t, ts, turn, d) for id_, ts, (t, d, turn) in items]
        settled = settle.settle_many(pending)
        _, line, ran = settled[1]
        assert ran and line is not None
        assert secret.encode() not in line and b"opaque-value-42" not in line
        assert orjson.loads(line)["data"] == redact(data)


def test_two_days_or_a_value_not_json_native_take_the_event_by_event_path() -> None:
    other_day = "2026-12-02T00:00:00.001Z"
    assert (
        settle.settle_clean([("a" * 32, TS, ("Note", {}, None)), ("b" * 32, other_day, ("Note", {}, None))])
        is None
    )
    assert settle.settle_clean([("a" * 32, TS, ("Note", {"t": {1, 2}}, None))]) is None
    assert settle.settle_clean([("a" * 32, TS, ("Note", {"n": 2**64, "b": b"x"}, None))]) is None
    assert settle.settle_clean([("a" * 32, TS, ("Note", {}, 5))]) is not None  # a number is JSON


def test_the_envelope_is_the_writers_own_and_is_written_as_given() -> None:
    """A turn id is never redacted (the walk redacts `data` only): the one scan leaves it out."""
    turn = "Bearer abcdefghijkl"
    clean = settle.settle_clean([("a" * 32, TS, ("Note", {"text": "fine"}, turn))])
    assert clean is not None and clean.lines == [_whole("a" * 32, "Note", TS, turn, {"text": "fine"})]
    assert settle.settle((("a" * 32), "Note", TS, turn, {"text": "fine"}))[1] == clean.lines[0]


def test_ids_made_as_hex_bytes_are_those_the_format_spec_made() -> None:
    t = [1_796_658_029.523]
    gen = IdGenerator(lambda: t[0])
    random.seed(7)
    got = gen.many(3) + gen.many(300) + [gen()]  # the second crosses a 256-id boundary
    random.seed(7)
    first = random.getrandbits(79)
    ms = int(t[0] * 1000)
    assert got == [f"{ms:012x}{c:020x}" for c in range(first, first + 304)]
    assert list(gen.run(2)) == [f"{ms:012x}{c:020x}" for c in range(first + 304, first + 306)]


def test_digests_of_remembers_only_what_repeats_exactly() -> None:
    """`digests_of` remembers decisions and outcome lines by the values they are made of: values that
    are equal but not the same (1, 1.0, True; a string and a dict with that kind) and values that
    cannot be keys never get another's part, and every digest is `digest_of`'s."""
    from glider_cli.store.index import digests

    rng = random.Random(4141)
    pool: list[Any] = [None, "cloud", "origin", "title", "", 1, 1.0, True, 200, 200.0, [1], {"kind": "title"}]
    fields = (
        "target",
        "backend",
        "model",
        "delegate",
        "rule",
        "strategy",
        "request_kind",
        "status",
        "outcome",
    )
    fields += ("error", "side", "client_disconnected", "family", "plan", "output_tokens", "files")
    types = ["RouteDecided", "FulfilledLocal", "OriginPassthrough", "UpstreamFailed", "DelegateRun", "Note"]
    for round_ in range(3000):
        data = {f: rng.choice(pool) for f in rng.sample(fields, rng.randint(0, 8))}
        if rng.random() < 0.3:
            data["family"] = {"kind": rng.choice(pool[:5])}
        if rng.random() < 0.2:
            data["plan"] = {"strategy": rng.choice(("single", "fan_out", None))}
        if rng.random() < 0.1:
            data["outcome"] = rng.choice(("failed", "cut", "refused", "abandoned"))
        t = rng.choice(types)
        staged = [(f"{round_:032x}", TS, (t, data, "t1"))]
        got = digests.digests_of(staged, [data], [b"x" * 7])
        want = digests.digest_of(f"{round_:032x}", TS, t, "t1", data)
        want[0], want[1] = 0, 7
        assert got == [want], (t, data)
        assert orjson.dumps(got[0]) == orjson.dumps(want)
