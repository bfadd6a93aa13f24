"""Validation of `routing.task_classifier` and `routing.complexity` -> their settings.

The classifier's patterns are compiled with RE2 here (`config.regex.check_regex`), so a pattern the
linear-time engine cannot compile stops the config from loading; every problem names the key.
"""

from __future__ import annotations

from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.config.model import ClassifierSettings, ComplexitySettings
from glider_cli.config.regex import check_regex

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
