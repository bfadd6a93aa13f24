"""Validation of `routing:` -> rules, task classifier and complexity settings.

Every problem names the file and line, the rule and the key. Regexes are compiled with RE2 here
so a pattern the linear-time engine cannot compile stops the config from loading. Script files
are resolved relative to the file that names them and read here (the router does no I/O).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from glider_cli.config.located import Checker, LDict, LList, Where, did_you_mean, or_default
from glider_cli.config.model import (
    OPERATORS,
    TRIGGER_ALIASES,
    TRIGGER_TYPES,
    Action,
    ClassifierSettings,
    ComplexitySettings,
    RoutingSettings,
    Rule,
    Trigger,
)
from glider_cli.config.settings import BackendSettings
from glider_cli.domain import STRATEGIES, TARGETS

ROUTING_KEYS = (
    "rules",
    "task_classifier",
    "complexity",
    "tool_followup",
    "sticky",
    "local_backend",
    "cloud_backend",
    "local_only",
)
RULE_KEYS = ("name", "priority", "enabled", "trigger", "action", "fallback", "description")
ACTION_KEYS = ("target", "backend", "model", "adapter", "strategy")
TRIGGER_FIELDS: dict[str, tuple[str, ...]] = {
    "explicit": ("commands",),
    "regex": ("pattern",),
    "context_size": ("operator", "value"),
    "always": (),
    "script": ("file",),
    "composer_wrapup": (),
}
CLASSIFIER_KEYS = (
    "enabled",
    "tools_priority",
    "cloud_priority",
    "small_priority",
    "cloud_patterns",
    "small_patterns",
    "small_max_chars",
    "local_model",
    "cloud_model",
    "tools_to_cloud",
)
COMPLEXITY_KEYS = ("enabled", "cloud_above", "priority", "keywords", "weights")
COMPLEXITY_SIGNALS = ("length", "keywords", "code", "files", "conversation", "tools")

ReadFile = Callable[[Path], str]


def check_regex(pattern: str) -> str | None:
    """None when RE2 compiles `pattern`, else the reason it does not."""
    import re2

    try:
        re2.compile(pattern)
    except re2.error as exc:
        return str(exc) or "RE2 cannot compile it"
    return None


def _all_type_names() -> tuple[str, ...]:
    return TRIGGER_TYPES + tuple(TRIGGER_ALIASES)


def _trigger(ck: Checker, rule: LDict, name: str, read_file: ReadFile) -> Trigger | None:
    raw = rule.get("trigger")
    if raw is None:
        ck.error("needs a trigger", rule.where(), key="trigger", rule=name)
        return None
    if isinstance(raw, str):  # `trigger: always` is allowed as a shorthand for types without fields.
        shorthand = LDict(rule.where("trigger"))
        shorthand.put("type", raw, rule.where("trigger"))
        raw = shorthand
    if not isinstance(raw, LDict):
        ck.error("must be a mapping with a type", rule.where("trigger"), key="trigger", rule=name)
        return None
    spelled = raw.get("type")
    if not isinstance(spelled, str):
        ck.error("needs a type: " + ", ".join(TRIGGER_TYPES), raw.where(), key="trigger.type", rule=name)
        return None
    kind = TRIGGER_ALIASES.get(spelled, spelled)
    if kind not in TRIGGER_FIELDS:
        guess = did_you_mean(spelled, _all_type_names())
        ck.error(
            f"unknown trigger type {spelled!r}" + (f"; did you mean {guess!r}?" if guess else ""),
            raw.where("type"),
            key="trigger.type",
            rule=name,
            hint="trigger types: " + ", ".join(TRIGGER_TYPES),
        )
        return None
    fields = TRIGGER_FIELDS[kind]
    ck.keys(raw, ("type", *fields), path="trigger", rule=name)
    for f in fields:
        if raw.get(f) is None:
            ck.error(f"a {spelled} trigger needs {f!r}", raw.where(), key=f"trigger.{f}", rule=name)
    if kind == "explicit":
        commands = ck.str_list(raw, "commands", path="trigger", rule=name)
        if commands is not None and not commands:
            ck.error("needs at least one command", raw.where("commands"), key="trigger.commands", rule=name)
        return Trigger(kind, commands=commands or (), spelled=spelled)
    if kind == "regex":
        pattern = ck.string(raw, "pattern", path="trigger", rule=name)
        if pattern is not None:
            why = check_regex(pattern)
            if why is not None:
                ck.error(
                    f"pattern {pattern!r} does not compile (RE2): {why}",
                    raw.where("pattern"),
                    key="trigger.pattern",
                    rule=name,
                )
                pattern = None
        return Trigger(kind, pattern=pattern, spelled=spelled)
    if kind == "context_size":
        op = ck.string(raw, "operator", path="trigger", rule=name, choices=OPERATORS)
        value = ck.integer(raw, "value", path="trigger", rule=name, minimum=0)
        return Trigger(kind, operator=op, value=value, spelled=spelled)
    if kind == "script":
        file = ck.string(raw, "file", path="trigger", rule=name)
        if file is None:
            return Trigger(kind, spelled=spelled)
        where = raw.where("file")
        base = Path(where[0]).parent if where[0] and not where[0].startswith("<") else Path.cwd()
        path = (base / file).resolve()
        try:
            source = read_file(path)
        except UnicodeDecodeError:
            ck.error(f"script file {file!r} is not UTF-8 text ({path})", where, key="trigger.file", rule=name)
            return Trigger(kind, file=str(path), spelled=spelled)
        except OSError as exc:
            ck.error(
                f"script file {file!r} cannot be read ({path}): {exc.strerror or exc}",
                where,
                key="trigger.file",
                rule=name,
            )
            return Trigger(kind, file=str(path), spelled=spelled)
        return Trigger(kind, file=str(path), source=source, spelled=spelled)
    return Trigger(kind, spelled=spelled)


def _action(ck: Checker, rule: LDict, name: str) -> Action | None:
    raw = ck.section(rule, "action", ACTION_KEYS, path="action", rule=name)
    if raw is None:
        if "action" not in rule or rule["action"] is None:
            ck.error("needs an action with a target (local or cloud)", rule.where(), key="action", rule=name)
        return None
    target = ck.string(raw, "target", path="action", rule=name, choices=TARGETS)
    if "target" not in raw:
        ck.error("needs a target (local or cloud)", raw.where(), key="action.target", rule=name)
    if target is None:
        return None
    return Action(
        target=target,
        backend=ck.string(raw, "backend", path="action", rule=name),
        model=ck.string(raw, "model", path="action", rule=name),
        adapter=ck.string(raw, "adapter", path="action", rule=name),
        strategy=ck.string(raw, "strategy", path="action", rule=name, choices=STRATEGIES) or "single",
    )


def check_action_refs(
    ck: Checker,
    action: Action,
    where: Where,
    name: str,
    *,
    backends: dict[str, BackendSettings],
    fan_out_enabled: bool,
    key: str = "action",
) -> None:
    """Backend names exist and serve the target's side; fan_out needs orchestration.fan_out.enabled."""
    if action.backend is not None:
        backend = backends.get(action.backend)
        if backend is None:
            guess = did_you_mean(action.backend, backends)
            ck.error(
                f"backend {action.backend!r} is not defined under backends"
                + (f"; did you mean {guess!r}?" if guess else f"; known: {', '.join(backends) or 'none'}"),
                where,
                key=f"{key}.backend",
                rule=name,
            )
        elif backend.side != action.target:
            ck.error(
                f"backend {action.backend!r} serves the {backend.side} side, but the target is "
                f"{action.target}",
                where,
                key=f"{key}.backend",
                rule=name,
            )
    if action.strategy == "fan_out" and not fan_out_enabled:
        ck.error(
            "strategy fan_out needs orchestration.fan_out.enabled: true",
            where,
            key=f"{key}.strategy",
            rule=name,
        )


