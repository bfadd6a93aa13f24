"""Edit a config file's routing rules where the dashboard shows them, keeping the rest of the file as it is.

    edited = edit(text, ops, profile_rules=(...))   # Edited(text, diff); EditError on a bad op
    check(path, new_text) -> LintReport             # the linter on the edited file, before saving

Ops (JSON from the dashboard), applied in order to the file's own `routing.rules` list:
    {"op": "add", "rule": {name, priority, trigger, action, [enabled, fallback, description]}}
    {"op": "set", "name": N, "fields": {priority | enabled | trigger | action | fallback | description:
                                         a value, or null to remove the key}}
    {"op": "move", "name": N, "to": i}   the rule's place in this file's list (0 first)
A `set` on a rule this file does not define but its profile does (`profile_rules`) adds an override
entry `{name: N, <fields>}`, which the loader merges over the profile's rule by name (so disabling a
profile rule is `set enabled: false`). Only `routing.rules` is ever touched, and no value may look
like a literal key or token (`looks_like_secret`): a key never goes into a config file.

The file is read and written with ruamel.yaml's round-trip mode (comments, key order, quoting, flow
or block style, and the file's own indentation — guessed from it — are kept for everything not edited),
never re-dumped from plain data. `diff` is a unified diff of the file before and after.
`check(path, text)` writes the edited text to a hidden file beside `path` (so `extends`, script paths
and relative files resolve the same), lints it (`app.lint.lint`) and removes it; issues name `path`.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from glider_cli.config.located import looks_like_secret
from glider_cli.config.rules import RULE_KEYS
from glider_cli.errors import RequestError
from glider_cli.values import Frozen, init_fields

__all__ = ["EditError", "Edited", "check", "edit"]

_SET_KEYS = tuple(k for k in RULE_KEYS if k != "name")


class EditError(RequestError):
    """An op that cannot be applied (422)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=422)


class Edited(Frozen):
    text: str
    diff: str

    def __init__(self, text: str, diff: str) -> None:
        init_fields(self, text, diff)


