"""YAML with locations, and the checks every config section is validated with.

Files are read by config.yaml_read (`read_text`, `read_yaml` -> LDict/LList that remember the file
and line of each key and item; re-exported here). `Checker` collects `Issue`s instead of stopping
at the first one: `glider lint` reports them all, `config.load_config` raises the first. Unknown
keys get a did-you-mean from rapidfuzz. No value that looks like a secret is echoed back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar

from glider_cli.config.yaml_read import MAX_FILE_BYTES, LDict, LList, Where, read_text, read_yaml
from glider_cli.errors import ConfigError, RuleError
from glider_cli.values import Frozen, init_fields

__all__ = [
    "MAX_FILE_BYTES",
    "Checker",
    "Issue",
    "LDict",
    "LList",
    "Where",
    "did_you_mean",
    "looks_like_secret",
    "or_default",
    "read_text",
    "read_yaml",
    "scan_secrets",
]


# A literal credential where an env-var *name* belongs. Keys are never written to config files.
_SECRET = re.compile(
    r"^(?:Bearer\s+\S{8,}|sk-[A-Za-z0-9_\-]{12,}|sk_[A-Za-z0-9_\-]{12,}|xai-[A-Za-z0-9]{12,}"
    r"|AIza[A-Za-z0-9_\-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,})"
)

T = TypeVar("T")


def or_default(value: T | None, default: T) -> T:
    """A checked value, or the default when the key was absent or invalid (the checks give None)."""
    return default if value is None else value


def looks_like_secret(value: str) -> bool:
    return bool(_SECRET.match(value.strip()))


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    from rapidfuzz import fuzz, process

    found = process.extractOne(word, list(choices), scorer=fuzz.ratio, score_cutoff=60)
    return str(found[0]) if found else None


class Issue(Frozen):
    """One finding: an error (the config cannot load) or a warning (lint only)."""

    message: str
    file: str | None
    line: int | None
    rule: str | None
    key: str | None
    hint: str | None
    severity: Literal["error", "warning"]

    def __init__(
        self,
        message: str,
        file: str | None = None,
        line: int | None = None,
        rule: str | None = None,
        key: str | None = None,
        hint: str | None = None,
        severity: Literal["error", "warning"] = "error",
    ) -> None:
        init_fields(self, message, file, line, rule, key, hint, severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "key": self.key,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "severity": self.severity,
        }

    def to_error(self) -> ConfigError:
        cls = RuleError if self.rule else ConfigError
        return cls(self.message, file=self.file, rule=self.rule, key=self.key, line=self.line, hint=self.hint)

    def __str__(self) -> str:
        return str(self.to_error())


class Checker:
    """Typed reads of config values that record an Issue (and return None) when a value is wrong."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def error(
        self,
        message: str,
        where: Where,
        *,
        key: str | None = None,
        rule: str | None = None,
        hint: str | None = None,
        severity: Literal["error", "warning"] = "error",
    ) -> None:
        self.issues.append(Issue(message, where[0], where[1], rule, key, hint, severity))

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    def section(
        self, parent: LDict, key: str, allowed: Sequence[str], *, path: str, rule: str | None = None
    ) -> LDict | None:
        """parent[key] as a mapping with only `allowed` keys; None when absent or wrong."""
        if key not in parent or parent[key] is None:
            return None
        value = parent[key]
        if not isinstance(value, LDict):
            self.error(f"must be a mapping, got {_kind(value)}", parent.where(key), key=path, rule=rule)
            return None
        self.keys(value, allowed, path=path, rule=rule)
        return value

    def keys(
        self, mapping: LDict, allowed: Sequence[str], *, path: str, rule: str | None = None, what: str = "key"
    ) -> None:
        for key in mapping:
            if key in allowed:
                continue
            guess = did_you_mean(key, allowed)
            full = f"{path}.{key}" if path else key
            self.error(
                f"unknown {what} {key!r}" + (f"; did you mean {guess!r}?" if guess else ""),
                mapping.where(key),
                key=full,
                rule=rule,
                hint=f"allowed here: {', '.join(allowed)}",
            )

    def _get(self, m: LDict, key: str, path: str, rule: str | None, expect: str, ok: Any) -> Any:
        if key not in m or m[key] is None:
            return None
        value = m[key]
        if not ok(value):
            self.error(
                f"must be {expect}, got {_kind(value)}",
                m.where(key),
                key=f"{path}.{key}" if path else key,
                rule=rule,
            )
            return None
        return value

    def boolean(self, m: LDict, key: str, *, path: str, rule: str | None = None) -> bool | None:
        result: bool | None = self._get(m, key, path, rule, "true or false", lambda v: isinstance(v, bool))
        return result

    def integer(
        self,
        m: LDict,
        key: str,
        *,
        path: str,
        rule: str | None = None,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        value: int | None = self._get(
            m, key, path, rule, "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)
        )
        if value is None:
            return None
        why = None
        if minimum is not None and value < minimum:
            why = f"must be at least {minimum}, got {value}"
        elif maximum is not None and value > maximum:
            why = f"must be at most {maximum}, got {value}"
        if why is not None:
            self.error(why, m.where(key), key=f"{path}.{key}", rule=rule)
            return None
        return value

    def port(self, m: LDict, key: str, *, path: str) -> int | None:
        """A TCP port (0 asks the system for a free one)."""
        value: int | None = self._get(
            m, key, path, None, "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)
        )
        if value is not None and not 0 <= value <= 65535:
            self.error(f"must be a TCP port (0-65535), got {value}", m.where(key), key=f"{path}.{key}")
            return None
        return value

    def number(
        self,
        m: LDict,
        key: str,
        *,
        path: str,
        rule: str | None = None,
        between: tuple[float, float] | None = None,
        at_most: float | None = None,
        unit: str = "",
    ) -> float | None:
        """A number, never negative; `between` (inclusive) or `at_most` bound it, said in `unit`."""
        value = self._get(
            m, key, path, rule, "a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)
        )
        if value is None:
            return None
        unit = f" {unit}" if unit else ""
        why = None
        if between is not None and not between[0] <= value <= between[1]:
            why = f"must be between {between[0]:g} and {between[1]:g}{unit}, got {value:g}"
        elif value < 0:
            why = f"must not be negative, got {value}"
        elif at_most is not None and value > at_most:
            why = f"must be at most {at_most:g}{unit}, got {value:g}"
        if why is not None:
            self.error(why, m.where(key), key=f"{path}.{key}", rule=rule)
            return None
        return float(value)

    def string(
        self, m: LDict, key: str, *, path: str, rule: str | None = None, choices: Sequence[str] | None = None
    ) -> str | None:
        value: str | None = self._get(m, key, path, rule, "a string", lambda v: isinstance(v, str))
        if value is not None and choices is not None and value not in choices:
            guess = did_you_mean(value, choices)
            self.error(
                f"{value!r} is not one of {', '.join(choices)}"
                + (f"; did you mean {guess!r}?" if guess else ""),
                m.where(key),
                key=f"{path}.{key}",
                rule=rule,
            )
            return None
        return value

    def str_list(self, m: LDict, key: str, *, path: str, rule: str | None = None) -> tuple[str, ...] | None:
        value = self._get(
            m,
            key,
            path,
            rule,
            "a list of strings",
            lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        )
        return None if value is None else tuple(value)

    def str_map(self, m: LDict, key: str, *, path: str, rule: str | None = None) -> dict[str, str] | None:
        value = self._get(
            m,
            key,
            path,
            rule,
            "a mapping of strings",
            lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        )
        return None if value is None else dict(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if not looks_like_secret(value) else "a secret-looking string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def scan_secrets(value: Any, checker: Checker, where: Where, path: str) -> None:
    """Record an error for every string anywhere in `value` that looks like a literal credential.

    Run over a whole document: a key never belongs in a config file, under any key.
    """
    if isinstance(value, str):
        if looks_like_secret(value):
            checker.error(
                "looks like a literal API key or token; config files must name an environment "
                "variable instead (api_key_env: MY_KEY_VAR)",
                where,
                key=path,
            )
    elif isinstance(value, LDict):
        for k, v in value.items():
            if k == "api_key_env":  # checked where it is read: it must be an env-var name
                continue
            scan_secrets(v, checker, value.where(k), f"{path}.{k}" if path else k)
    elif isinstance(value, LList):
        for i, v in enumerate(value):
            scan_secrets(v, checker, value.where(i), f"{path}[{i}]")