def read_rules(
    ck: Checker,
    routing: LDict,
    *,
    backends: dict[str, BackendSettings],
    fan_out_enabled: bool,
    read_file: ReadFile,
) -> list[Rule]:
    raw = routing.get("rules")
    if raw is None:
        return []
    if not isinstance(raw, LList):
        ck.error("must be a list of rules", routing.where("rules"), key="routing.rules")
        return []
    rules: list[Rule] = []
    seen: dict[str, Where] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, LDict):
            ck.error("each rule must be a mapping", raw.where(i), key=f"routing.rules[{i}]")
            continue
        name = item.get("name")
        if name is not None and not isinstance(name, str):
            ck.error(
                f"a rule name must be a string, got {name!r} (quote it)",
                item.where("name"),
                key=f"routing.rules[{i}].name",
            )
            name = f"routing.rules[{i}]"
        elif not isinstance(name, str) or not name:
            ck.error("a rule needs a name", item.where(), key=f"routing.rules[{i}].name")
            name = f"routing.rules[{i}]"
        elif name in seen:
            first = seen[name]
            ck.error(
                f"duplicate rule name (first at {first[0]}:{first[1]})",
                item.where("name"),
                key="name",
                rule=name,
            )
        seen.setdefault(name, item.where("name"))
        ck.keys(item, RULE_KEYS, path="", rule=name)
        priority = ck.integer(item, "priority", path="", rule=name)
        if "priority" not in item:
            ck.error(
                "needs a priority (an integer; larger runs first)", item.where(), key="priority", rule=name
            )
        enabled = ck.boolean(item, "enabled", path="", rule=name)
        fallback = ck.string(item, "fallback", path="", rule=name)
        if fallback is not None and fallback != "none" and fallback not in backends:
            ck.error(
                f"fallback {fallback!r} is not a backend name or none",
                item.where("fallback"),
                key="fallback",
                rule=name,
            )
        trigger = _trigger(ck, item, name, read_file)
        action = _action(ck, item, name)
        if action is not None:
            check_action_refs(
                ck, action, item.where("action"), name, backends=backends, fan_out_enabled=fan_out_enabled
            )
        if trigger is None or action is None or priority is None:
            continue
        where = item.where()
        rules.append(
            Rule(
                name=name,
                priority=priority,
                trigger=trigger,
                action=action,
                enabled=or_default(enabled, True),
                fallback=fallback,
                file=where[0],
                line=where[1],
            )
        )
    return rules