def _yaml(text: str) -> tuple[Any, Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    try:
        _, sequence, offset = load_yaml_guess_indent(text)  # the file's own list indentation
        y.indent(mapping=_mapping_indent(text), sequence=sequence or 2, offset=offset or 0)
        doc = y.load(text)
    except YAMLError as exc:
        raise EditError(f"the config file is not YAML: {exc}") from None
    if doc is None:
        doc = y.load("{}\n")
    return y, doc


def _mapping_indent(text: str) -> int:
    """How far the file indents a nested mapping's keys (the first indented `key:` line), else 2."""
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        depth = len(line) - len(stripped)
        if depth and stripped[:1] not in ("-", "#", "") and ":" in stripped:
            return depth
    return 2


def _secrets(value: Any, where: str) -> None:
    if isinstance(value, str) and looks_like_secret(value):
        raise EditError(f"{where} looks like a literal API key or token: a config file never holds one")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _secrets(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _secrets(v, f"{where}[{i}]")


def _node(value: Any, flow: bool) -> Any:
    """Plain JSON data as ruamel nodes: nested mappings in flow style (`{type: regex, …}`)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, Mapping):
        m = CommentedMap((str(k), _node(v, True)) for k, v in value.items())
        if flow:
            m.fa.set_flow_style()
        return m
    if isinstance(value, list):
        s = CommentedSeq(_node(v, True) for v in value)
        s.fa.set_flow_style()
        return s
    return value


def _rules(doc: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if not isinstance(doc, CommentedMap):
        raise EditError("the config file is not a mapping")
    routing = doc.get("routing")
    if routing is None:
        routing = doc["routing"] = CommentedMap()
    if not isinstance(routing, CommentedMap):
        raise EditError("routing must be a mapping")
    rules = routing.get("rules")
    if rules is None:
        rules = routing["rules"] = CommentedSeq()
    if not isinstance(rules, CommentedSeq):
        raise EditError("routing.rules must be a list")
    return rules


def _index(rules: Sequence[Any], name: str) -> int | None:
    return next((i for i, r in enumerate(rules) if isinstance(r, Mapping) and r.get("name") == name), None)


def _fields(raw: Any, allowed: Sequence[str], what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping) or not raw:
        raise EditError(f"{what} must be a non-empty object")
    unknown = [k for k in raw if k not in allowed]
    if unknown:
        raise EditError(f"{what}: unknown key {unknown[0]!r}; allowed: {', '.join(allowed)}")
    _secrets(raw, what)
    return raw


def _apply(rules: Any, op: Mapping[str, Any], profile_rules: Iterable[str]) -> None:
    kind = op.get("op")
    if kind == "add":
        rule = _fields(op.get("rule"), RULE_KEYS, "rule")
        name = rule.get("name")
        if not isinstance(name, str) or not name.strip():
            raise EditError("a new rule needs a name")
        if _index(rules, name) is not None or name in profile_rules:
            raise EditError(f"a rule named {name!r} exists already")
        rules.append(_node(dict(rule), False))
        return
    name = op.get("name")
    if not isinstance(name, str):
        raise EditError(f"op {kind!r} needs the rule's name")
    at = _index(rules, name)
    if kind == "set":
        fields = _fields(op.get("fields"), _SET_KEYS, "fields")
        if at is None:
            if name not in profile_rules:
                raise EditError(f"no rule named {name!r}")
            rules.append(_node({"name": name, **{k: v for k, v in fields.items() if v is not None}}, False))
            return
        rule = rules[at]
        for key, value in fields.items():
            if value is None:
                rule.pop(key, None)
            elif key in rule and not isinstance(value, Mapping | list) and rule[key] == value:
                continue
            else:
                rule[key] = _node(value, True)
        return
    if kind == "move":
        to = op.get("to")
        if at is None:
            raise EditError(f"no rule named {name!r} in this file")
        if not isinstance(to, int) or isinstance(to, bool):
            raise EditError("'to' must be an integer")
        rule = rules.pop(at)
        rules.insert(max(0, min(to, len(rules))), rule)
        return
    raise EditError(f"unknown op {kind!r}; expected add, set or move")


def edit(text: str, ops: Any, *, profile_rules: Iterable[str] = (), label: str = "config") -> Edited:
    """`text` with `ops` applied (see the module contract), and the diff."""
    if not isinstance(ops, Sequence) or not ops or not all(isinstance(o, Mapping) for o in ops):
        raise EditError("'ops' must be a non-empty list of objects")
    y, doc = _yaml(text)
    rules = _rules(doc)
    names = tuple(profile_rules)
    for op in ops:
        _apply(rules, op, names)
    out = io.StringIO()
    y.dump(doc, out)
    new = out.getvalue()
    diff = "".join(
        difflib.unified_diff(text.splitlines(True), new.splitlines(True), f"a/{label}", f"b/{label}")
    )
    return Edited(new, diff)


def check(path: Path, text: str, environ: Mapping[str, str] | None = None) -> Any:
    """Lint `text` as if it were the file at `path` (see the module contract): a LintReport."""
    from glider_cli.app.lint import lint

    fd, tmp = tempfile.mkstemp(prefix=".glider-rules-edit-", suffix=path.suffix or ".yaml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        report = lint(config_path=tmp, environ=environ)
    finally:
        os.unlink(tmp)
    return _renamed(report, tmp, str(path))


def _renamed(report: Any, tmp: str, path: str) -> Any:
    from glider_cli.values import replace

    def fix(items: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(replace(i, file=path) if i.file == tmp else i for i in items)

    files = tuple(path if f == tmp else f for f in report.files)
    return replace(report, source=path, errors=fix(report.errors), warnings=fix(report.warnings), files=files)
