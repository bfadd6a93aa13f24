"""The planner: a decision and the orchestration settings -> the Plan of member calls. Pure.

    plan_for(decision, orchestration, sides, defaults) -> Plan | None
    Planner(orchestration, sides, defaults)(protocol, decision, view) -> Plan | None   # what Turns asks

`sides` maps each configured backend name to its side (local | cloud); `defaults` maps a side to its
default backend (None when there is none). The plan is None when the decision's strategy is
`single`, when its `orchestration.<strategy>.enabled` is not true, or when no member can be placed.

- `fan_out`: the configured `members` when there are any, else `width` calls to the decision's backend
  and model, sampled at `temperatures[i % len(temperatures)]`. Run at once; the judge picks.
- `ensemble`: the configured `members` (local and/or cloud), else the decision's backend and the
  other side's default backend. Run at once; the judge picks.
- `pipeline`: one member per stage (`stages`, default `[draft on local, review on cloud]`), run in
  order, each stage's output the next one's input; the last answer is the reply.
A member's backend is its own, else the decision's (for a stage: the stage side's default, or the
decision's when the stage is on the decision's side); its model is its own, else the decision's when
it calls the decision's backend, else None (the backend's own model, `backends.registry.model_for`).
The judge (`first`, `longest_agreement`, `model`) of a `model` judge calls `judge_backend` (default:
the local default backend) with `judge_model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.config.orchestration_settings import OrchestrationSettings, StrategySettings
from glider_cli.domain import RouteDecision
from glider_cli.router.sticky_view import StickyView
from glider_cli.values import Frozen, init_fields

__all__ = ["PLANNED", "Member", "Plan", "Planner", "plan_for"]

# The client protocols a plan serves (Gemini's streaming is in its path, not its body: served singly).
PLANNED = ("anthropic", "openai_chat", "openai_responses")


class Member(Frozen):
    """One upstream call of a plan. `role` is the pipeline stage's (draft, review, plan, execute)."""

    backend: str
    side: str
    model: str | None
    temperature: float | None
    role: str | None

    def __init__(
        self,
        backend: str,
        side: str,
        model: str | None = None,
        temperature: float | None = None,
        role: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.backend = backend
        s.side = side
        s.model = model
        s.temperature = temperature
        s.role = role

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"backend": self.backend, "side": self.side, "model": self.model}
        if self.temperature is not None:
            d["temperature"] = self.temperature
        if self.role is not None:
            d["role"] = self.role
        return d


class Plan(Frozen):
    strategy: str
    members: tuple[Member, ...]
    judge: str  # first | longest_agreement | model | last (pipeline: the last stage's answer)
    judge_member: Member | None
    max_parallel: int
    member_timeout: float
    deadline: float

    def __init__(
        self,
        strategy: str,
        members: tuple[Member, ...],
        judge: str,
        judge_member: Member | None,
        max_parallel: int,
        member_timeout: float,
        deadline: float,
    ) -> None:
        init_fields(self, strategy, members, judge, judge_member, max_parallel, member_timeout, deadline)

    @property
    def sequential(self) -> bool:
        return self.strategy == "pipeline"

    @property
    def clouds(self) -> bool:
        """A member (or the judge) sends the request to the cloud."""
        judge = [self.judge_member] if self.judge_member is not None else []
        return any(m.side == "cloud" for m in [*self.members, *judge])

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "members": [m.to_dict() for m in self.members],
            "judge": self.judge,
            "judge_member": self.judge_member.to_dict() if self.judge_member is not None else None,
            "max_parallel": self.max_parallel,
            "member_timeout": self.member_timeout,
            "deadline": self.deadline,
        }


class Planner:
    """`planner(protocol, decision, view) -> Plan | None`, what `turns.lifecycle.Turns.open` asks once the
    router decided: None for a `single` decision, a protocol not in PLANNED, or a request whose family
    forces it home (a tool result returning to the member that called the tool), else `plan_for`."""

    def __init__(
        self,
        orchestration: OrchestrationSettings,
        sides: Mapping[str, str],
        defaults: Mapping[str, str | None],
    ) -> None:
        self.orchestration = orchestration
        self.sides = dict(sides)
        self.defaults = dict(defaults)

    def __call__(self, protocol: str, decision: RouteDecision, view: StickyView | None) -> Plan | None:
        if decision.strategy == "single" or protocol not in PLANNED:
            return None
        if view is not None and view.forced is not None:
            return None
        return plan_for(decision, self.orchestration, self.sides, self.defaults)


def plan_for(
    decision: RouteDecision,
    orchestration: OrchestrationSettings,
    sides: Mapping[str, str],
    defaults: Mapping[str, str | None],
) -> Plan | None:
    if decision.strategy == "single" or decision.delegate:
        return None
    s = orchestration.get(decision.strategy)
    if s is None:
        return None
    home = decision.backend or defaults.get(decision.target)
    members: list[Member]
    if decision.strategy == "pipeline":
        members = _stages(s, decision, home, sides, defaults)
    else:
        members = _members(s, decision, home, sides)
        if not members and decision.strategy == "fan_out" and home is not None and home in sides:
            members = [
                Member(home, sides[home], decision.model, s.temperatures[i % len(s.temperatures)])
                for i in range(s.width)
            ]
        if not members and decision.strategy == "ensemble":
            other = defaults.get("cloud" if decision.target == "local" else "local")
            for name in dict.fromkeys(n for n in (home, other) if n is not None and n in sides):
                members.append(Member(name, sides[name], decision.model if name == home else None))
    if not members:
        return None
    judge_member = None
    judge = "last" if decision.strategy == "pipeline" else s.judge
    if judge == "model":
        judge_at = s.judge_backend or defaults.get("local") or home
        if judge_at is not None and judge_at in sides:
            judge_member = Member(judge_at, sides[judge_at], s.judge_model, 0.0, "judge")
        else:
            judge = "longest_agreement"
    return Plan(
        strategy=decision.strategy,
        members=tuple(members),
        judge=judge,
        judge_member=judge_member,
        max_parallel=s.max_parallel,
        member_timeout=s.member_timeout,
        deadline=s.deadline,
    )


def _members(
    s: StrategySettings, decision: RouteDecision, home: str | None, sides: Mapping[str, str]
) -> list[Member]:
    out = []
    for m in s.members:
        name = m.backend or home
        if name is None or name not in sides:
            continue
        model = m.model if m.model is not None else (decision.model if name == home else None)
        out.append(Member(name, sides[name], model, m.temperature))
    return out


def _stages(
    s: StrategySettings,
    decision: RouteDecision,
    home: str | None,
    sides: Mapping[str, str],
    defaults: Mapping[str, str | None],
) -> list[Member]:
    out = []
    for st in s.stages:
        name = st.backend or (home if st.side == decision.target else defaults.get(st.side))
        if name is None or name not in sides:
            continue
        model = st.model if st.model is not None else (decision.model if name == home else None)
        out.append(Member(name, sides[name], model, None, st.role))
    return out
