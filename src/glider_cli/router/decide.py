"""The Router: a config compiled once, then `decide(request, sticky=...)` per request.

Contract:
- `Router(config)` compiles every rule (RE2 patterns, Starlark scripts, the classifier and complexity
  rules the config adds) and sorts them by priority, largest first; equal priorities keep file order.
  A script that cannot load raises RuleError naming the file, line and column.
- `decide` is pure apart from script rules, which run in the sandbox worker (router.scripts): one
  pipe round trip per run of adjacent script rules, bounded by their deadlines plus the sandbox's
  grace. No other I/O, no randomness. Steps, each appending to the trace as it happens:
  1. delegate flags (`/claude`, `/cursor-agent`, `/agy`) in the latest user message -> `delegate`;
  2. the rules in priority order: a disabled rule is skipped, the first match has control, a script
     that fails is "no match", the rules after the winner are listed as not reached (the decision's
     `tail` says where those lines are, so the logged record can count them instead);
  3. a bound StickyView refuses a local match for a follow-on (a request whose most recent message
     is not new user text): the rule is recorded as refused and the next rule is tried. When only
     local rules matched, the request stays on the cloud (rule `sticky`).
  No rule matching at all raises NoRoute.
- The decision's `backend` is the action's backend or the side's default backend (config);
  `model` is the action's model, or None (keep the client's model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from glider_cli.config.model import Action, Config
from glider_cli.domain import DELEGATE_FLAGS, ChatRequest, Reason, RequestSummary, RouteDecision
from glider_cli.errors import GateRefused, NoRoute
from glider_cli.router.compiled import CompiledRule, Ctx, compile_rules, merge_action
from glider_cli.router.complexity import ComplexityScorer, LazyComplexity
from glider_cli.router.sticky_view import StickyView
from glider_cli.router.triggers import (
    Match,
    command_pattern,
    find_command,
)

# A capability gate: given the local backend a rule would use, why it cannot take this request
# (the pack does not fit its window, the turn needs tools it cannot call), or None. Built by the
# turn lifecycle from the probed capabilities and the pack's size; the router only asks it.
Gate = Callable[[str | None], str | None]


class Router:
    """Compiled routing for one Config. Thread-safe: decide()'s only shared mutable state is a small
    cache of immutable trace lines."""

    def __init__(self, config: Config, *, scorer: ComplexityScorer | None = None) -> None:
        self.config = config
        self.rules: tuple[CompiledRule, ...] = tuple(compile_rules(config))
        cx = config.routing.complexity
        self._scorer = scorer or ComplexityScorer(cx.keywords, cx.weights)
        self._delegate = command_pattern(DELEGATE_FLAGS)
        self._default_backend = {side: config.default_backend(side) for side in ("local", "cloud")}
        # Trace lines that do not depend on the request are built once.
        self._disabled = tuple(Reason(r.name, r.priority, False, r.disabled_reason) for r in self.rules)
        # Trace lines for the verdicts a rule gives again and again ("no tools", "no pattern matches"):
        # built once, looked up by reason text. Bounded, so per-request texts cannot grow it.
        self._seen: tuple[dict[str, Reason], ...] = tuple({} for _ in self.rules)
        self._tails = tuple(
            tuple(
                Reason(later.name, later.priority, False, f"not reached: {rule.name} has control")
                for later in self.rules[i + 1 :]
            )
            for i, rule in enumerate(self.rules)
        )

    def decide(
        self, request: ChatRequest, sticky: StickyView | None = None, *, gate: Gate | None = None
    ) -> RouteDecision:
        user_text = request.last_user_text
        complexity = LazyComplexity(self._scorer, user_text, len(request.messages), request.has_tools)
        ctx = Ctx(request, request.last_text, user_text, complexity)
        trace: list[Reason] = []
        delegate = find_command(self._delegate, DELEGATE_FLAGS, user_text)
        if delegate:
            trace.append(Reason("delegate", None, True, f"delegate flag {delegate} found before any rule"))
        refuse_local = sticky is not None and sticky.bound and sticky.is_follow_on(request)
        refused = False
        local_only = self.config.routing.local_only
        gated: str | None = None
        winner: CompiledRule | None = None
        action: Action | None = None
        tail = (0, 0)
        for i, rule in enumerate(self.rules):
            if not rule.enabled:
                trace.append(self._disabled[i])
                continue
            m: Match = rule.matcher(ctx)
            if not m.matched:
                seen = self._seen[i]
                line = seen.get(m.reason)
                if line is None:
                    line = Reason(rule.name, rule.priority, False, m.reason)
                    if len(seen) < 8:
                        seen[m.reason] = line
                trace.append(line)
                continue
            merged, note = merge_action(rule.action, m.action, self.config)
            if merged is None:
                trace.append(
                    Reason(rule.name, rule.priority, False, f"{m.reason} but {note}; counted as no match")
                )
                continue
            if gate is not None and merged.target == "local":
                local = merged.backend or self._default_backend["local"]
                why = gate(local)
                if why is not None:
                    said = f"{m.reason}, but local backend {local} cannot take it: {why}"
                    if rule.kind != "explicit":
                        trace.append(Reason(rule.name, rule.priority, False, said))
                        gated = gated or why
                        continue
                    fb = rule.fallback
                    if fb is None or fb == "none" or fb not in self.config.settings.backends:
                        raise GateRefused(
                            f"{rule.name}: local backend {local} cannot take this request: {why}",
                            hint="send it with /cloud, or give the rule a `fallback` backend",
                        )
                    side = self.config.settings.backends[fb].side
                    trace.append(Reason(rule.name, rule.priority, True, f"{said}; its fallback {fb} answers"))
                    merged = Action(side, fb, None, None, "single")
                    winner, action = rule, merged
                    tail = (len(trace), len(self._tails[i]))
                    trace.extend(self._tails[i])
                    break
            if local_only and merged.target == "cloud" and rule.kind != "explicit":
                why = "routing.local_only: only an explicit command sends a request to the cloud"
                trace.append(Reason(rule.name, rule.priority, False, f"{m.reason}, but {why}"))
                continue
            if refuse_local and merged.target == "local":
                assert sticky is not None
                refused = True
                trace.append(
                    Reason(
                        rule.name,
                        rule.priority,
                        False,
                        f"{m.reason}, but local is refused: {sticky.describe()}",
                    )
                )
                continue
            trace.append(Reason(rule.name, rule.priority, True, m.reason + note))
            winner, action = rule, merged
            tail = (len(trace), len(self._tails[i]))
            trace.extend(self._tails[i])
            break
        if winner is None or action is None:
            if not refused and gated is not None:
                raise GateRefused(
                    f"no local backend can take this request: {gated}",
                    hint="send it with /cloud" if local_only else "send it with /cloud, or add a cloud rule",
                )
            if not refused:
                raise NoRoute(
                    "no rule matched this request and the config has no `always` rule",
                    hint="add a rule with `trigger: {type: always}` at priority 0",
                )
            assert sticky is not None
            trace.append(Reason("sticky", None, True, f"only local rules matched; {sticky.describe()}"))
            return self._decision(
                "cloud",
                "sticky",
                None,
                Action("cloud"),
                None,
                None,
                delegate,
                request,
                complexity,
                trace,
                sticky,
                tail,
            )
        return self._decision(
            action.target,
            winner.name,
            winner.priority,
            action,
            winner.fallback,
            winner.where,
            delegate,
            request,
            complexity,
            trace,
            sticky,
            tail,
        )

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
        tail: tuple[int, int],
    ) -> RouteDecision:
        # `complexity_signals` joins the record in RouteDecision.to_dict (scored only when read).
        extra: dict[str, Any] = {"where": where, "fallback": fallback}
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
                    side = "local" if forced.side == "local" else "cloud"
                    rule, priority, backend = "sticky", None, forced.backend or backend
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
        )
