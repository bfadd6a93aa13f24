"""The usage view over events (store.usage) and its kept day digests (store.usage_read): a strategy's
chosen member counted once, judge and losing members counted, delegate runs apart, OpenAI cached
tokens taken out of the input, savings only for local outcomes, rows per day/model/rule/session with
the turns' local share and regret rate; a day digest read on from where it stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from glider_cli.config.pricing import Price, PriceTable
from glider_cli.store.views.usage import Digest, report, report_events
from glider_cli.store.views.usage_read import day_digest, digests

PRICES = (Price("cloud-big", 10, 100), Price("cloud-small", 1, 10))
_n = [0]


def _e(type_: str, turn: str | None, data: dict[str, Any], day: str = "2026-11-30") -> dict[str, Any]:
    _n[0] += 1
    return {
        "v": 1,
        "id": f"{_n[0]:032x}",
        "type": type_,
        "ts": f"{day}T10:00:00.000Z",
        "turn_id": turn,
        "data": data,
    }


def _out(kind: str, turn: str, model: str, tin: int, tout: int, **extra: Any) -> dict[str, Any]:
    data = {"backend": "b", "model": model, "status": 200, "input_tokens": tin, "output_tokens": tout}
    data.update(rule=extra.pop("rule", "r"), requested_model=extra.pop("requested", "cloud-big"), **extra)
    return _e(kind, turn, data)


def test_calls_costs_and_savings() -> None:
    evs = [
        _e("TurnOpened", "t1", {"session_id": "s1"}),
        _out("FulfilledLocal", "t1", "qwen", 1000, 100, rule="small"),
        _e("TurnOpened", "t2", {"session_id": "s2"}),
        _out(
            "OriginPassthrough", "t2", "cloud-small", 2000, 200, cache_read_tokens=1500, cache_in_input=True
        ),
        # A fan_out: two members, the chosen one (#1) is also the outcome event, counted once.
        _e("TurnOpened", "t3", {"session_id": "s1"}),
        _e(
            "StrategyMember",
            "t3",
            {"index": 0, "side": "cloud", "model": "cloud-big", "input_tokens": 10, "output_tokens": 1},
        ),
        _e(
            "StrategyMember",
            "t3",
            {"index": 1, "side": "local", "model": "qwen", "input_tokens": 10, "output_tokens": 2},
        ),
        _e(
            "StrategyMember",
            "t3",
            {
                "index": 2,
                "role": "judge",
                "side": "cloud",
                "model": "cloud-small",
                "input_tokens": 5,
                "output_tokens": 1,
            },
        ),
        _e("StrategyChosen", "t3", {"index": 1, "backend": "b"}),
        _out("FulfilledLocal", "t3", "qwen", 10, 2, rule="fan"),
        _e(
            "DelegateRun",
            "t3",
            {
                "vendor": "codex",
                "input_tokens": 50,
                "output_tokens": 20,
                "estimated": ["input_tokens", "output_tokens"],
            },
        ),
        _e("LocalRegret", "t1", {"kind": "repeat_cloud", "later_turn": "t9"}),
    ]
    r = report_events(evs, PriceTable(PRICES, bundled_prices=()), by="model")
    rows = {x["key"]: x for x in r["rows"]}
    t = r["totals"]
    assert t["calls"] == 6 and t["local_calls"] == 2 and t["cloud_calls"] == 3 and t["delegate_calls"] == 1
    assert rows["qwen"]["local_calls"] == 2 and rows["qwen"]["local_cost"] == 0
    # Savings: the local outcomes' tokens at the requested model's price (the member's are not).
    assert rows["qwen"]["savings"] == pytest.approx((1010 * 10 + 102 * 100) / 1e6)
    small = rows["cloud-small"]  # 500 uncached + 1500 cached (priced as input: no cache price) + judge
    assert small["input_tokens"] == 505 and small["cache_read_tokens"] == 1500
    assert small["cloud_cost"] == pytest.approx((505 + 1500) * 1 / 1e6 + 201 * 10 / 1e6)
    assert rows["cloud-big"]["cloud_cost"] == pytest.approx((10 * 10 + 1 * 100) / 1e6)
    assert rows["delegate:codex"]["tokens"]["delegate"] == 70 and t["estimated_calls"] == 1
    assert t["turns"] == 3 and t["local_turns"] == 1 and t["regrets"] == 1 and t["regret_rate"] == 1.0
    by_session = {
        x["key"]: x for x in report_events(evs, PriceTable(PRICES, bundled_prices=()), by="session")["rows"]
    }
    assert set(by_session) == {"s1", "s2"} and by_session["s1"]["turns"] == 2
    by_rule = {
        x["key"]: x for x in report_events(evs, PriceTable(PRICES, bundled_prices=()), by="rule")["rows"]
    }
    assert by_rule["small"]["regret_rate"] == 1.0 and by_rule["small"]["local_turn_share"] == 1.0
    assert r["daily"] == [
        {
            "day": "2026-11-30",
            "cloud_cost": pytest.approx(t["cloud_cost"]),
            "savings": pytest.approx(t["savings"]),
            "local_tokens": 1112,
            "cloud_tokens": t["tokens"]["cloud"],
        }
    ]


def test_an_unpriced_cloud_model_is_listed_and_a_bad_by_refused() -> None:
    evs = [_out("OriginPassthrough", "t1", "mystery-1", 10, 10)]
    r = report_events(evs, PriceTable((), bundled_prices=()))
    assert r["unpriced"] == ["mystery-1"] and r["totals"]["cloud_cost"] == 0
    with pytest.raises(ValueError):
        report([], PriceTable((), bundled_prices=()), by="week")


def _write(path: Path, evs: list[dict[str, Any]]) -> None:
    with path.open("a") as fh:
        for e in evs:
            fh.write(json.dumps(e, separators=(",", ":")) + "\n")


def test_a_day_digest_is_kept_and_read_on_from_where_it_stopped(tmp_path: Path) -> None:
    ctx = tmp_path / "context"
    ctx.mkdir()
    from datetime import UTC, datetime

    today = datetime.now(UTC).date().isoformat()
    day = ctx / f"events-{today}.jsonl"
    first = [
        _e("TurnOpened", "t1", {"session_id": "s"}, today),
        _out("OriginPassthrough", "t1", "cloud-big", 5, 5),
    ]
    first[1]["ts"] = first[0]["ts"]
    _write(day, first)
    d1 = day_digest(ctx, day)
    kept = ctx / "index" / f"events-{today}.usage"
    assert kept.is_file() and sum(g[0] for g in d1.groups.values()) == 1
    # A member whose StrategyChosen is not written yet stays pending in the kept digest...
    member = _e(
        "StrategyMember", "t1", {"index": 0, "side": "cloud", "model": "cloud-big", "input_tokens": 7}, today
    )
    _write(day, [member])
    assert day_digest(ctx, day).pending
    # ...and is settled by the append that brings it (the chosen one: counted by its outcome event).
    _write(
        day,
        [_e("StrategyChosen", "t1", {"index": 0}, today), _out("OriginPassthrough", "t1", "cloud-big", 7, 0)],
    )
    before = kept.read_bytes()
    d3 = day_digest(ctx, day)
    assert not d3.pending and sum(g[0] for g in d3.groups.values()) == 2 and kept.read_bytes() != before
    # Nothing appended: the kept digest answers without reading the day file.
    day_copy = day.read_bytes()
    day.write_bytes(day_copy)  # same ident and size
    assert day_digest(ctx, day).to_json() == d3.to_json()
    # A day file made again (another first line): read whole again.
    day.unlink()
    _write(
        day, [_e("TurnOpened", "t7", {"session_id": "z"}, today), _out("FulfilledLocal", "t7", "qwen", 3, 3)]
    )
    d4 = day_digest(ctx, day)
    assert list(d4.sessions) == ["t7"] and sum(g[0] for g in d4.groups.values()) == 1
    assert report(digests(ctx, 1), PriceTable((), bundled_prices=()))["totals"]["local_calls"] == 1
    # A digest whose day file is gone (pruned) is removed.
    day.unlink()
    digests(ctx, 1)
    assert not kept.exists()


def test_digest_round_trips() -> None:
    d = Digest()
    d.feed([_e("TurnOpened", "t1", {"session_id": "s"}), _out("FulfilledLocal", "t1", "qwen", 1, 2)])
    assert Digest.from_json(json.loads(json.dumps(d.to_json()))).to_json() == d.to_json()


def test_the_day_file_ident_is_the_turn_index_s(tmp_path: Path) -> None:
    from glider_cli.store.index import index_day
    from glider_cli.store.views import usage_read

    f = tmp_path / "events-2026-11-30.jsonl"
    f.write_bytes(b"x" * 10)
    assert usage_read.file_ident(f) is None is index_day.file_ident(f)
    f.write_bytes(b'{"v":1,"id":"0123456789abcdef0123456789abcdef","type":"Note"}\n' * 3)
    assert usage_read.file_ident(f) == index_day.file_ident(f) is not None
    assert usage_read.index_dir(tmp_path) == index_day.index_dir(tmp_path)


def test_savings_are_priced_on_the_client_s_request_the_local_tokens_on_the_pack() -> None:
    # A local answer read a 616-token pack; the cloud would have read the client's 21,102-token request
    # (issue 39 §3): the local side's tokens and the savings' basis are two numbers, both shown.
    evs = [
        _e("TurnOpened", "t1", {"session_id": "s1"}),
        _out("FulfilledLocal", "t1", "qwen", 616, 18, client_input_tokens=21_102),
        _e("TurnOpened", "t2", {"session_id": "s1"}),
        # The title the client left before it was answered saved nothing.
        _out("FulfilledLocal", "t2", "qwen", 300, 0, client_input_tokens=0, status=0),
    ]
    t = report_events(evs, PriceTable(PRICES))["totals"]
    assert t["tokens"]["local"] == 616 + 18 + 300
    assert t["avoided_cloud_tokens"] == 21_102 + 18
    assert t["savings"] == pytest.approx((21_102 * 10 + 18 * 100) / 1e6)


def test_an_event_without_the_client_s_request_is_priced_on_its_input_as_before() -> None:
    evs = [_out("FulfilledLocal", "t1", "qwen", 1000, 100)]
    t = report_events(evs, PriceTable(PRICES))["totals"]
    assert t["avoided_cloud_tokens"] == 1100
    assert t["savings"] == pytest.approx((1000 * 10 + 100 * 100) / 1e6)
