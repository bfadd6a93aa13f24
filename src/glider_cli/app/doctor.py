"""`glider doctor`: can the backends the config routes to really answer, and with which model?

`doctor(config)` probes every configured backend (`backends.probe`: loopback servers are asked,
cloud backends are described: their key's variable set or not), lays the config's `context_window`
/ `tools` over what was probed, and resolves, for every rule in force (`config.sequence.in_force`: the
config's enabled rules and the task classifier's and complexity rules it adds), the backend and the
model it would use (`backends.registry.model_for`: a rule's own model, else the backend's; `origin` and a
cloud backend without a model pass the client's). A backend is *unusable* when it cannot be reached,
when the model it would be sent is not among those it serves, or when it is a cloud backend whose
API key variable is unset. `Report.ok` is false when a backend that some enabled rule routes to (or
that is a fallback of one) is unusable; `glider doctor` then exits 1. No request is ever sent to a
cloud API. What a local backend answered is kept for `glider lint` (`backends.probe_cache`).

When a `glider serve` answers on the config's `server.host:port`, its `/healthz` gives each backend's
circuit breaker (`backends.breaker`: closed, open or half_open, the last failure, the cool-down
left, how its last attempt ended), shown next to the probe (`Report.serve` is its URL; None when none
answered). Each backend's `status` is its problem, else `failing per glider serve: <why>` when its
last request failed or its breaker is open, else ok. A cloud backend, never probed, is unusable when
it is failing so (origin after DNS failures was "ok" with only the breaker column saying "2/5
failures"); a local backend's usability is its probe's (an open breaker alone is not a problem:
requests go to the fallback while it is open).

`Report.cursor`: which transport each Cursor client (the IDE, cursor-agent) used last through the
Cursor proxy, and when (`store.cursor_transports`); empty when none went through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.backends.output_budget import FLOOR
from glider_cli.backends.probe import Capability
from glider_cli.config.model import Config
from glider_cli.values import Frozen

__all__ = ["BackendReport", "Report", "RuleRoute", "doctor"]


class BackendReport(Frozen):
    name: str
    kind: str
    side: str
    base_url: str | None
    model: str | None
    capability: Capability
    problem: str | None
    routed: bool
    breaker: Mapping[str, Any] | None

    def __init__(
        self,
        name: str,
        kind: str,
        side: str,
        base_url: str | None,
        model: str | None,
        capability: Capability,
        problem: str | None,
        routed: bool,
        breaker: Mapping[str, Any] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.name = name
        s.kind = kind
        s.side = side
        s.base_url = base_url
        s.model = model
        s.capability = capability
        s.problem = problem
        s.routed = routed
        s.breaker = breaker

    @property
    def status(self) -> str:
        """The backend's state in a few words: its problem, else what the running serve saw of its
        last requests (`failing` when the last one failed), else ok."""
        if self.problem is not None:
            return self.problem
        recent = failing(self.breaker)
        if recent is not None:
            return recent
        b = self.breaker
        if b is not None and b.get("failures"):
            return f"ok (answered since {b['failures']} failed in the last {b.get('window', 0):g} s)"
        return "ok"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "type": self.kind,
            "side": self.side,
            "base_url": self.base_url,
        }
        d.update(model=self.model, routed=self.routed, usable=self.problem is None, problem=self.problem)
        d["status"] = self.status
        d.update(self.capability.to_dict())
        d.pop("backend", None)
        d["breaker"] = dict(self.breaker) if self.breaker is not None else None
        return d


class RuleRoute(Frozen):
    rule: str
    priority: int
    target: str
    backend: str | None
    model: str

    def __init__(self, rule: str, priority: int, target: str, backend: str | None, model: str) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.rule = rule
        s.priority = priority
        s.target = target
        s.backend = backend
        s.model = model

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "priority": self.priority,
            "target": self.target,
            "backend": self.backend,
            "model": self.model,
        }


class Report(Frozen):
    source: str
    backends: tuple[BackendReport, ...]
    rules: tuple[RuleRoute, ...]
    serve: str | None
    cursor: Mapping[str, Mapping[str, Any]]

    def __init__(
        self,
        source: str,
        backends: tuple[BackendReport, ...],
        rules: tuple[RuleRoute, ...],
        serve: str | None = None,
        cursor: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.source = source
        s.backends = backends
        s.rules = rules
        s.serve = serve
        s.cursor = cursor or {}

    @property
    def ok(self) -> bool:
        return not any(b.routed and b.problem for b in self.backends)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "config": self.source,
            "serve": self.serve,
            "backends": [b.to_dict() for b in self.backends],
            "rules": [r.to_dict() for r in self.rules],
            "cursor": {k: dict(v) for k, v in self.cursor.items()},
        }


def _problem(
    kind: str, side: str, has_key: bool, key_env: str | None, model: str | None, cap: Capability
) -> str | None:
    if side == "cloud":
        if kind != "origin" and key_env and not has_key:
            return f"${key_env} is not set"
        return None
    if cap.reachable is False:
        return cap.error or "unreachable"
    if cap.error:
        return cap.error
    if model and cap.serves(model) is False:
        return f"does not serve model {model!r} (serves: {', '.join(cap.models or ()) or 'none'})"
    if cap.context_window is not None and cap.context_window <= FLOOR:  # as the gate of `glider serve`
        least = f"the {FLOOR:,} output tokens a local reply gets"
        return f"window {cap.context_window:,} leaves no room for a request beside {least}"
    return None


def failing(breaker: Mapping[str, Any] | None) -> str | None:
    """What `glider serve` saw of a backend whose requests are failing: its breaker is open or
    half-open, or the last attempt failed (the breaker counts a failure for its whole window, a
    success after it included, so the last attempt says whether it is failing now); None otherwise."""
    if breaker is None:
        return None
    state, last = breaker.get("state"), breaker.get("last_attempt")
    if state == "closed" and last != "failed":
        return None
    why = breaker.get("last_error") or "failed"
    n = breaker.get("failures") or 0
    window = breaker.get("window") or 0
    recent = f"{n} failed in the last {window:g} s" if n else "its breaker is " + str(state).replace("_", "-")
    return f"failing per glider serve: {why} ({recent})"


def doctor(config: Config, *, environ: dict[str, str] | None = None, timeout: float = 2.0) -> Report:
    import asyncio
    import os

    from glider_cli.backends.probe import merge, probe_all
    from glider_cli.backends.registry import BackendRegistry, model_for

    env = dict(os.environ) if environ is None else environ
    settings = config.settings
    registry = BackendRegistry.from_settings(
        settings,
        env,
        defaults={"local": config.default_backend("local"), "cloud": config.default_backend("cloud")},
    )
    backends = [registry.get(n) for n in registry.names()]
    probed = asyncio.run(probe_all(backends, timeout=timeout))
    from glider_cli import paths
    from glider_cli.backends import probe_cache

    probe_cache.remember(paths.resolve(env).run / probe_cache.FILENAME, backends, probed)
    from glider_cli.config.sequence import in_force

    routes: list[RuleRoute] = []
    routed: set[str] = set()
    for entry in in_force(config):
        action = entry.action
        fallback = entry.rule.fallback if entry.rule is not None else None
        target = "local" if action.target == "local" else "cloud"
        backend = registry.choose(target, action.backend) if len(registry) else None
        name = backend.name if backend is not None else None
        model = "(the client's)"
        if backend is not None:
            routed.add(backend.name)
            model = model_for(backend, name, action.model, action.adapter, "") or "(the client's)"
            nxt = registry.fallback_for(backend, fallback)
            if nxt is not None:
                routed.add(nxt.name)
        routes.append(RuleRoute(entry.name, entry.priority, target, name, model))
    serve, breakers = served_breakers(config, timeout)
    reports = []
    for b in backends:
        bs = settings.backends[b.name]
        cap = merge(probed[b.name], bs.context_window, bs.tools, bs.structured_output)
        problem = _problem(b.kind, b.side, b.has_key, b.api_key_env, b.model, cap)
        if problem is None and b.side == "cloud":
            # Never probed (no request goes to a cloud API): what the running serve saw is its state.
            problem = failing(breakers.get(b.name))
        reports.append(
            BackendReport(
                b.name,
                b.kind,
                b.side,
                b.base_url,
                b.model,
                cap,
                problem,
                b.name in routed,
                breakers.get(b.name),
            )
        )
    from glider_cli.store import cursor_transports

    cursor = cursor_transports.load(paths.resolve(env).home / "cursor")
    return Report(config.source, tuple(reports), tuple(routes), serve, cursor)


def served_breakers(config: Config, timeout: float) -> tuple[str | None, dict[str, Mapping[str, Any]]]:
    """The URL of the `glider serve` on the config's address and its breakers by backend, from its
    `/healthz`; (None, {}) when no Glider answers there."""
    import httpx

    host = config.settings.server.host
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    url = f"http://{f'[{host}]' if ':' in host else host}:{config.settings.server.port}"
    try:
        data = httpx.get(url + "/healthz", timeout=timeout, trust_env=False).json()
    except (httpx.HTTPError, ValueError):
        return None, {}
    if not isinstance(data, dict) or data.get("status") != "ok" or not isinstance(data.get("backends"), list):
        return None, {}
    found = {
        str(b.get("name")): b["breaker"]
        for b in data["backends"]
        if isinstance(b, dict) and isinstance(b.get("breaker"), dict)
    }
    return url, found
