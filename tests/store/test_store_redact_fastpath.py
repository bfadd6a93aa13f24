"""`redact.may_need_redaction`: the writer's fast path must never clear a value `redact` would change."""

from __future__ import annotations

import random
from typing import Any

import orjson

from glider_cli.store.eventlog.redact import REDACTED, may_need_redaction, redact, sensitive_name

NAMES = [
    "Authorization",
    "proxy-authorization",
    "X-Api-Key",
    "x_goog_api_key",
    "openai_api_key",
    "apikey",
    "refresh_token",
    "TOKEN",
    " token\t",
    "token\u00a0",
    "\u2003secret",
    "client_secret",
    "Password",
    "passwd",
    "private_key",
    "credentials",
    "Bearer",
    "x-key",
    "x-custom-key",
    "X_Other_KEY",
    "to\u212aen",  # the Kelvin sign lower-cases to "k"
    "x-\u0130-key",
    "set-cookie",
    "SecretAccessKey",
    "secretAccessKey",
    "aws_secret_access_key",
    "SessionToken",
    "AccountKey",
    "clientSecret",
]
HARMLESS = [
    "max_tokens",
    "input_tokens",
    "estimated_tokens",
    "model",
    "keyword",
    "tokens",
    "monkey",
    "x",
    "rule",
    "hello world",
    "a\nb",
    'quote " inside',
    "back\\slash",
    "caf\u00e9",
    "",
    "local",
    "claude-sonnet-4",
]
# Not sensitive, but the fast path is allowed to send them down the full walk.
SUSPECT_ONLY = ["family_key", "monkey_token", "Asia", "bearer of news"]
SHAPED = [
    "sk-ant-api03-AbCdEfGhIjKl",
    "Bearer abc.def-ghi",
    "ghp_abcdefghijklmnop0123",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2hlcmU",
    "sk_live_51Habcdefghijklmnop",
    "Authorization: Basic dXNlcjpwYXNz",
    "AccountKey=Eby8vdM02xNOcqFlEby8vdM02xNOcqFl==",
]


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        pick = rng.random()
        if pick < 0.1:
            return rng.choice([1, 2.5, None, True, 1024])
        if pick < 0.2:
            return rng.choice(NAMES + SHAPED)
        return rng.choice(HARMLESS + SUSPECT_ONLY) + rng.choice(["", " ", "x"])
    if roll < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.7:
        return [rng.choice(NAMES + HARMLESS), rng.choice(HARMLESS + SHAPED)]
    keys = [rng.choice(NAMES + HARMLESS + SUSPECT_ONLY) for _ in range(rng.randint(0, 4))]
    return {k: _value(rng, depth + 1) for k in keys}


def test_every_sensitive_name_is_suspect() -> None:
    for name in NAMES:
        assert sensitive_name(name), name
        assert may_need_redaction(orjson.dumps({name: "v"})), name
        assert may_need_redaction(orjson.dumps([name, "v"])), name


def test_harmless_values_take_the_fast_path() -> None:
    for name in HARMLESS:
        assert not sensitive_name(name), name
        assert not may_need_redaction(orjson.dumps({name: name, "n": [name, 1]})), name
    decision = {"target": "cloud", "rule": "cloud-slash", "model": None, "reasons": [["rule", "x"]]}
    assert not may_need_redaction(orjson.dumps(decision))


def test_a_cleared_value_is_left_unchanged_by_redact() -> None:
    rng = random.Random(20261129)
    suspects = 0
    for _ in range(20000):
        value = {"data": _value(rng, 0)}
        if may_need_redaction(orjson.dumps(value)):
            suspects += 1
        else:
            assert redact(value) == value, value
    assert 0 < suspects < 20000


def test_shaped_secrets_are_suspect_and_redacted() -> None:
    for secret in SHAPED:
        value = {"error": f"upstream said: {secret} is bad"}
        assert may_need_redaction(orjson.dumps(value))
        assert REDACTED in redact(value)["error"]


def test_the_writer_writes_what_the_full_walk_would() -> None:
    from glider_cli.store.eventlog import log
    from glider_cli.store.eventlog.events import make_event
    from glider_cli.store.eventlog.settle import settle

    rng = random.Random(7)
    walked = 0
    for i in range(5000):
        data = {rng.choice(NAMES + HARMLESS + SUSPECT_ONLY): _value(rng, 1) for _ in range(rng.randint(0, 4))}
        item = (f"{i:032x}", "Note", "2026-11-29T00:00:00.000Z", "t", dict(data))
        ev, line, ran = settle(item)
        expected = make_event(item[0], "Note", item[2], "t", redact(data))
        assert line == log.encode(expected), data
        assert ev == expected
        walked += ran
    assert 0 < walked < 5000


def test_a_batch_settles_as_its_events_do_one_by_one() -> None:
    """`settle_many` (one scan of the batch's lines) gives what `settle` gives event by event: a
    secret in any event of a batch is redacted in that event only, and a batch of clean events
    (one scan) is written as the walk would write it."""
    from glider_cli.store.eventlog import log
    from glider_cli.store.eventlog.events import make_event
    from glider_cli.store.eventlog.settle import settle, settle_many

    rng = random.Random(29)
    batches = suspect_batches = 0
    for b in range(1500):
        items = []
        for i in range(rng.randint(1, 6)):
            pool = NAMES + HARMLESS + SUSPECT_ONLY if rng.random() < 0.3 else HARMLESS
            data = {rng.choice(pool): _value(rng, 1) for _ in range(rng.randint(0, 4))}
            if rng.random() < 0.05:
                data["odd"] = (1, b"x")  # not JSON-native: the batch goes event by event
            items.append(
                (f"{b:016x}{i:016x}", "Note", "2026-11-29T00:00:00.000Z", rng.choice(("t", None)), data)
            )
        got = settle_many([(a, t, ts, turn, dict(d)) for a, t, ts, turn, d in items])
        want = [settle((a, t, ts, turn, dict(d))) for a, t, ts, turn, d in items]
        assert got == want
        for (ev, line, _), (id_, t, ts, turn, data) in zip(got, items, strict=True):
            expected = make_event(id_, t, ts, turn, redact(data))
            assert ev == expected and line == log.encode(expected), data
        batches += 1
        suspect_batches += any(ran for _, _, ran in got)
    assert 0 < suspect_batches < batches
