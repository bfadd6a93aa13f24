"""YAML with locations, and the checks every config section is validated with.

`read_text(path)` reads a file of at most `MAX_FILE_BYTES`. `read_yaml(text, file)` returns plain
dicts/lists that remember where each key and item came from (`LDict.where(key)` -> (file, line)), so
every error names the file and line even after a user config has been merged over a bundled
profile. `Checker` collects `Issue`s instead of stopping at the first one: `glider lint` reports
them all, `config.load_config` raises the first. Unknown keys get a did-you-mean from rapidfuzz.
No value that looks like a secret is echoed back.

Aliases are expanded with bounds: a recursive alias, more than `_MAX_ALIASES` expansions of a
collection, more than `_MAX_NODES` values or nesting past `_MAX_DEPTH` is a ConfigError naming the
file and line, as is a scalar the YAML constructor cannot build (a 5000-digit integer, a bad date).
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

from glider_cli.errors import ConfigError, RuleError
from glider_cli.values import Frozen, init_fields

Where = tuple[str | None, int | None]

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


class LDict(dict[str, Any]):
    """A mapping that remembers the file and line of itself and of each key."""

    def __init__(self, origin: Where = (None, None)) -> None:
        super().__init__()
        self.origin: Where = origin
        self.key_where: dict[str, Where] = {}

    def where(self, key: str | None = None) -> Where:
        if key is not None and key in self.key_where:
            return self.key_where[key]
        return self.origin

    def put(self, key: str, value: Any, where: Where) -> None:
        self[key] = value
        self.key_where[key] = where


class LList(list[Any]):
    """A list that remembers the file and line of itself and of each item."""

    def __init__(self, origin: Where = (None, None)) -> None:
        super().__init__()
        self.origin: Where = origin
        self.item_where: list[Where] = []

    def where(self, index: int | None = None) -> Where:
        if index is not None and 0 <= index < len(self.item_where):
            return self.item_where[index]
        return self.origin

    def add(self, value: Any, where: Where) -> None:
        self.append(value)
        self.item_where.append(where)


# Aliases can expand a small file exponentially ("billion laughs") or refer to themselves: the walk
# below refuses both, and anything nested deeper than any config needs.
_MAX_NODES = 100_000
_MAX_ALIASES = 1_000
_MAX_DEPTH = 64


class _Walk:
    """Budgets for one document: values produced, alias expansions, and the nodes being expanded."""

    def __init__(self, file: str, loader: Any) -> None:
        self.file = file
        self.loader = loader
        self.values = _MAX_NODES
        self.aliases = _MAX_ALIASES
        self.seen: set[int] = set()
        self.open: set[int] = set()

    def fail(self, message: str, node: yaml.Node) -> ConfigError:
        return ConfigError(message, file=self.file, line=node.start_mark.line + 1)

    def scalar(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, AttributeError, OverflowError, RecursionError):
            # The constructor's own failures (a 5000-digit integer, a 13th month): name the type only,
            # never the value (it could be a pasted key).
            kind = str(node.tag).rsplit(":", 1)[-1]
            raise self.fail(f"not a valid {kind} value", node) from None


def _convert(node: yaml.Node, walk: _Walk, depth: int = 0) -> Any:
    walk.values -= 1
    if walk.values < 0:
        raise walk.fail(f"more than {_MAX_NODES} values once aliases are expanded (an alias bomb?)", node)
    key = id(node)
    if key in walk.open:
        raise walk.fail("an alias refers to a node that contains it (a recursive alias)", node)
    if key in walk.seen and isinstance(node, yaml.CollectionNode):
        walk.aliases -= 1
        if walk.aliases < 0:
            raise walk.fail(f"more than {_MAX_ALIASES} expansions of aliases (an alias bomb?)", node)
    if depth > _MAX_DEPTH:
        raise walk.fail(f"nested deeper than {_MAX_DEPTH} levels", node)
    walk.seen.add(key)
    file = walk.file
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        walk.open.add(key)
        out = LDict((file, line))
        for key_node, value_node in node.value:
            k = walk.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(k, str):
                shown = repr(k) if isinstance(key_node, yaml.ScalarNode) else "a collection"
                raise ConfigError(
                    f"keys must be strings, got {shown}", file=file, line=key_node.start_mark.line + 1
                )
            if k in out:
                raise ConfigError(
                    "key given twice in the same mapping",
                    file=file,
                    key=k,
                    line=key_node.start_mark.line + 1,
                )
            out.put(k, _convert(value_node, walk, depth + 1), (file, key_node.start_mark.line + 1))
        walk.open.discard(key)
        return out
    if isinstance(node, yaml.SequenceNode):
        walk.open.add(key)
        seq = LList((file, line))
        for item in node.value:
            seq.add(_convert(item, walk, depth + 1), (file, item.start_mark.line + 1))
        walk.open.discard(key)
        return seq
    return walk.scalar(node)


MAX_FILE_BYTES = 4 << 20


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A config or script file's text. OSError (with a strerror to show) past `limit` bytes, so a
    `--config /dev/zero` or a huge file is an error and not a hang; UnicodeDecodeError for non-UTF-8."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit >> 20} MiB")
    return data.decode("utf-8")


def read_yaml(text: str, file: str) -> LDict:
    """Parse one YAML document into an LDict (an empty file is an empty mapping)."""
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return LDict((file, 1))
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(
                "the top level must be a mapping of sections", file=file, line=node.start_mark.line + 1
            )
        result = _convert(node, _Walk(file, loader))
        assert isinstance(result, LDict)
        return result
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ConfigError(
            f"not valid YAML: {exc.problem or exc.context}",
            file=file,
            line=mark.line + 1 if mark else None,
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", file=file) from exc
    finally:
        loader.dispose()


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
        self, m: LDict, key: str, *, path: str, rule: str | None = None, minimum: int | None = None
    ) -> int | None:
        value: int | None = self._get(
            m, key, path, rule, "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)
        )
        if value is not None and minimum is not None and value < minimum:
            self.error(
                f"must be at least {minimum}, got {value}", m.where(key), key=f"{path}.{key}", rule=rule
            )
            return None
        return value

    def number(self, m: LDict, key: str, *, path: str, rule: str | None = None) -> float | None:
        value = self._get(
            m, key, path, rule, "a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)
        )
        if value is not None and value < 0:
            self.error(f"must not be negative, got {value}", m.where(key), key=f"{path}.{key}", rule=rule)
            return None
        return None if value is None else float(value)

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
