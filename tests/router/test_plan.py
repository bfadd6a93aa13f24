"""The planner, pure: no HTTP (the judges: tests/proxy/test_strategy_judge.py)."""

from __future__ import annotations

from glider_cli.config.orchestration_settings import (
    MemberSettings,
    OrchestrationSettings,
    StageSettings,
    StrategySettings,
)
from glider_cli.domain import RequestSummary, RouteDecision
from glider_cli.router.plan import Member, plan_for

SIDES = {"ollama": "local", "vllm": "local", "origin": "cloud"}
DEFAULTS = {"local": "ollama", "cloud": "origin"}


def _decision(
    strategy: str, target: str = "local", backend: str | None = "ollama", model: str | None = None
) -> RouteDecision:
    return RouteDecision(target, "r", 1, backend, model, None, strategy, None, RequestSummary(10, False), ())  # type: ignore[arg-type]


def _on(**strategies: StrategySettings) -> OrchestrationSettings:
    return OrchestrationSettings(**strategies)


def test_single_and_disabled_strategies_have_no_plan() -> None:
    on = _on(fan_out=StrategySettings(enabled=True))
    assert plan_for(_decision("single"), on, SIDES, DEFAULTS) is None
    assert plan_for(_decision("pipeline"), on, SIDES, DEFAULTS) is None
    assert plan_for(_decision("fan_out"), _on(), SIDES, DEFAULTS) is None


def test_fan_out_samples_the_decision_model_width_times() -> None:
    on = _on(fan_out=StrategySettings(enabled=True, width=4))
    plan = plan_for(_decision("fan_out", model="q"), on, SIDES, DEFAULTS)
    assert plan is not None
    assert [(m.backend, m.model, m.temperature) for m in plan.members] == [
        ("ollama", "q", 0.2),
        ("ollama", "q", 0.7),
        ("ollama", "q", 1.0),
        ("ollama", "q", 0.2),
    ]
    assert plan.judge == "longest_agreement" and not plan.clouds and not plan.sequential


def test_fan_out_members_and_a_model_judge() -> None:
    s = StrategySettings(
        enabled=True,
        members=(MemberSettings("vllm", "big"), MemberSettings(None, None, 0.5), MemberSettings("nope")),
        judge="model",
        judge_model="small",
    )
    plan = plan_for(_decision("fan_out", model="q"), _on(fan_out=s), SIDES, DEFAULTS)
    assert plan is not None
    assert plan.members == (Member("vllm", "local", "big"), Member("ollama", "local", "q", 0.5))
    assert plan.judge_member == Member("ollama", "local", "small", 0.0, "judge")
    assert plan.to_dict()["judge_member"]["model"] == "small"


def test_pipeline_stages_and_ensemble_defaults() -> None:
    on = _on(pipeline=StrategySettings(enabled=True), ensemble=StrategySettings(enabled=True))
    pipe = plan_for(_decision("pipeline", model="q"), on, SIDES, DEFAULTS)
    assert pipe is not None and pipe.sequential and pipe.clouds
    assert pipe.members == (
        Member("ollama", "local", "q", None, "draft"),
        Member("origin", "cloud", None, None, "review"),
    )
    ens = plan_for(_decision("ensemble"), on, SIDES, DEFAULTS)
    assert ens is not None and [m.backend for m in ens.members] == ["ollama", "origin"]
    s = StrategySettings(
        enabled=True, stages=(StageSettings("plan", "cloud"), StageSettings("execute", "local", "vllm", "x"))
    )
    planned = plan_for(_decision("pipeline"), _on(pipeline=s), SIDES, DEFAULTS)
    assert planned is not None
    assert [(m.role, m.backend, m.model) for m in planned.members] == [
        ("plan", "origin", None),
        ("execute", "vllm", "x"),
    ]
