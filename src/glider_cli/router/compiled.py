"""Rules compiled for the router: triggers to matchers, scripts grouped, actions merged.

`compile_rules(config)` turns every `Rule` (and the rules the classifier and complexity settings
add) into a `CompiledRule`, sorted by priority (largest first; equal priorities keep file order);
consecutive script rules share one evaluation per decision (`_group_scripts`). `merge_action`
lays a script's action override over a rule's action, or says why it cannot. `Ctx` is the
per-decision state the matchers share. Used by `router.decide`; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from glider_cli.config.model import Action, Config
from glider_cli.domain import ChatRequest
from glider_cli.errors import RuleError
from glider_cli.router.complexity import LazyComplexity
from glider_cli.router.sticky_view import StickyView
from glider_cli.router.triggers import (
    Match,
    Matcher,
    ScriptMatcher,
    compile_trigger,
    script_match,
    typed_text,
)
from glider_cli.sandbox.results import ScriptError
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
    commands: tuple[str, ...]

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
        commands: tuple[str, ...] = (),
    ) -> None:
        init_fields(
            self, name, priority, enabled, action, matcher, kind, fallback, where, disabled_reason, commands
        )


class Ctx:
    """Per-decision state the matchers share: the texts they read and work computed once.

    `commands` is false when the request carries none of the person's text (see
    `router.sticky_view`); `parent` is the Agent/Task call that spawned a subagent request
    (`{"tool", "subagent_type"}`: `parent` when given, else read from `sticky`'s family), which
    scripts see as `request.parent`."""

    __slots__ = (
        "_command_text",
        "_memo",
        "_native",
        "_parent",
        "_payload",
        "commands",
        "complexity",
        "last_text",
        "request",
        "script_complexity",
        "sticky",
        "user_text",
    )

    def __init__(
        self,
        request: ChatRequest,
        last_text: str,
        user_text: str,
        complexity: LazyComplexity,
        commands: bool = True,
        sticky: StickyView | None = None,
        script_complexity: bool = True,
        *,
        parent: dict[str, Any] | None = None,
    ) -> None:
        self.request = request
        self.script_complexity = script_complexity
        self.last_text = last_text
        self.user_text = user_text
        self.complexity = complexity
        self.commands = commands
        self.sticky = sticky
        self._parent = parent
        self._command_text: str | None = None
        self._payload: Any = None
        self._native: Any = None
        self._memo: dict[int, Any] = {}

    @property
    def command_text(self) -> str:
        """The person's own text in the latest user message ("" when the request carries none)."""
        if self._command_text is None:
            self._command_text = typed_text(self.user_text) if self.commands else ""
        return self._command_text

    @property
    def parent(self) -> dict[str, Any] | None:
        """The Agent/Task call a subagent request was spawned by (read by scripts only: their
        payloads are built once per decision)."""
        if self._parent is not None:
            return self._parent
        family = self.sticky.family if self.sticky is not None else None
        if not family or family.get("kind") != "subagent":
            return None
        tools = family.get("tools") or ()
        return {"tool": tools[0] if tools else None, "subagent_type": family.get("subagent_type")}

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """`compute()` once per decision for `key` (a script group's outcomes, pattern-set hits)."""
        k = id(key)
        if k not in self._memo:
            self._memo[k] = compute()
        return self._memo[k]

    def script_payload(self) -> Any:
        if self._payload is None:
            build_payload = _build_payload()
            req = self.request
            fields: dict[str, Any] = {
                "model": req.model,
                "stream": req.stream,
                "estimated_tokens": req.estimated_tokens,
                "has_tools": req.has_tools,
            }
            if self.script_complexity:
                fields["complexity_score"] = self.complexity.score
                fields["complexity_source"] = self.complexity.source
            if req.temperature is not None:
                fields["temperature"] = req.temperature
            if req.max_tokens is not None:
                fields["max_tokens"] = req.max_tokens
            fields["parent"] = self.parent
            self._payload = build_payload(
                fields, [m.role for m in req.messages], [m.content for m in req.messages]
            )
        return self._payload

    def script_request(self) -> Any:
        """The `request` a natively evaluated bundled script gets (`sandbox.native`): the fields
        `script_payload` hands the Starlark interpreter, straight from the request (built once)."""
        if self._native is None:
            req = self.request
            cx = self.complexity
            self._native = _native_request()(
                req.model,
                req.stream,
                list(req.messages),
                req.estimated_tokens,
                req.has_tools,
                self.parent,
                complexity=(cx.score, cx.source) if self.script_complexity else None,
                temperature=req.temperature,
                max_tokens=req.max_tokens,
            )
        return self._native


# Imported on first use (a config without scripts never loads them), then kept: an import statement
# in the per-decision path runs the import machinery on every call.
@cache
def _native_request() -> Any:
    from glider_cli.sandbox.native_ops import NativeRequest

    return NativeRequest


@cache
def _build_payload() -> Any:
    from glider_cli.router.scripts import build_payload

    return build_payload


def _never(ctx: Any) -> Match:
    return Match(False, "disabled (enabled: false)")


def compile_rules(config: Config) -> list[CompiledRule]:
    from glider_cli.router.classifier import PatternIndex, complexity_matcher, patterns_matcher, tools_matcher

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
                commands=rule.trigger.commands,
            )
        )
    cls = config.routing.classifier
    index = PatternIndex({"cloud": cls.cloud_patterns, "small": cls.small_patterns})
    off = "disabled (routing.task_classifier.enabled: false)"
    out.append(
        CompiledRule(
            "task_classifier.tools",
            cls.tools_priority,
            cls.enabled and cls.tools_to_cloud,
            Action("cloud", model=cls.cloud_model),
            tools_matcher(),
            "task_classifier",
            disabled_reason=off
            if not cls.enabled
            else "disabled (routing.task_classifier.tools_to_cloud: false)",
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
            return script_match(self.alone.name, outcomes[self.position], self.alone.miss)
        return self.alone(ctx)


def _group_scripts(rules: list[CompiledRule]) -> list[CompiledRule]:
    """Runs of adjacent enabled script rules on the same sandbox share one interpreter call per
    request (the bundled scripts Starlark evaluates run in-process, a user's in the worker; a bundled
    script evaluated as Python, `NativeScriptMatcher`, has no call to share and is never grouped).
    `router.scripts` (and the sandbox's supervisor under it) is imported only for a run to group:
    a config whose scripts all run as Python never imports it (issue 29's cold start)."""
    out = list(rules)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].enabled and isinstance(out[j].matcher, ScriptMatcher):
            if j > i and _sandbox_of(out[j]) is not _sandbox_of(out[i]):
                break
            j += 1
        if j - i >= 2:
            from glider_cli.router.scripts import ScriptGroup

            members = [out[k].matcher for k in range(i, j)]
            group = ScriptGroup([m.script for m in members if isinstance(m, ScriptMatcher)])
            for pos, k in enumerate(range(i, j)):
                alone = out[k].matcher
                assert isinstance(alone, ScriptMatcher)
                out[k] = replace(out[k], matcher=_GroupedScript(group, pos, alone))
        i = max(j, i + 1)
    return out


def _sandbox_of(rule: CompiledRule) -> Any:
    return rule.matcher.script.sandbox if isinstance(rule.matcher, ScriptMatcher) else None


def merge_action(base: Action, override: dict[str, Any] | None, config: Config) -> tuple[Action | None, str]:
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
