"""How the Router writes its decision down: the trace's tail and the one RouteDecision it returns.

Contract (`DecisionRecord`, the base of `router.decide.Router`, which sets `rules`, `_tails` and
`_default_backend`):
- `_rest(i, ctx, every)` is the trace lines of the rules after rule `i`, the winner: the prebuilt
  "not reached" lines, or (`every`, `glider route explain --all`) each later rule's own verdict,
  which never changes the decision.
- `_decision(...)` builds the RouteDecision: the action's backend or the side's default backend; a
  bound StickyView's `forced` side (and backend, model) wins over the rules' verdict, which stays in
  the trace; the view and the family join `extra`; `held_local` (the explicit rule keeping the
  request on the machine) only while the decision stays local. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from glider_cli.config.model import Action
from glider_cli.domain import ChatRequest, Reason, RequestSummary, RouteDecision
from glider_cli.router.compiled import CompiledRule, Ctx
from glider_cli.router.complexity import LazyComplexity
from glider_cli.router.sticky_view import StickyView


class DecisionRecord:
    """The record half of the Router: the trace lines after the winner and the decision itself."""

    rules: tuple[CompiledRule, ...]
    _tails: tuple[tuple[Reason, ...], ...]
    _default_backend: dict[str, str | None]

    def _rest(self, i: int, ctx: Ctx, every: bool) -> tuple[Reason, ...] | list[Reason]:
        """The trace lines of the rules after the winner: not reached, or (`every`) their verdicts."""
        if not every:
            return self._tails[i]
        winner = self.rules[i].name
        out: list[Reason] = []
        for later in self.rules[i + 1 :]:
            if not later.enabled:
                out.append(Reason(later.name, later.priority, False, later.disabled_reason))
                continue
            m = later.matcher(ctx)
            verdict = "would also match" if m.matched else "would not match"
            out.append(
                Reason(later.name, later.priority, False, f"{verdict} ({winner} has control): {m.reason}")
            )
        return out

    def _decision(
        self,
        target: str,
        rule: str,
        priority: int | None,
        action: Action,
        fallback: str | None,
        where: str | None,
        delegate: str | None,
        request: ChatRequest,
        complexity: LazyComplexity,
        trace: list[Reason],
        sticky: StickyView | None,
        command: str | None = None,
        *,
        tail: tuple[int, int] = (0, 0),
        held_local: str | None = None,
    ) -> RouteDecision:
        # `complexity_signals` joins the record in RouteDecision.to_dict (scored only when read).
        extra: dict[str, Any] = {}
        side = "local" if target == "local" else "cloud"
        backend = action.backend or self._default_backend[target]
        model, adapter, strategy = action.model, action.adapter, action.strategy
        if sticky is not None:
            extra["sticky"] = sticky.to_dict()
            forced = sticky.forced
            if forced is not None:
                # The turn index knows where this request must go (a tool result returning home, a
                # denylisted tool following its parent): the rules' verdict stays in the trace.
                trace.append(Reason("sticky", None, True, forced.reason))
                if side != forced.side or (forced.backend and backend != forced.backend):
                    moved = side != forced.side
                    side = "local" if forced.side == "local" else "cloud"
                    # A side it names no backend of: that side's default, not the rule's backend.
                    backend = forced.backend or (self._default_backend[side] if moved else backend)
                    rule, priority = "sticky", None
                    model, adapter, strategy = forced.model, None, "single"
            if sticky.family is not None:
                extra["family"] = sticky.family
        return RouteDecision(
            target=side,  # type: ignore[arg-type]
            rule=rule,
            priority=priority,
            backend=backend,
            model=model,
            adapter=adapter,
            strategy=strategy,  # type: ignore[arg-type]
            delegate=delegate,
            request=RequestSummary(request.estimated_tokens, request.has_tools, complexity=complexity),
            trace=tuple(trace),
            extra=extra,
            tail=tail,
            where=where,
            fallback=fallback,
            command=command,
            # A forced move off the local side (a tool result returning to the cloud) is no hold.
            held_local=held_local if side == "local" else None,
        )
