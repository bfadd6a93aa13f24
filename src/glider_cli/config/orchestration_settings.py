"""The settings of `orchestration:` (fan_out, pipeline, ensemble): frozen values with their defaults.

`config.orchestration` reads and validates the section into these; `config.settings.Settings`
carries the OrchestrationSettings, and `router/plan.py` plans and `proxy/strategies/` runs from it.
"""

from __future__ import annotations

from glider_cli.values import Frozen, init_fields


class MemberSettings(Frozen):
    """One member call of a strategy: a backend (None: the decision's), a model (None: the backend's) and
    a sampling temperature (None: the client's)."""

    backend: str | None
    model: str | None
    temperature: float | None

    def __init__(
        self, backend: str | None = None, model: str | None = None, temperature: float | None = None
    ) -> None:
        init_fields(self, backend, model, temperature)


class StageSettings(Frozen):
    """One pipeline stage: its `role` (draft, review, plan, execute), the side it runs on and, optionally,
    its backend and model (None: the side's default backend, that backend's model)."""

    role: str
    side: str
    backend: str | None
    model: str | None

    def __init__(self, role: str, side: str, backend: str | None = None, model: str | None = None) -> None:
        init_fields(self, role, side, backend, model)


DEFAULT_STAGES: tuple[StageSettings, ...] = (
    StageSettings("draft", "local"),
    StageSettings("review", "cloud"),
)


class StrategySettings(Frozen):
    """`orchestration.<strategy>` (fan_out, pipeline, ensemble). `judge` is first | longest_agreement |
    model (then `judge_backend` / `judge_model`, None: the local default). Budgets: at most
    `max_parallel` member calls at once, `member_timeout` seconds each, `deadline` seconds in all."""

    enabled: bool
    width: int
    members: tuple[MemberSettings, ...]
    temperatures: tuple[float, ...]
    judge: str
    judge_backend: str | None
    judge_model: str | None
    stages: tuple[StageSettings, ...]
    max_parallel: int
    member_timeout: float
    deadline: float

    def __init__(
        self,
        enabled: bool = False,
        width: int = 3,
        members: tuple[MemberSettings, ...] = (),
        temperatures: tuple[float, ...] = (0.2, 0.7, 1.0),
        judge: str = "longest_agreement",
        judge_backend: str | None = None,
        judge_model: str | None = None,
        stages: tuple[StageSettings, ...] = DEFAULT_STAGES,
        max_parallel: int = 3,
        member_timeout: float = 120.0,
        deadline: float = 300.0,
    ) -> None:
        init_fields(
            self,
            enabled,
            width,
            members,
            temperatures,
            judge,
            judge_backend,
            judge_model,
            stages,
            max_parallel,
            member_timeout,
            deadline,
        )


class OrchestrationSettings(Frozen):
    fan_out: StrategySettings
    pipeline: StrategySettings
    ensemble: StrategySettings

    def __init__(
        self,
        fan_out: StrategySettings = StrategySettings(),
        pipeline: StrategySettings = StrategySettings(),
        ensemble: StrategySettings = StrategySettings(),
    ) -> None:
        init_fields(self, fan_out, pipeline, ensemble)

    def get(self, strategy: str) -> StrategySettings | None:
        """The settings of a strategy that operates (its `enabled` is true), else None."""
        found = {"fan_out": self.fan_out, "pipeline": self.pipeline, "ensemble": self.ensemble}.get(strategy)
        return found if found is not None and found.enabled else None