def _patterns(ck: Checker, sec: LDict, key: str, path: str) -> tuple[str, ...]:
    patterns = ck.str_list(sec, key, path=path) or ()
    good: list[str] = []
    for p in patterns:
        why = check_regex(p)
        if why is None:
            good.append(p)
        else:
            ck.error(f"pattern {p!r} does not compile (RE2): {why}", sec.where(key), key=f"{path}.{key}")
    return tuple(good)


def read_classifier(ck: Checker, routing: LDict) -> ClassifierSettings:
    p = "routing.task_classifier"
    sec = ck.section(routing, "task_classifier", CLASSIFIER_KEYS, path=p)
    d = ClassifierSettings()
    if sec is None:
        return d

    return ClassifierSettings(
        enabled=ck.boolean(sec, "enabled", path=p) is not False,
        tools_priority=or_default(ck.integer(sec, "tools_priority", path=p), d.tools_priority),
        cloud_priority=or_default(ck.integer(sec, "cloud_priority", path=p), d.cloud_priority),
        small_priority=or_default(ck.integer(sec, "small_priority", path=p), d.small_priority),
        cloud_patterns=_patterns(ck, sec, "cloud_patterns", p),
        small_patterns=_patterns(ck, sec, "small_patterns", p),
        small_max_chars=or_default(ck.integer(sec, "small_max_chars", path=p, minimum=1), d.small_max_chars),
        local_model=ck.string(sec, "local_model", path=p),
        cloud_model=ck.string(sec, "cloud_model", path=p),
        tools_to_cloud=ck.boolean(sec, "tools_to_cloud", path=p) is not False,
    )


def read_complexity(ck: Checker, routing: LDict) -> ComplexitySettings:
    p = "routing.complexity"
    sec = ck.section(routing, "complexity", COMPLEXITY_KEYS, path=p)
    d = ComplexitySettings()
    if sec is None:
        return d
    cloud_above = ck.integer(sec, "cloud_above", path=p, minimum=0)
    if cloud_above is not None and cloud_above > 100:
        ck.error(
            f"must be a score from 0 to 100, got {cloud_above}",
            sec.where("cloud_above"),
            key=f"{p}.cloud_above",
        )
        cloud_above = None
    weights: list[tuple[str, int]] = []
    wsec = ck.section(sec, "weights", COMPLEXITY_SIGNALS, path=f"{p}.weights")
    if wsec is not None:
        for signal in COMPLEXITY_SIGNALS:
            w = ck.integer(wsec, signal, path=f"{p}.weights", minimum=0)
            if w is not None:
                weights.append((signal, w))
    return ComplexitySettings(
        enabled=bool(ck.boolean(sec, "enabled", path=p)),
        cloud_above=or_default(cloud_above, d.cloud_above),
        priority=or_default(ck.integer(sec, "priority", path=p), d.priority),
        keywords=ck.str_list(sec, "keywords", path=p) or d.keywords,
        weights=tuple(weights),
    )


def read_routing(
    ck: Checker, routing: LDict | None, *, backends: dict[str, BackendSettings]
) -> RoutingSettings:
    if routing is None:
        return RoutingSettings()
    sides: dict[str, str | None] = {}
    for side in ("local", "cloud"):
        key = f"{side}_backend"
        name = ck.string(routing, key, path="routing")
        if name is not None and name not in backends:
            ck.error(
                f"backend {name!r} is not defined under backends", routing.where(key), key=f"routing.{key}"
            )
            name = None
        elif name is not None and backends[name].side != side:
            ck.error(
                f"backend {name!r} serves the {backends[name].side} side",
                routing.where(key),
                key=f"routing.{key}",
            )
            name = None
        sides[side] = name
    return RoutingSettings(
        classifier=read_classifier(ck, routing),
        complexity=read_complexity(ck, routing),
        local_backend=sides["local"],
        cloud_backend=sides["cloud"],
        local_only=bool(ck.boolean(routing, "local_only", path="routing")),
    )
