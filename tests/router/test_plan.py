"""The planner and the judges, pure: no HTTP."""

from __future__ import annotations

from glider_cli.config.orchestration_settings import (
    MemberSettings,
    OrchestrationSettings,
    StageSettings,
    StrategySettings,
)
from glider_cli.domain import RequestSummary, RouteDecision
from glider_cli.proxy.strategies.judge import (
    agreement,
    judge_index,
    judge_prompt,
    member_body,
    stage_followup,
)
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


def test_agreement_picks_the_consensus_and_ties_go_first() -> None:
    assert agreement(["x = 5", "x = 4", "x = 4"])[0] == 1
    assert agreement(["a", "b"])[0] == 0


def test_model_judge_prompt_and_index() -> None:
    prompt = judge_prompt("what is 2+2?", ["4", "5"])
    assert "what is 2+2?" in prompt and "Candidate 0:\n4" in prompt and "Candidate 1:\n5" in prompt
    assert judge_index("Candidate 1", 2) == 1
    assert judge_index("7, then 0", 2) == 0
    assert judge_index("none", 2) is None


def test_member_bodies() -> None:
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "messages": []}
    out = member_body("openai_chat", body, temperature=0.7, followup=[("user", "go")])
    assert out == {
        "model": "m",
        "stream": False,
        "temperature": 0.7,
        "messages": [{"role": "user", "content": "go"}],
    }
    resp = member_body("openai_responses", {"input": "hi"}, followup=stage_followup("review", "draft"))
    assert resp["input"][0] == {"role": "user", "content": "hi"}
    assert resp["input"][1]["content"][0] == {"type": "output_text", "text": "draft"}
    assert body["stream"] is True  # the client's body is left as it was
