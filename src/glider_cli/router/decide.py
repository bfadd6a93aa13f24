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
     that fails is "no match", the rules after the winner are listed as not reached;
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
from glider_cli.errors import NoRoute, RuleError
from glider_cli.router.complexity import ComplexityScorer, LazyComplexity
from glider_cli.router.sticky_view import StickyView
from glider_cli.router.triggers import (
    Match,
    Matcher,
    ScriptMatcher,
    command_pattern,
    compile_trigger,
    find_command,
    script_match,
)
from glider_cli.values import Frozen, init_fields, replace

_ACTION_KEYS = ("target", "backend", "model", "adapter", "strategy")


class CompiledRule(Frozen):
    name: str
    priority: int
    enabled: bool
    action: Action
    matcher: Matcher
    kind: str
    fallback: str | None
    where: str | None
    disabled_reason: str

    def __init__(
        self,
        name: str,
        priority: int,
        enabled: bool,
        action: Action,
        matcher: Matcher,
        kind: str,
        fallback: str | None = None,
        where: str | None = None,
        disabled_reason: str = "disabled (enabled: false)",
    ) -> None:
        init_fields(self, name, priority, enabled, action, matcher, kind, fallback, where, disabled_reason)


class _Ctx:
    """Per-decision state the matchers share: the texts they read and work computed once."""

    __slots__ = ("_memo", "_payload", "complexity", "last_text", "request", "user_text")

    def __init__(
        self, request: ChatRequest, last_text: str, user_text: str, complexity: LazyComplexity
    ) -> None:
        self.request = request
        self.last_text = last_text
        self.user_text = user_text
        self.complexity = complexity
        self._payload: Any = None
        self._memo: dict[int, Any] = {}

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """`compute()` once per decision for `key` (a script group's outcomes, pattern-set hits)."""
        k = id(key)
        if k not in self._memo:
            self._memo[k] = compute()
        return self._memo[k]

    def script_payload(self) -> Any:
        if self._payload is None:
            from glider_cli.router.scripts import build_payload

            req = self.request
            fields: dict[str, Any] = {
                "model": req.model,
                "stream": req.stream,
                "estimated_tokens": req.estimated_tokens,
                "has_tools": req.has_tools,
                "complexity_score": self.complexity.score,
                "complexity_source": self.complexity.source,
            }
            if req.temperature is not None:
                fields["temperature"] = req.temperature
            if req.max_tokens is not None:
                fields["max_tokens"] = req.max_tokens
            self._payload = build_payload(
                fields, [m.role for m in req.messages], [m.content for m in req.messages]
            )
        return self._payload


def _never(ctx: Any) -> Match:
    return Match(False, "disabled (enabled: false)")


def _compile_rules(config: Config) -> list[CompiledRule]:
    from glider_cli.router.classifier import PatternIndex, complexity_matcher, patterns_matcher, tools_matcher
    from glider_cli.router.scripts import ScriptError

    out: list[CompiledRule] = []
    for rule in config.rules:
        if not rule.enabled and rule.trigger.type == "script":
            # A switched-off script is not loaded: a broken one must not stop routing (lint reports it).
            out.append(
                CompiledRule(
                    rule.name, rule.priority, False, rule.action, _never, "script", rule.fallback, rule.where
                )
            )
            continue
        try:
            matcher = compile_trigger(rule.trigger)
        except ScriptError as exc:
            d = exc.diagnostic
            raise RuleError(
                f"script {exc.filename}:{d.line}:{d.col}: {d.message}",
                file=rule.file,
                line=rule.line,
                rule=rule.name,
                key="trigger.file",
            ) from None
        out.append(
            CompiledRule(
                rule.name,
                rule.priority,
                rule.enabled,
                rule.action,
                matcher,
                rule.trigger.type,
                rule.fallback,
                rule.where,
            )
        )
    cls = config.routing.classifier
    index = PatternIndex({"cloud": cls.cloud_patterns, "small": cls.small_patterns})
    off = "disabled (routing.task_classifier.enabled: false)"
    out.append(
        CompiledRule(
            "task_classifier.tools",
            cls.tools_priority,
            cls.enabled,
            Action("cloud", model=cls.cloud_model),
            tools_matcher(),
            "task_classifier",
            disabled_reason=off,
        )
    )
    out.append(
        CompiledRule(
            "task_classifier.cloud",
            cls.cloud_priority,
            cls.enabled,
            Action("cloud", model=cls.cloud_model),
            patterns_matcher(index, "cloud"),
            "task_classifier",
            disabled_reason=off,
        )
    )
    out.append(
        CompiledRule(
            "task_classifier.small",
            cls.small_priority,
            cls.enabled,
            Action("local", model=cls.local_model),
            patterns_matcher(index, "small", max_chars=cls.small_max_chars),
            "task_classifier",
            disabled_reason=off,
        )
    )
    cx = config.routing.complexity
    out.append(
        CompiledRule(
            "complexity",
            cx.priority,
            cx.enabled,
            Action("cloud"),
            complexity_matcher(cx),
            "complexity",
            disabled_reason="off until routing.complexity.enabled: true",
        )
    )
    # Stable sort: equal priorities keep the order they were written in.
    out.sort(key=lambda r: -r.priority)
    return _group_scripts(out)


