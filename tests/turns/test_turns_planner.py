"""What strategies need from `Turns`: an injected planner whose Plan `open` returns (and records in the
decision's `RouteDecided`), a family bound to the cloud through the API (`bind_cloud`), and
`routing.local_only` in force as `Turns.local_only`."""

from __future__ import annotations

from typing import Any

import pytest

from glider_cli.config.load import load_config
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import RouteDecision
from glider_cli.router import Router
from glider_cli.router.plan import Member, Plan
from glider_cli.router.sticky_view import StickyView
from glider_cli.turns.lifecycle import Turns
from routing_helpers import message

PLAN = Plan("fan_out", (Member("ollama", "local"), Member("origin", "cloud")), "first", None, 2, 5.0, 9.0)


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(load_config(profile="default"))


def _turns(router: Router, asked: list[Any], plan: Plan | None = PLAN) -> Turns:
    def planner(protocol: str, decision: RouteDecision, view: StickyView | None) -> Plan | None:
        asked.append((protocol, decision.rule, view))
        return plan

    return Turns(
        router,
        StickySettings(),
        ToolFollowupSettings(),
        clock=lambda: 0.0,
        new_id=lambda: "t1",
        planner=planner,
    )


def test_open_returns_the_planners_plan_and_records_it(router: Router) -> None:
    asked: list[Any] = []
    turns = _turns(router, asked)
    opened = turns.open(message("say hi /local"))
    assert opened.strategy is PLAN
    assert asked == [("anthropic", opened.decision.rule, opened.plan.view)]
    assert opened.decision.plan == PLAN.to_dict()
    decided = dict(next(d for kind, d, _ in opened.events if kind == "RouteDecided"))
    assert decided["plan"] == PLAN.to_dict() and decided == opened.decision.to_record()


def test_no_plan_no_record_and_count_tokens_is_never_planned(router: Router) -> None:
    asked: list[Any] = []
    opened = _turns(router, asked, plan=None).open(message("say hi /local"))
    assert opened.strategy is None and opened.decision.plan is None
    decided = dict(next(d for kind, d, _ in opened.events if kind == "RouteDecided"))
    assert "plan" not in decided
    asked.clear()
    counted = _turns(router, asked).open(message("say hi /local"), count_tokens=True)
    assert asked == [] and counted.strategy is None


def test_bind_cloud_binds_a_local_decisions_family_to_the_cloud(router: Router) -> None:
    turns = _turns(router, [])
    opened = turns.open(message("say hi"))
    assert opened.decision.target == "local" and not turns.state(opened.turn_id)["bound"]
    events = turns.bind_cloud(opened)
    bound = [d for kind, d, _ in events if kind == "StickyBound"]
    assert len(bound) == 1 and bound[0]["target"] == "cloud" and bound[0]["family"] == opened.turn_id
    assert turns.state(opened.turn_id)["bound"] is True


def test_local_only_follows_use(router: Router) -> None:
    turns = _turns(router, [])
    assert turns.local_only is False
    turns.use(router, local_only=True)
    assert turns.local_only is True
