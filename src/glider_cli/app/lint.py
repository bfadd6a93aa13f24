"""`glider lint`: every problem in a configuration, not just the first.

Findings (errors unless noted), each with `rule`, `key`, `message` and `file`/`line` where known:
- everything the loader rejects (unknown keys and trigger types with a did-you-mean, missing fields,
  wrong types, RE2 patterns that do not compile, missing script files, invalid targets and
  strategies, unknown backends, fan_out without `orchestration.fan_out.enabled`, duplicate rule
  names, literal secrets);
- Starlark syntax errors (file:line:col) and load-time errors (undefined names, no `evaluate`, a top
  level that runs out of time or memory), checked in the script sandbox (sandbox.supervisor; a
  bundled script that runs as Python, `sandbox.native`, by that subset's check instead), and a
  `def evaluate(` that does not take exactly one argument (read from the source, not run);
- the rule sequence (`app.lint_rules`): no catch-all (a request could get no route), rules that
  can never run (the same trigger above them, or rules above that take every request they could
  match: an `always` rule, complementary `context_size` pairs), an `adapter` on a backend that is
  not a local vLLM server;
- (warning) a rule of the person's own files that a request with tools never reaches: the task
  classifier's tools rule above it (85) takes every such request — every agent's — first;
- (warning) a script whose returned action visibly disagrees with its rule's action block
  (a literal `"target": "..."` or `"strategy": "..."` in the script that differs from the rule's);
- (warning) a rule whose target side has no backend (none named in the action, none of that side);
- (warning) a rule (or its script) asking for `pipeline` or `ensemble` while that strategy's
  `orchestration.<strategy>.enabled` is not true (the request then gets one ordinary call);
- (warning) a backend no request can reach (`app.lint_backends`): no rule, fallback, strategy or
  side default (`routing.local_backend` / `routing.cloud_backend`) leads to it;
- (warning) a local rule whose backend did not serve the model it would be sent, when that
  backend's last probe is known (`app.lint_models`, from `$GLIDER_HOME/run/probes.json`);
- (warning) a local backend whose `context_window` the capability gate lets no request through
  (`app.lint_windows`: 1,024 tokens or under, the least output a local reply gets).
The same checks back `GET /api/router/lint`. No network, no writes. Every finding names the file,
the rule (None for a finding about the whole sequence) and the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from glider_cli.config.located import Issue
from glider_cli.config.model import Config, Rule
from glider_cli.errors import ConfigError
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.backends.probe_cache import Known
    from glider_cli.sandbox.results import Diagnostic

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
        for d in _load_diagnostics(trig.source, trig.file or "<script>", bundled=trig.bundled)
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


def _load_diagnostics(source: str, filename: str, *, bundled: bool) -> list[Diagnostic]:
    """What stops the script from loading where it runs. A bundled script (Glider's own) in the
    subset `sandbox.native` takes runs as Python, never in Starlark (`router.triggers`), and that
    subset check already rules out what loading it would find (syntax outside the subset, an
    undefined name, no `evaluate(request)`, a top level that is more than literals and defs): it is
    not loaded in the interpreter, which `glider serve` then never starts (issue 29's cold start).
    Any other bundled script is checked in-process, where it runs; a user's in the checking sandbox."""
    if bundled:
        from glider_cli.sandbox.native import unfit

        if unfit(source) is None:
            return []  # `router.scripts` (and the sandbox's supervisor under it) is never imported
    from glider_cli.router.scripts import check_source

    if not bundled:
        return check_source(source, filename)
    from glider_cli.sandbox.inprocess import bundled_sandbox

    return check_source(source, filename, sandbox=bundled_sandbox())


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


def _disabled_strategies(config: Config) -> list[Issue]:
    out: list[Issue] = []
    for rule in config.rules:
        asked = {rule.action.strategy}
        if rule.trigger.type == "script" and rule.trigger.source:
            asked |= {m.group(2) for m in _LITERAL.finditer(rule.trigger.source) if m.group(1) == "strategy"}
        for strategy in sorted(asked & {"pipeline", "ensemble"}):
            if rule.enabled and config.settings.orchestration.get(strategy) is None:
                out.append(
                    Issue(
                        f"asks for strategy {strategy}, but orchestration.{strategy}.enabled is not true: "
                        "the request gets one ordinary call (set it to make the strategy operate)",
                        file=rule.file,
                        line=rule.line,
                        rule=rule.name,
                        key="action.strategy",
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
    known: Mapping[str, Known] | None = None,
) -> LintReport:
    """Check a loaded Config, or load one (same resolution as `load_config`) and check everything.
    `known`: the backends' last probes (default: the cache under the environ's GLIDER_HOME)."""
    from glider_cli.config.load import check_config, resolve_source

    # The script checker starts while the config loads (a given config: only if it names a user script;
    # without one, `glider serve` never imports the sandbox's supervisor: issue 29's cold start).
    if config is None or any(r.trigger.type == "script" and not r.trigger.bundled for r in config.rules):
        from glider_cli.sandbox.supervisor import checking_sandbox

        checking_sandbox().start()
    issues: list[Issue] = []
    if config is None:
        try:
            config, issues = check_config(config=config_path, profile=profile, environ=environ)
        except ConfigError as exc:
            label = resolve_source(config=config_path, profile=profile, environ=environ).label
            issue = Issue(exc.detail, file=exc.file or label, line=exc.line, rule=exc.rule, key=exc.key)
            return LintReport(source=label, errors=(issue,))
    from glider_cli.app import lint_rules

    for rule in config.rules:
        issues.extend(_script_issues(rule))
        issues.extend(lint_rules.script_arity(rule))
    issues.extend(lint_rules.no_catch_all(config))
    dead = lint_rules.dead_rules(config)
    issues.extend(dead)
    issues.extend(lint_rules.tools_shadowed(config, (i.rule for i in dead if i.rule)))
    issues.extend(lint_rules.adapters(config))
    issues.extend(_sideless(config))
    issues.extend(_disabled_strategies(config))
    from glider_cli.app.lint_backends import unreached_backends
    from glider_cli.config.sequence import in_force

    issues.extend(unreached_backends(config))
    from glider_cli.app.lint_models import unserved_models

    issues.extend(unserved_models(config, _known(environ) if known is None else known))
    from glider_cli.app.lint_windows import small_windows

    issues.extend(small_windows(config))
    return LintReport(
        source=config.source,
        errors=tuple(i for i in issues if i.severity == "error"),
        warnings=tuple(i for i in issues if i.severity == "warning"),
        rules=len(in_force(config)),
        files=config.files,
    )


def _known(environ: Mapping[str, str] | None) -> Mapping[str, Known]:
    from glider_cli import paths
    from glider_cli.backends import probe_cache

    return probe_cache.load(paths.resolve(environ).run / probe_cache.FILENAME)


def lint_on_disk(config: Config) -> LintReport:
    """Lint the file `config` was loaded from as it is on disk now (its bundled profile for one)."""
    if config.source.startswith("<bundled:"):
        return lint(profile=config.profile or config.source[len("<bundled:") : -1])
    return lint(config_path=config.source)
