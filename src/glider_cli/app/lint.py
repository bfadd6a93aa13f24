"""`glider lint`: every problem in a configuration, not just the first.

Findings (errors unless noted), each with `rule`, `key`, `message` and `file`/`line` where known:
- everything the loader rejects (unknown keys and trigger types with a did-you-mean, missing fields,
  wrong types, RE2 patterns that do not compile, missing script files, invalid targets and
  strategies, unknown backends, fan_out without `orchestration.fan_out.enabled`, duplicate rule
  names, literal secrets);
- Starlark syntax errors (file:line:col) and load-time errors (undefined names, no `evaluate`, a top
  level that runs out of time or memory), checked in the script sandbox (sandbox.supervisor);
- rules that can never run because an enabled `always` rule of higher priority has control first;
- (warning) a script whose returned action visibly disagrees with its rule's action block
  (a literal `"target": "..."` or `"strategy": "..."` in the script that differs from the rule's);
- (warning) a rule whose target side has no backend (none named in the action, none of that side).
The same checks back `GET /api/router/lint`. No network, no writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from glider_cli.config.located import Issue
from glider_cli.config.model import Config, Rule
from glider_cli.errors import ConfigError
from glider_cli.values import Frozen, init_fields

_LITERAL = re.compile(r"""["'](target|strategy)["']\s*:\s*["']([A-Za-z_]+)["']""")


class LintReport(Frozen):
    source: str
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]
    rules: int
    files: tuple[str, ...]

    def __init__(
        self,
        source: str,
        errors: tuple[Issue, ...] = (),
        warnings: tuple[Issue, ...] = (),
        rules: int = 0,
        files: tuple[str, ...] = (),
    ) -> None:
        init_fields(self, source, errors, warnings, rules, files)

    @property
    def ok(self) -> bool:
        return not self.errors

    def __iter__(self) -> Iterator[Issue]:
        yield from self.errors
        yield from self.warnings

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "errors": [i.to_dict() for i in self.errors],
            "warnings": [i.to_dict() for i in self.warnings],
        }


def _script_issues(rule: Rule) -> list[Issue]:
    from glider_cli.router.scripts import check_source

    trig = rule.trigger
    if trig.type != "script" or trig.source is None:
        return []
    out = [
        Issue(
            f"script {trig.file}:{d.line}:{d.col}: {d.message}",
            file=trig.file,
            line=d.line or None,
            rule=rule.name,
            key="trigger.file",
        )
        for d in check_source(trig.source, trig.file or "<script>")
    ]
    if out:
        return out
    expected = {"target": rule.action.target, "strategy": rule.action.strategy}
    for m in _LITERAL.finditer(trig.source):
        key, value = m.group(1), m.group(2)
        if value != expected[key]:
            line = trig.source.count("\n", 0, m.start()) + 1
            out.append(
                Issue(
                    f"the script returns {key} {value!r} but the rule's action says {expected[key]!r}; "
                    "the script's action wins, so keep the two in agreement",
                    file=trig.file,
                    line=line,
                    rule=rule.name,
                    key=f"action.{key}",
                    severity="warning",
                )
            )
    return out


def _sequence(config: Config) -> list[tuple[str, int, bool, str, Rule | None]]:
    """(name, priority, enabled, kind, rule) in the router's order, synthesized rules included."""
    seq: list[tuple[str, int, bool, str, Rule | None]] = [
        (r.name, r.priority, r.enabled, r.trigger.type, r) for r in config.rules
    ]
    cls = config.routing.classifier
    seq += [
        ("task_classifier.tools", cls.tools_priority, cls.enabled, "task_classifier", None),
        ("task_classifier.cloud", cls.cloud_priority, cls.enabled, "task_classifier", None),
        ("task_classifier.small", cls.small_priority, cls.enabled, "task_classifier", None),
    ]
    cx = config.routing.complexity
    seq.append(("complexity", cx.priority, cx.enabled, "complexity", None))
    seq.sort(key=lambda item: -item[1])
    return seq


def _unreachable(config: Config) -> list[Issue]:
    out: list[Issue] = []
    blocker: Rule | None = None
    for name, _priority, enabled, kind, rule in _sequence(config):
        if blocker is not None and enabled:
            out.append(
                Issue(
                    f"can never run: the always rule {blocker.name!r} (priority {blocker.priority}) "
                    "has control first",
                    file=rule.file if rule else blocker.file,
                    line=rule.line if rule else None,
                    rule=name,
                    key="priority",
                )
            )
        elif blocker is None and enabled and kind == "always" and rule is not None:
            blocker = rule
    return out


def _sideless(config: Config) -> list[Issue]:
    """Warnings for rules whose target side has no backend to send to (none named, no default)."""
    out: list[Issue] = []
    for rule in config.rules:
        side = rule.action.target
        if rule.enabled and rule.action.backend is None and config.default_backend(side) is None:
            out.append(
                Issue(
                    f"targets {side}, but no backend serves the {side} side (add one under backends "
                    f"with side: {side}, or name one in the action)",
                    file=rule.file,
                    line=rule.line,
                    rule=rule.name,
                    key="action.backend",
                    severity="warning",
                )
            )
    return out


def lint(
    config: Config | None = None,
    *,
    config_path: str | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LintReport:
    """Check a loaded Config, or load one (same resolution as `load_config`) and check everything."""
    from glider_cli.config.load import check_config, resolve_source
    from glider_cli.sandbox.supervisor import checking_sandbox

    # The script checker starts while the config loads.
    checking_sandbox().start()
    issues: list[Issue] = []
    if config is None:
        try:
            config, issues = check_config(config=config_path, profile=profile, environ=environ)
        except ConfigError as exc:
            label = resolve_source(config=config_path, profile=profile, environ=environ).label
            issue = Issue(exc.detail, file=exc.file or label, line=exc.line, rule=exc.rule, key=exc.key)
            return LintReport(source=label, errors=(issue,))
    for rule in config.rules:
        issues.extend(_script_issues(rule))
    issues.extend(_unreachable(config))
    issues.extend(_sideless(config))
    return LintReport(
        source=config.source,
        errors=tuple(i for i in issues if i.severity == "error"),
        warnings=tuple(i for i in issues if i.severity == "warning"),
        rules=len(config.rules),
        files=config.files,
    )
