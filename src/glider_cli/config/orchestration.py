"""`orchestration:` (fan_out, pipeline, ensemble: members, judge, stages, budgets) into
`settings.OrchestrationSettings`, validated like every other section (`config.sections`).
"""

from __future__ import annotations

from glider_cli.config.backends import SIDES
from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.config.orchestration_settings import (
    MemberSettings,
    OrchestrationSettings,
    StageSettings,
    StrategySettings,
)

JUDGES: tuple[str, ...] = ("first", "longest_agreement", "model")
STAGE_ROLES: tuple[str, ...] = ("draft", "review", "plan", "execute")
_STRATEGY_KEYS = (
    "enabled",
    "width",
    "members",
    "temperatures",
    "judge",
    "stages",
    "max_parallel",
    "member_timeout",
    "deadline",
)


def read_orchestration(ck: Checker, top: LDict) -> OrchestrationSettings:
    """`orchestration.fan_out|pipeline|ensemble`: each strategy's switch, members, judge and budgets."""
    sec = ck.section(top, "orchestration", ("fan_out", "pipeline", "ensemble"), path="orchestration")
    if sec is None:
        return OrchestrationSettings()
    return OrchestrationSettings(
        **{name: _strategy(ck, sec, name) for name in ("fan_out", "pipeline", "ensemble")}
    )


def _strategy(ck: Checker, sec: LDict, name: str) -> StrategySettings:
    p = f"orchestration.{name}"
    raw = ck.section(sec, name, _STRATEGY_KEYS, path=p)
    d = StrategySettings()
    if raw is None:
        return d
    judge, judge_backend, judge_model = d.judge, None, None
    if isinstance(raw.get("judge"), LDict):
        j = raw["judge"]
        ck.keys(j, ("backend", "model"), path=f"{p}.judge")
        judge, judge_backend, judge_model = (
            "model",
            ck.string(j, "backend", path=f"{p}.judge"),
            ck.string(j, "model", path=f"{p}.judge"),
        )
    else:
        judge = or_default(ck.string(raw, "judge", path=p, choices=JUDGES), d.judge)
    temps = raw.get("temperatures")
    temperatures = d.temperatures
    if temps is not None:
        if (
            isinstance(temps, list)
            and temps
            and all(isinstance(t, int | float) and not isinstance(t, bool) for t in temps)
        ):
            temperatures = tuple(float(t) for t in temps)
        else:
            ck.error(
                "must be a non-empty list of numbers", raw.where("temperatures"), key=f"{p}.temperatures"
            )
    return StrategySettings(
        enabled=or_default(ck.boolean(raw, "enabled", path=p), False),
        width=or_default(ck.integer(raw, "width", path=p, minimum=1), d.width),
        members=tuple(_members(ck, raw, p)),
        temperatures=temperatures,
        judge=judge,
        judge_backend=judge_backend,
        judge_model=judge_model,
        stages=tuple(_stages(ck, raw, p)) or d.stages,
        max_parallel=or_default(ck.integer(raw, "max_parallel", path=p, minimum=1), d.max_parallel),
        member_timeout=ck.number(raw, "member_timeout", path=p) or d.member_timeout,
        deadline=ck.number(raw, "deadline", path=p) or d.deadline,
    )


def _items(ck: Checker, raw: LDict, key: str, p: str) -> list[tuple[LDict, str]]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, LDict) for v in value):
        ck.error("must be a list of mappings", raw.where(key), key=f"{p}.{key}")
        return []
    return [(v, f"{p}.{key}[{i}]") for i, v in enumerate(value)]


def _members(ck: Checker, raw: LDict, p: str) -> list[MemberSettings]:
    out = []
    for m, mp in _items(ck, raw, "members", p):
        ck.keys(m, ("backend", "model", "temperature"), path=mp)
        out.append(
            MemberSettings(
                ck.string(m, "backend", path=mp),
                ck.string(m, "model", path=mp),
                ck.number(m, "temperature", path=mp),
            )
        )
    return out


def _stages(ck: Checker, raw: LDict, p: str) -> list[StageSettings]:
    out = []
    for m, mp in _items(ck, raw, "stages", p):
        ck.keys(m, ("role", "side", "backend", "model"), path=mp)
        role = ck.string(m, "role", path=mp, choices=STAGE_ROLES)
        side = ck.string(m, "side", path=mp, choices=SIDES)
        if role is None or side is None:
            ck.error("a stage needs a role and a side", m.where(), key=mp)
            continue
        out.append(
            StageSettings(role, side, ck.string(m, "backend", path=mp), ck.string(m, "model", path=mp))
        )
    return out
