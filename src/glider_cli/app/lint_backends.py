"""`glider lint`'s reach check: a backend that no request can ever be sent to.

    unreached_backends(config) -> [Issue]      # warnings

A backend is reached when an enabled rule names it (`action.backend`, `fallback`), when it is a
side's default (`routing.local_backend` / `routing.cloud_backend`, else the first backend of that
side in config order: what a rule that names no backend uses, and what summaries use), when an
enabled strategy names it (`orchestration.*` members, judge, stages), when a Starlark script of an
enabled rule mentions its name as a string (a returned action may name it), or when a reached
backend falls back to it (the backend's `fallback`, else a local backend's default cloud one).

The case this is for: `extends: default` plus a new local backend. The profile's `ollama` comes
first, so every local rule still uses it and the new one is never asked; the warning says so and
names the key that fixes it (`routing.local_backend: llama`). A backend a bundled profile defines
and the config left as it is (the profile's `ollama` once `routing.local_backend` names another)
is not the user's to remove, so it is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from glider_cli.config.located import Issue
from glider_cli.config.model import Config
from glider_cli.config.settings import BackendSettings

__all__ = ["unreached_backends"]


def _named_by_rules(config: Config) -> set[str]:
    names: set[str] = set()
    for rule in config.rules:
        if not rule.enabled:
            continue
        action = rule.action
        names.add(action.backend or config.default_backend(action.target) or "")
        if rule.fallback and rule.fallback != "none":
            names.add(rule.fallback)
        source = rule.trigger.source if rule.trigger.type == "script" else None
        if source:
            for name in config.settings.backends:
                if re.search(rf"""["']{re.escape(name)}["']""", source):
                    names.add(name)
    return names


def _named_by_strategies(config: Config) -> set[str]:
    names: set[str] = set()
    for strategy in ("fan_out", "pipeline", "ensemble"):
        st = config.settings.orchestration.get(strategy)
        if st is None:
            continue
        names.update(m.backend or "" for m in st.members)
        names.update(s.backend or config.default_backend(s.side) or "" for s in st.stages)
        names.add(st.judge_backend or "")
    return names


def _with_fallbacks(config: Config, seeds: set[str]) -> set[str]:
    backends = config.settings.backends
    reached: set[str] = set()
    todo = [n for n in seeds if n in backends]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        b = backends[name]
        nxt = b.fallback if b.fallback else (config.default_backend("cloud") if b.side == "local" else None)
        if nxt and nxt != "none" and nxt in backends:
            todo.append(nxt)
    return reached


def _bundled() -> dict[str, list[BackendSettings]]:
    from glider_cli.config.load import load_config
    from glider_cli.config.profiles import bundled_profiles
    from glider_cli.errors import ConfigError

    out: dict[str, list[BackendSettings]] = {}
    for profile in bundled_profiles():
        try:
            backends = load_config(profile=profile).settings.backends
        except ConfigError:
            continue
        for name, b in backends.items():
            out.setdefault(name, []).append(b)
    return out


def unreached_backends(
    config: Config, bundled: Mapping[str, list[BackendSettings]] | None = None
) -> list[Issue]:
    """See the module contract. `bundled`: the bundled profiles' backends by name (default: loaded)."""
    seeds = _named_by_rules(config) | _named_by_strategies(config)
    seeds |= {config.default_backend(side) or "" for side in ("local", "cloud")}
    reached = _with_fallbacks(config, seeds)
    unreached = {n: b for n, b in config.settings.backends.items() if n not in reached}
    if unreached and bundled is None:
        bundled = _bundled()
    out: list[Issue] = []
    for name, b in unreached.items():
        if b in (bundled or {}).get(name, ()):
            continue
        key = f"routing.{b.side}_backend"
        default = config.default_backend(b.side)
        uses = f"use {default!r}" if default else "use no backend"
        out.append(
            Issue(
                f"backend {name!r} ({b.side}) is never used: no rule, fallback or strategy names it, and the "
                f"{b.side} rules that name no backend {uses}; set `{key}: {name}` to make it the {b.side} "
                "default, or name it in a rule's action.backend",
                file=config.source,
                rule=None,
                key=key,
                severity="warning",
            )
        )
    return out
