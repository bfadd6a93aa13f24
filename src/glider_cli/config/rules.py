"""Validation of `routing:` -> rules (triggers, actions), and the routing settings around them.

Every problem names the file and line, the rule and the key. Regexes are compiled with RE2 here
so a pattern the linear-time engine cannot compile stops the config from loading. Script files
are resolved relative to the file that names them and read here (the router does no I/O).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from glider_cli.config import profiles
from glider_cli.config.classifier import read_classifier, read_complexity
from glider_cli.config.located import Checker, LDict, LList, Where, did_you_mean, or_default
from glider_cli.config.model import (
    OPERATORS,
    TRIGGER_ALIASES,
    TRIGGER_TYPES,
    Action,
    EscalateSettings,
    RoutingSettings,
    Rule,
    Trigger,
)
from glider_cli.config.regex import check_regex
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
    "escalate",
)
ESCALATE_KEYS = ("on_invalid_reply", "on_client_failure")
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
ReadFile = Callable[[Path], str]


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
        for command in commands or ():
            if not command.startswith("/") or len(command) < 2 or any(c.isspace() for c in command):
                like = "/" + (command.strip("/ ") or "local")
                ck.error(
                    f"command {command!r} must be a slash and a word (like {like}): "
                    "without the slash it would match that word in any message",
                    raw.where("commands"),
                    key="trigger.commands",
                    rule=name,
                )
        return Trigger(kind, commands=commands or (), spelled=spelled)
    if kind == "regex":
        pattern = ck.string(raw, "pattern", path="trigger", rule=name)
        if pattern == "":
            ck.error(
                "an empty pattern matches every message (for that, use `trigger: {type: always}`)",
                raw.where("pattern"),
                key="trigger.pattern",
                rule=name,
            )
            pattern = None
        elif pattern is not None:
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
        return Trigger(kind, file=str(path), source=source, spelled=spelled, bundled=_bundled(path))
    return Trigger(kind, spelled=spelled)


def _bundled(path: Path) -> bool:
    """Whether `path` is one of the scripts that ship with Glider (the bundled profiles' scripts/)."""
    return path.parent == (profiles.profiles_dir() / "scripts").resolve()


def _action(ck: Checker, rule: LDict, name: str) -> Action | None:
    raw = ck.section(rule, "action", ACTION_KEYS, path="action", rule=name)
    if raw is None:
        if "action" not in rule or rule["action"] is None:
            ck.error("needs an action with a target (local or cloud)", rule.where(), key="action", rule=name)
        return None
    target = ck.string(raw, "target", path="action", rule=name, choices=TARGETS)
    if raw.get("target") is None:  # absent, or `target:` with no value
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
    profile_rules: tuple[str, ...] = (),
) -> list[Rule]:
    """The rules of `routing.rules`. `profile_rules` are the names of the rules of the profiles the
    file extends: a rule that gives only a few keys under a name close to one of them is taken for a
    misspelt change of that rule (a did-you-mean), not for a new rule missing its keys."""
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
        partial = not all(k in item for k in ("priority", "trigger", "action"))
        guess = did_you_mean(name, profile_rules) if partial and name not in profile_rules else None
        if guess is not None:
            ck.error(
                f"no rule named {name!r} in the profile this file extends (did you mean {guess!r}?); "
                "as a new rule it would need a priority, a trigger and an action",
                item.where("name"),
                key="name",
                rule=name,
            )
            continue
        ck.keys(item, RULE_KEYS, path="", rule=name)
        priority = ck.integer(item, "priority", path="", rule=name)
        if item.get("priority") is None:  # absent, or `priority:` with no value (null)
            at = item.where("priority") if "priority" in item else item.where()
            ck.error("needs a priority (an integer; larger runs first)", at, key="priority", rule=name)
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
        escalate=read_escalate(ck, routing),
    )


def read_escalate(ck: Checker, routing: LDict) -> EscalateSettings:
    """`routing.escalate` (`config.model.EscalateSettings`): both keys on unless set false."""
    sec = ck.section(routing, "escalate", ESCALATE_KEYS, path="routing.escalate")
    if sec is None:
        return EscalateSettings()
    p = "routing.escalate"
    return EscalateSettings(
        on_invalid_reply=or_default(ck.boolean(sec, "on_invalid_reply", path=p), True),
        on_client_failure=or_default(ck.boolean(sec, "on_client_failure", path=p), True),
    )
