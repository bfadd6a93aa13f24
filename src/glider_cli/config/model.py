"""The routing half of a loaded configuration: rules, triggers, actions, classifier and complexity.

Values only (frozen, `values.Frozen`); `glider_cli.config.load` builds them from YAML after validation and
`glider_cli.router` compiles them. Everything that is not routing lives in `settings.Settings`.
"""

from __future__ import annotations

from glider_cli.config.settings import Settings
from glider_cli.values import Frozen, init_fields

TRIGGER_TYPES: tuple[str, ...] = ("explicit", "regex", "context_size", "always", "script", "composer_wrapup")
# Other spellings the spec accepts for a trigger type -> the canonical type.
TRIGGER_ALIASES: dict[str, str] = {
    "wrapup_origin": "composer_wrapup",
    "composer_wrapup_origin": "composer_wrapup",
}
OPERATORS: tuple[str, ...] = (">", ">=", "<", "<=", "==", "=")


class Action(Frozen):
    """Where a matching rule sends the request. None fields mean "the default" (see router)."""

    target: str
    backend: str | None
    model: str | None
    adapter: str | None
    strategy: str

    def __init__(
        self,
        target: str,
        backend: str | None = None,
        model: str | None = None,
        adapter: str | None = None,
        strategy: str = "single",
    ) -> None:
        init_fields(self, target, backend, model, adapter, strategy)

    def to_dict(self) -> dict[str, str | None]:
        return {
            "target": self.target,
            "backend": self.backend,
            "model": self.model,
            "adapter": self.adapter,
            "strategy": self.strategy,
        }


class Trigger(Frozen):
    """One of the six trigger types. Only the fields of `type` are set.

    `file` is the script's absolute path and `source` its text (read when the config loads, so the
    router does no I/O); `bundled` when the file is one of the scripts that ship with Glider (the
    bundled profiles' `scripts/`), which the router evaluates in-process instead of in the sandbox
    worker. `spelled` is the type as written (an alias of composer_wrapup, say).
    """

    type: str
    commands: tuple[str, ...]
    pattern: str | None
    operator: str | None
    value: int | None
    file: str | None
    source: str | None
    spelled: str | None
    bundled: bool

    def __init__(
        self,
        type: str,
        commands: tuple[str, ...] = (),
        pattern: str | None = None,
        operator: str | None = None,
        value: int | None = None,
        file: str | None = None,
        source: str | None = None,
        spelled: str | None = None,
        bundled: bool = False,
    ) -> None:
        init_fields(self, type, commands, pattern, operator, value, file, source, spelled, bundled)


