"""The router's sequence of rules as plain values, and the one count of the rules in force.

    sequence(config) -> tuple[Entry, ...]   every rule the router reads, largest priority first
    in_force(config) -> tuple[Entry, ...]   the enabled ones: what `glider doctor`, the dashboard and the
                                            rules editor count and call "the rules in force"

The sequence is the config's own rules and the rules it adds: the task classifier's three
(`task_classifier.tools`, `.cloud`, `.small`) and the complexity rule. Equal priorities keep the order
the router gives them (the file's rules first, in file order, then the added ones), as
`router.compiled.compile_rules` sorts. An added rule is enabled exactly when the router runs it:
`task_classifier.tools` needs both `task_classifier.enabled` and `tools_to_cloud`, the complexity rule
`complexity.enabled`. Pure: no compiling, no scripts.
"""

from __future__ import annotations

from glider_cli.config.model import Action, Config, Rule
from glider_cli.values import Frozen, init_fields

__all__ = ["Entry", "in_force", "sequence"]


class Entry(Frozen):
    """One rule of the sequence. `rule` is the config's Rule, None for a rule the config adds;
    `kind` is the trigger type, `task_classifier` or `complexity`."""

    name: str
    priority: int
    enabled: bool
    action: Action
    kind: str
    rule: Rule | None

    def __init__(
        self, name: str, priority: int, enabled: bool, action: Action, kind: str, rule: Rule | None = None
    ) -> None:
        init_fields(self, name, priority, enabled, action, kind, rule)

    @property
    def target(self) -> str:
        return self.action.target


def sequence(config: Config) -> tuple[Entry, ...]:
    """Every rule the router reads for `config`, in its order (see the module contract)."""
    out = [Entry(r.name, r.priority, r.enabled, r.action, r.trigger.type, r) for r in config.rules]
    cls = config.routing.classifier
    cloud = Action("cloud", model=cls.cloud_model)
    out += [
        Entry(
            "task_classifier.tools",
            cls.tools_priority,
            cls.enabled and cls.tools_to_cloud,
            cloud,
            "task_classifier",
        ),
        Entry("task_classifier.cloud", cls.cloud_priority, cls.enabled, cloud, "task_classifier"),
        Entry(
            "task_classifier.small",
            cls.small_priority,
            cls.enabled,
            Action("local", model=cls.local_model),
            "task_classifier",
        ),
    ]
    cx = config.routing.complexity
    out.append(Entry("complexity", cx.priority, cx.enabled, Action("cloud"), "complexity"))
    out.sort(key=lambda e: -e.priority)  # stable: equal priorities keep the order above
    return tuple(out)


def in_force(config: Config) -> tuple[Entry, ...]:
    """The enabled rules of the sequence: the one definition of "the rules in force"."""
    return tuple(e for e in sequence(config) if e.enabled)
