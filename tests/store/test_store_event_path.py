"""The event path's helpers made cheaper in issue 29 give what the plain forms gave."""

from __future__ import annotations

import random
import time

import orjson

from glider_cli.domain import model_label
from glider_cli.store.eventlog.events import IdGenerator, format_ts
from glider_cli.store.index import digests


def test_many_ids_are_the_consecutive_ids_across_the_shared_stem_boundary() -> None:
    for seed in range(400):
        random.seed(seed)
        ids = IdGenerator(lambda: 1_796_169_599.5)
        n = 1 + seed % 300  # batches that cross a 256-id boundary and ones that do not
        got = ids.many(n)
        first = int(got[0][12:], 16)
        assert got == [f"{got[0][:12]}{c:020x}" for c in range(first, first + n)]
        assert ids() == f"{got[0][:12]}{first + n:020x}"  # the counter goes on from there


def test_format_ts_reuses_the_millisecond_and_moves_with_it() -> None:
    for t in (0.0, 1_796_169_599.9994, 1_796_169_599.9996, 1_796_169_600.0, 1_796_169_600.0009, 1e9 + 0.001):
        for _ in range(2):
            ms = int(t * 1000)
            second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
            assert format_ts(t) == f"{second}.{ms % 1000:03d}Z"


def _where_reference(d: dict[str, object]) -> str:
    model = d.get("model")
    return "/".join(str(x) for x in (d.get("backend"), model_label(str(model)) if model else None) if x)


def test_where_and_digests_of_match_the_reference() -> None:
    backends: list[object] = [None, "", "origin", 0, 7, True]
    models: list[object] = [None, "", "claude-x", "/m/qwen.gguf", "./", "/", "C:\\m\\a.gguf", 3]
    for b in backends:
        for m in models:
            d = {"backend": b, "model": m, "target": "local", "rule": "r"}
            assert digests._where(d) == _where_reference(d), d
    items = [
        (
            "01",
            "RouteDecided",
            "2026-12-01T00:00:00.000Z",
            "t1",
            {"target": "cloud", "backend": "o", "rule": "r"},
        ),
        ("02", "StickyBound", "2026-12-01T00:00:00.000Z", None, {"family": "t1"}),
        (
            "03",
            "FulfilledLocal",
            "2026-12-01T00:00:00.000Z",
            "t1",
            {"backend": "l", "files": ["a", "a", "b"]},
        ),
    ]
    staged = [(id_, ts, (t, data, turn)) for id_, t, ts, turn, data in items]
    lines = [b"x" * 10, b"y" * 20, b"z" * 5]  # each digest holds its line's offset from the first's
    want = []
    for (id_, t, ts, turn, data), at, n in zip(items, (0, 10, 30), (10, 20, 5), strict=True):
        if turn:
            dg = digests.digest_of(id_, ts, t, turn, data)
            dg[0], dg[1] = at, n
            want.append(dg)
    assert digests.digests_of(staged, [data for *_, data in items], lines) == want


def test_the_set_scan_answers_as_search_does() -> None:
    from glider_cli.store.eventlog import redact

    samples = [
        b"",
        b'{"a":1}',
        b'{"text":"use sk-ant-api03-AbCdEfGhIjKlMnOp now"}',
        b'{"x-api-key":"v"}',
        b'{"max_tokens":5,"estimated_tokens":4}',
        b'{"h":"Authorization: Basic Zm9v"}',
        '{"k":"\u212a"}'.encode(),
        b'{"a_token" :"v"}',
        b'{"a_token\\n":"v"}',
        b"x" * 5000 + b"AKIAIOSFODNN7EXAMPLE",
    ]
    for blob in samples:
        assert redact.may_need_redaction(blob) is (redact.patterns().blob.search(blob) is not None), blob
    assert [redact.may_need_redaction(b) for b in samples] == [
        False, False, True, True, False, True, True, True, True, True
    ]  # fmt: skip


