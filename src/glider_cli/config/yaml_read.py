"""Reading a config file: at most `MAX_FILE_BYTES` of UTF-8 (`read_text`), then YAML into plain dicts
and lists that remember where each key and item came from (`read_yaml` -> LDict; `LDict.where(key)`
-> (file, line)), so every error can name the file and line even after a user config has been
merged over a bundled profile.

Aliases are expanded with bounds: a recursive alias, more than `_MAX_ALIASES` expansions of a
collection, more than `_MAX_NODES` values or nesting past `_MAX_DEPTH` is a ConfigError naming the
file and line, as is a scalar the YAML constructor cannot build (a 5000-digit integer, a bad date).
A file larger than `MAX_FILE_BYTES` (or one that never ends, `/dev/zero`) is an OSError to report.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import yaml

from glider_cli.errors import ConfigError

Where = tuple[str | None, int | None]


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

    def spend_value(self, node: yaml.Node) -> None:
        """One more value produced: ConfigError past the budget."""
        self.values -= 1
        if self.values < 0:
            raise self.fail(f"more than {_MAX_NODES} values once aliases are expanded (an alias bomb?)", node)

    def spend_alias(self, node: yaml.Node) -> None:
        """One more expansion of an alias: ConfigError past the budget."""
        self.aliases -= 1
        if self.aliases < 0:
            raise self.fail(f"more than {_MAX_ALIASES} expansions of aliases (an alias bomb?)", node)

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
    walk.spend_value(node)
    key = id(node)
    if key in walk.open:
        raise walk.fail("an alias refers to a node that contains it (a recursive alias)", node)
    if key in walk.seen and isinstance(node, yaml.CollectionNode):
        walk.spend_alias(node)
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