class Rule(Frozen):
    """One entry of `routing.rules`. `file`/`line` say where it was written (None when synthesized)."""

    name: str
    priority: int
    trigger: Trigger
    action: Action
    enabled: bool
    fallback: str | None
    file: str | None
    line: int | None

    def __init__(
        self,
        name: str,
        priority: int,
        trigger: Trigger,
        action: Action,
        enabled: bool = True,
        fallback: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        init_fields(self, name, priority, trigger, action, enabled, fallback, file, line)

    @property
    def where(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line else self.file


class ClassifierSettings(Frozen):
    """`routing.task_classifier`: three rules the router adds to the sequence.

    tools (a request with tools -> cloud), cloud patterns (-> cloud), small patterns (-> local; the
    last user message must also be at most `small_max_chars` long). Patterns are RE2, matched
    case-insensitively against the most recent user message. `tools_to_cloud: false` turns the
    tools rule off alone (the local-first profile: tools decide nothing by themselves).
    """

    enabled: bool
    tools_priority: int
    cloud_priority: int
    small_priority: int
    cloud_patterns: tuple[str, ...]
    small_patterns: tuple[str, ...]
    small_max_chars: int
    local_model: str | None
    cloud_model: str | None
    tools_to_cloud: bool

    def __init__(
        self,
        enabled: bool = True,
        tools_priority: int = 85,
        cloud_priority: int = 80,
        small_priority: int = 70,
        cloud_patterns: tuple[str, ...] = (),
        small_patterns: tuple[str, ...] = (),
        small_max_chars: int = 2000,
        local_model: str | None = None,
        cloud_model: str | None = None,
        tools_to_cloud: bool = True,
    ) -> None:
        init_fields(
            self,
            enabled,
            tools_priority,
            cloud_priority,
            small_priority,
            cloud_patterns,
            small_patterns,
            small_max_chars,
            local_model,
            cloud_model,
            tools_to_cloud,
        )


class ComplexitySettings(Frozen):
    """`routing.complexity`: the 0-100 heuristic score and the rule at `priority` (off by default).

    The score sums capped signals (see `router.complexity`); `weights` caps each signal's share and
    `keywords` are the words that suggest a hard task.
    """

    enabled: bool
    cloud_above: int
    priority: int
    keywords: tuple[str, ...]
    weights: tuple[tuple[str, int], ...]

    def __init__(
        self,
        enabled: bool = False,
        cloud_above: int = 60,
        priority: int = 75,
        keywords: tuple[str, ...] = (),
        weights: tuple[tuple[str, int], ...] = (),
    ) -> None:
        init_fields(self, enabled, cloud_above, priority, keywords, weights)


class EscalateSettings(Frozen):
    """`routing.escalate`: a turn a rule sent local goes to the cloud when its local reply cannot be
    used (`on_invalid_reply`: a tool that was not offered, arguments that do not parse or lack a
    required property, an empty reply; `proxy.escalate`) or when the client says the last answer
    failed (`on_client_failure`: `turns.client_texts`, `turns.sticky`). Never after an explicit
    `/local`; with `routing.local_only` a bad reply is retried once locally instead."""

    on_invalid_reply: bool
    on_client_failure: bool

    def __init__(self, on_invalid_reply: bool = True, on_client_failure: bool = True) -> None:
        init_fields(self, on_invalid_reply, on_client_failure)


class RoutingSettings(Frozen):
    """`routing:` apart from its rules. `local_only` (the pure-local profile): nothing goes to the
    cloud unless the user's own explicit command (`/cloud`, `/heavy`) sends it — other cloud rules
    do not run, summaries stay local, a local backend falls back to no cloud backend, and a request
    no local backend can take is an error naming the gate."""

    classifier: ClassifierSettings
    complexity: ComplexitySettings
    local_backend: str | None
    cloud_backend: str | None
    local_only: bool
    escalate: EscalateSettings

    def __init__(
        self,
        classifier: ClassifierSettings = ClassifierSettings(),
        complexity: ComplexitySettings = ComplexitySettings(),
        local_backend: str | None = None,
        cloud_backend: str | None = None,
        local_only: bool = False,
        escalate: EscalateSettings = EscalateSettings(),
    ) -> None:
        init_fields(self, classifier, complexity, local_backend, cloud_backend, local_only, escalate)


class Config(Frozen):
    """A loaded, validated configuration. `source` is a path or `<bundled:NAME>`."""

    settings: Settings
    rules: tuple[Rule, ...]
    routing: RoutingSettings
    source: str
    profile: str | None
    files: tuple[str, ...]

    def __init__(
        self,
        settings: Settings,
        rules: tuple[Rule, ...],
        routing: RoutingSettings,
        source: str,
        profile: str | None = None,
        files: tuple[str, ...] = (),
    ) -> None:
        init_fields(self, settings, rules, routing, source, profile, files)

    def default_backend(self, side: str) -> str | None:
        """The backend a rule of this side uses when its action names none."""
        explicit = self.routing.local_backend if side == "local" else self.routing.cloud_backend
        if explicit:
            return explicit
        for name, backend in self.settings.backends.items():
            if backend.side == side:
                return name
        return None
