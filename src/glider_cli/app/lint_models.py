"""`glider lint`'s model check: a rule that sends a local backend a model it does not serve.

    unserved_models(config, known) -> [Issue]      # warnings

`known` is what each local backend served when it was last probed (`backends.probe_cache`, written
by `glider serve` and `glider doctor`): lint itself sends no request. For every enabled rule on the
local side, its backend, its fallback backend and the model each would be sent are resolved by the
backend registry, as a request (and `glider doctor`) resolves them (`BackendRegistry.choose` and
`fallback_for`, `backends.registry.model_for`: for the rule's backend its adapter, else its model,
else the backend's own; a fallback backend gets its own model, never the decision's); a fallback
on the cloud side is not probed and not checked. A warning names the rule, the backend, the model and
what the backend served at the time of the probe (`ollama pull <model>` for Ollama). A backend
with no record, a record taken at another base URL, or a rule with no model to send says nothing:
unknown is not wrong. The warning is keyed where the model comes from: `action.adapter`,
`action.model`, `backends.<name>.model` (the backend's own), or `fallback` (the fallback backend's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from glider_cli.backends.probe_cache import Known
from glider_cli.backends.registry import Backend, BackendRegistry, model_for
from glider_cli.config.located import Issue
from glider_cli.config.model import Config, Rule
from glider_cli.errors import ConfigError

__all__ = ["unserved_models"]


def _ago(at: float | None) -> str:
    if at is None:
        return "when last probed"
    s = max(time.time() - at, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"when probed {int(s // size)} {unit} ago"
    return "when probed just now"


def _issue(rule: Rule, b: Backend, model: str, k: Known, key: str) -> Issue:
    served = ", ".join(k.models) or "none"
    hint = f"; run `ollama pull {model}` or name a served model" if b.kind == "ollama" else ""
    return Issue(
        f"backend {b.name!r} did not serve model {model!r} {_ago(k.probed_at)} (it served: {served}): "
        f"a request this rule sends there gets a 404 and falls back{hint}",
        file=rule.file,
        line=rule.line,
        rule=rule.name,
        key=key,
        severity="warning",
    )


def _check(rule: Rule, b: Backend | None, model: str, known: Mapping[str, Known], key: str) -> list[Issue]:
    if b is None or b.side != "local" or not model:
        return []
    k = known.get(b.name)
    if k is None or not k.applies(b.base_url) or k.capability().serves(model) is not False:
        return []
    return [_issue(rule, b, model, k, key)]


def unserved_models(config: Config, known: Mapping[str, Known]) -> list[Issue]:
    """See the module contract."""
    if not known:
        return []
    registry = BackendRegistry.from_settings(
        config.settings, {}, defaults={s: config.default_backend(s) for s in ("local", "cloud")}
    )
    out: list[Issue] = []
    for rule in config.rules:
        action = rule.action
        if not rule.enabled or action.target != "local":
            continue
        try:
            b = registry.choose("local", action.backend)
            fb = registry.fallback_for(b, rule.fallback)
        except ConfigError:
            continue  # an unknown backend is an error of its own (the loader's)
        model = model_for(b, b.name, action.model, action.adapter, "")
        key = (
            "action.adapter"
            if action.adapter
            else "action.model"
            if action.model
            else f"backends.{b.name}.model"
        )
        out += _check(rule, b, model, known, key)
        if fb is not None:
            out += _check(
                rule, fb, model_for(fb, b.name, action.model, action.adapter, ""), known, "fallback"
            )
    return out