class _GroupedScript:
    """A script rule inside a ScriptGroup: reads the group's shared outcome, else runs alone."""

    def __init__(self, group: Any, position: int, alone: ScriptMatcher) -> None:
        self.group = group
        self.position = position
        self.alone = alone

    def __call__(self, ctx: Any) -> Match:
        outcomes = ctx.memo(self.group, lambda: self.group.call(ctx.script_payload()))
        if outcomes is not None and self.position < len(outcomes):
            return script_match(self.alone.name, outcomes[self.position])
        return self.alone(ctx)


def _group_scripts(rules: list[CompiledRule]) -> list[CompiledRule]:
    """Runs of adjacent enabled script rules share one interpreter call per request."""
    from glider_cli.router.scripts import ScriptGroup

    out = list(rules)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].enabled and isinstance(out[j].matcher, ScriptMatcher):
            j += 1
        if j - i >= 2:
            members = [out[k].matcher for k in range(i, j)]
            group = ScriptGroup([m.script for m in members if isinstance(m, ScriptMatcher)])
            for pos, k in enumerate(range(i, j)):
                alone = out[k].matcher
                assert isinstance(alone, ScriptMatcher)
                out[k] = replace(out[k], matcher=_GroupedScript(group, pos, alone))
        i = max(j, i + 1)
    return out


def _merge_action(base: Action, override: dict[str, Any] | None, config: Config) -> tuple[Action | None, str]:
    """The rule's action with a script's returned action on top; (None, why) when it is invalid."""
    if not override:
        return base, ""
    unknown = sorted(set(override) - set(_ACTION_KEYS))
    if unknown:
        return None, f"returned unknown action keys {', '.join(unknown)}"
    target = override.get("target")
    # A script that moves the request to the other side does not inherit the rule's backend, model,
    # adapter or strategy: those belong to the side the rule named.
    values = base.to_dict() if target in (None, base.target) else Action(str(target)).to_dict()
    for key, value in override.items():
        if value is not None and not isinstance(value, str):
            return None, f"returned a non-string action.{key}"
        values[key] = value
    if values["target"] not in ("local", "cloud"):
        return None, f"returned target {values['target']!r} (expected local or cloud)"
    if values["strategy"] not in ("single", "fan_out", "pipeline", "ensemble"):
        return None, f"returned strategy {values['strategy']!r}"
    if values["strategy"] == "fan_out" and not config.settings.fan_out_enabled:
        return None, "asked for fan_out, but orchestration.fan_out.enabled is false"
    backend = values["backend"]
    if backend is not None:
        known = config.settings.backends.get(backend)
        if known is None:
            return None, f"returned unknown backend {backend!r}"
        if known.side != values["target"]:
            return None, f"returned backend {backend!r}, which serves the {known.side} side"
    return Action(
        target=str(values["target"]),
        backend=values["backend"],
        model=values["model"],
        adapter=values["adapter"],
        strategy=str(values["strategy"]),
    ), " (the script's action wins)"


class Router:
    """Compiled routing for one Config. Thread-safe: decide()'s only shared mutable state is a small
    cache of immutable trace lines."""

    def __init__(self, config: Config, *, scorer: ComplexityScorer | None = None) -> None:
        self.config = config
        self.rules: tuple[CompiledRule, ...] = tuple(_compile_rules(config))
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

    def decide(self, request: ChatRequest, sticky: StickyView | None = None) -> RouteDecision:
        user_text = request.last_user_text
        complexity = LazyComplexity(self._scorer, user_text, len(request.messages), request.has_tools)
        ctx = _Ctx(request, request.last_text, user_text, complexity)
        trace: list[Reason] = []
        delegate = find_command(self._delegate, DELEGATE_FLAGS, user_text)
        if delegate:
            trace.append(Reason("delegate", None, True, f"delegate flag {delegate} found before any rule"))
        refuse_local = sticky is not None and sticky.bound and sticky.is_follow_on(request)
        refused = False
        winner: CompiledRule | None = None
        action: Action | None = None
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
            merged, note = _merge_action(rule.action, m.action, self.config)
            if merged is None:
                trace.append(
                    Reason(rule.name, rule.priority, False, f"{m.reason} but {note}; counted as no match")
                )
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
            trace.extend(self._tails[i])
            break
        if winner is None or action is None:
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
    ) -> RouteDecision:
        # `complexity_signals` joins the record in RouteDecision.to_dict (scored only when read).
        extra: dict[str, Any] = {"where": where, "fallback": fallback}
        if sticky is not None:
            extra["sticky"] = sticky.to_dict()
        return RouteDecision(
            target="local" if target == "local" else "cloud",
            rule=rule,
            priority=priority,
            backend=action.backend or self._default_backend[target],
            model=action.model,
            adapter=action.adapter,
            strategy=action.strategy,  # type: ignore[arg-type]
            delegate=delegate,
            request=RequestSummary(request.estimated_tokens, request.has_tools, complexity=complexity),
            trace=tuple(trace),
            extra=extra,
        )