def test_the_ring_keeps_a_fresh_copy_of_each_line() -> None:
    from glider_cli.store.eventlog import ring

    line = orjson.dumps({"text": "x" * 300}, option=orjson.OPT_APPEND_NEWLINE)
    r = ring.Ring(4)
    r.add_lines(["01"], [line])
    kept = r.tail()[0]
    assert isinstance(kept, tuple) and kept[1] == line and kept[1] is not line


def _opened_reference(d: dict[str, object]) -> dict[str, object]:
    """`digests._opened` as it was: the whole ask cleaned, then cut."""
    x: dict[str, object] = {}
    ask = d.get("goal") or d.get("ask") or ""
    if ask:
        run = d.get("delegate_of")
        mark = f"[delegate run of turn {str(run)[:12]}] " if run else ""
        x["asked"] = (mark + " ".join(str(ask).split()))[: digests.ASK_CHARS]
        if isinstance(ask, str):
            x["text"] = ask[: digests.TEXT_CHARS]
    if isinstance(d.get("session_id"), str) and d["session_id"]:
        x["session"] = d["session_id"]
    for k in digests.TURN_KEYS:
        v = d.get(k)
        if isinstance(v, str) and v:
            x[k] = v
    return x


def test_every_whitespace_but_the_space_is_not_printable() -> None:
    """`digests._asked` takes a printable prefix without double spaces as cleaned already."""
    for cp in range(0x110000):
        c = chr(cp)
        if c.isspace() and c != " ":
            assert not c.isprintable(), hex(cp)


def test_an_ask_cleaned_from_its_prefix_is_the_whole_ask_cleaned_and_cut() -> None:
    rng = random.Random(4242)
    alphabet = ["a", "b", "\u00e9", "\u4e2d", " ", " ", "  ", "\n", "\t", "\u00a0", "\u2028", "\x1f", "\x85"]
    words = ["x", "word", "y" * 37, "z" * 450]
    for _ in range(3000):
        pick = rng.random()
        if pick < 0.4:
            ask = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 900)))
        elif pick < 0.8:
            gap = rng.choice([" ", "  ", "\n", " " * rng.randint(1, 300)])
            ask = gap.join(rng.choice(words) for _ in range(rng.randint(1, 120))) + rng.choice(["", " "])
        else:
            ask = " " * rng.randint(0, 2000) + rng.choice(words) + rng.choice(["", " ", "\n\n"])
        limit = rng.choice([digests.ASK_CHARS, digests.ASK_CHARS - 36, 1, 3])
        assert digests._asked(ask, limit) == " ".join(ask.split())[:limit], (ask, limit)


def test_a_turn_opened_digests_of_gives_what_it_gave() -> None:
    """`_opened` (from any data) and `digests_of`'s part of a TurnOpened (data encoded strictly as
    JSON) give what `_opened` gave."""
    rng = random.Random(4343)
    asks: list[object] = [None, "", "fix  it\nnow", " hi ", "x" * 700, "a " * 400, 7, ["a", "b"], {"k": 1}]
    asks += ["\n" * 300 + "late words " * 30, "say hi ", "/cloud say hi"]
    others: list[object] = [None, "", "s1", "/r", 3, ["x"], True]
    for round_ in range(3000):
        d: dict[str, object] = {}
        for k in ("goal", "ask"):
            if rng.random() < 0.6:
                d[k] = rng.choice(asks)
        for k in ("session_id", "plan", "clone_path", "delegate_of"):
            if rng.random() < (0.15 if k == "delegate_of" else 0.4):
                d[k] = rng.choice([*others, "0123456789abcdef0123"])
        want = _opened_reference(d)
        assert digests._opened(d) == want, d
        got = digests.digests_of([(f"{round_:032x}", "ts", ("TurnOpened", d, "t1"))], [d], [b"x"])
        assert got[0][6] == want, d
        assert orjson.dumps(got[0][6]) == orjson.dumps(want)
