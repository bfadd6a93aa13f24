"""The routing half of a loaded configuration: rules, triggers, actions, classifier and complexity.

Values only (frozen dataclasses); `glider_cli.config` builds them from YAML after validation and
`glider_cli.router` compiles them. Everything that is not routing lives in `settings.Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glider_cli.settings import Settings

TRIGGER_TYPES: tuple[str, ...] = ("explicit", "regex", "context_size", "always", "script", "composer_wrapup")
# Other spellings the spec accepts for a trigger type -> the canonical type.
TRIGGER_ALIASES: dict[str, str] = {
    "wrapup_origin": "composer_wrapup",
    "composer_wrapup_origin": "composer_wrapup",
}
OPERATORS: tuple[str, ...] = (">", ">=", "<", "<=", "==", "=")


@dataclass(frozen=True)
class Action:
    """Where a matching rule sends the request. None fields mean "the default" (see router)."""

    target: str
    backend: str | None = None
    model: str | None = None
    adapter: str | None = None
    strategy: str = "single"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "target": self.target,
            "backend": self.backend,
            "model": self.model,
            "adapter": self.adapter,
            "strategy": self.strategy,
        }


@dataclass(frozen=True)
class Trigger:
    """One of the six trigger types. Only the fields of `type` are set.

    `file` is the script's absolute path and `source` its text (read when the config loads, so the
    router does no I/O). `spelled` is the type as written (an alias of composer_wrapup, say).
    """

    type: str
    commands: tuple[str, ...] = ()
    pattern: str | None = None
    operator: str | None = None
    value: int | None = None
    file: str | None = None
    source: str | None = None
    spelled: str | None = None


@dataclass(frozen=True)
class Rule:
    """One entry of `routing.rules`. `file`/`line` say where it was written (None when synthesized)."""

    name: str
    priority: int
    trigger: Trigger
    action: Action
    enabled: bool = True
    fallback: str | None = None
    file: str | None = None
    line: int | None = None

    @property
    def where(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class ClassifierSettings:
    """`routing.task_classifier`: three rules the router adds to the sequence.

    tools (a request with tools -> cloud), cloud patterns (-> cloud), small patterns (-> local; the
    last user message must also be at most `small_max_chars` long). Patterns are RE2, matched
    case-insensitively against the most recent user message.
    """

    enabled: bool = True
    tools_priority: int = 85
    cloud_priority: int = 80
    small_priority: int = 70
    cloud_patterns: tuple[str, ...] = ()
    small_patterns: tuple[str, ...] = ()
    small_max_chars: int = 2000
    local_model: str | None = None
    cloud_model: str | None = None


@dataclass(frozen=True)
class ComplexitySettings:
    """`routing.complexity`: the 0-100 heuristic score and the rule at `priority` (off by default).

    The score sums capped signals (see `router.complexity`); `weights` caps each signal's share and
    `keywords` are the words that suggest a hard task.
    """

    enabled: bool = False
    cloud_above: int = 60
    priority: int = 75
    keywords: tuple[str, ...] = ()
    weights: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RoutingSettings:
    classifier: ClassifierSettings = field(default_factory=ClassifierSettings)
    complexity: ComplexitySettings = field(default_factory=ComplexitySettings)
    local_backend: str | None = None
    cloud_backend: str | None = None


@dataclass(frozen=True)
class Config:
    """A loaded, validated configuration. `source` is a path or `<bundled:NAME>`."""

    settings: Settings
    rules: tuple[Rule, ...]
    routing: RoutingSettings
    source: str
    profile: str | None = None
    files: tuple[str, ...] = ()

    def default_backend(self, side: str) -> str | None:
        """The backend a rule of this side uses when its action names none."""
        explicit = self.routing.local_backend if side == "local" else self.routing.cloud_backend
        if explicit:
            return explicit
        for name, backend in self.settings.backends.items():
            if backend.side == side:
                return name
        return None
