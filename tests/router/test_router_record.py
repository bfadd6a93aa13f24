"""The logged `RouteDecided` record (`RouteDecision.to_record`) against the explain view (`to_dict`)."""

from __future__ import annotations

import orjson
import pytest

from glider_cli.config.load import load_config
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import Reason, RequestSummary, RouteDecision
from glider_cli.router import Router
from glider_cli.turns.lifecycle import Turns
from routing_helpers import message


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_config(profile="default"))


def test_the_record_counts_the_rules_that_were_not_reached(router: Router) -> None:
    d = router.decide(message("fix the failing test", tools=True))
    full, record = d.to_dict(), d.to_record()
    assert d.rule == "task_classifier.tools"
    tail = [r for r in full["trace"] if r["reason"].startswith("not reached:")]
    assert [r["rule"] for r in tail] == [r.name for r in router.rules][4:]
    assert all("not reached" not in r["reason"] for r in record["trace"])
    assert record["not_reached"] == len(tail) == 8
    # Everything else, including every evaluated verdict in order, is the explain view's.
    assert record["trace"] == full["trace"][: len(full["trace"]) - len(tail)]
    assert {k: v for k, v in record.items() if k not in ("trace", "not_reached")} == {
        k: v for k, v in full.items() if k != "trace"
    }
    saved = len(orjson.dumps(full)) - len(orjson.dumps(record))
    assert saved > 600


def test_the_winner_ends_the_records_trace(router: Router) -> None:
    d = router.decide(message("hello"))
    assert d.to_record()["not_reached"] == len(router.rules) - 1 - [r.name for r in router.rules].index(
        d.rule
    )
    assert d.to_record()["trace"][-1] == d.to_dict()["trace"][d.tail[0] - 1]


def test_the_proxy_logs_the_record_and_explain_keeps_every_line(router: Router) -> None:
    turns = Turns(router, StickySettings(), ToolFollowupSettings(), clock=lambda: 0.0, new_id=lambda: "t1")
    chat = message("fix the failing test", tools=True)
    opened = turns.open(chat)
    data = dict(next(d for kind, d, _ in opened.events if kind == "RouteDecided"))
    assert data == opened.decision.to_record()
    assert len(opened.decision.to_dict()["trace"]) == len(data["trace"]) + data["not_reached"]


def test_the_record_leaves_out_the_tails_lines_wherever_they_are() -> None:
    lines = tuple(Reason(f"r{i}", i, i == 0, f"why {i}") for i in range(5))
    summary = RequestSummary(3, False)

    def record(tail: tuple[int, int]) -> tuple[list[str], int]:
        d = RouteDecision("cloud", "r0", 0, "b", None, None, "single", None, summary, lines, tail=tail)
        r = d.to_record()
        return [line["rule"] for line in r["trace"]], r["not_reached"]

    assert record((1, 4)) == (["r0"], 4)  # the lines after the winner: the usual tail
    assert record((1, 2)) == (["r0", "r3", "r4"], 2)
    assert record((0, 0)) == (["r0", "r1", "r2", "r3", "r4"], 0)
