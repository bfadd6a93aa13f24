"""A small declarative checker of JSON types (the shapes are in `protocol.inbound_types`).

Contract: a `Spec` checks one value and raises `Bad` (what it must be, the value, and the path to it,
innermost first) when the value is not of its shape: `Leaf` (a JSON scalar or any object), `Obj`
(the listed fields, each checked when present and not null; unknown fields pass; `snake=True`
accepts each field in its snake_case spelling too), `ListOf`, `Either` (the first of two shapes
that takes the value's type) and `Tagged` (an object told by its `type` string). Linear in the
value's size; the path is only built on the way out of an error.

`ok(value)` is the same verdict as a bool, without the path: the fast pass for a body that is fine
(most are), with fewer calls (a scalar field is tested inline by its exact type, `exact`); a body
it refuses is checked again by `check`, which names the field. The two agree on every value.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

_SNAKE = re.compile(r"(?<!^)([A-Z])")


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class Bad(Exception):
    """A field of the wrong type: the path (innermost first) and what it must be."""

    def __init__(self, must: str, value: Any) -> None:
        super().__init__(must)
        self.must = must
        self.value = value
        self.path: list[str | int] = []


class Spec(ABC):
    """One shape: `check(value)` raises `Bad` when `value` (not None) is not of it."""

    what = "a value"
    # Types whose values this shape takes outright, tested inline by the containers' `ok`.
    exact: frozenset[type] = frozenset()

    @abstractmethod
    def check(self, value: Any) -> None: ...

    @abstractmethod
    def ok(self, value: Any) -> bool:
        """True when `check(value)` raises nothing."""

    @abstractmethod
    def takes(self, value: Any) -> bool:
        """The value is of the type this shape is about (`Either` chooses by it)."""


class Leaf(Spec):
    def __init__(self, what: str, *types: type, number: bool = False) -> None:
        self.what = what
        self.types = types
        self.number = number
        self.exact = frozenset(dict if t is Mapping else t for t in types)

    def check(self, value: Any) -> None:
        if not self.ok(value):
            raise Bad(self.what, value)

    def ok(self, value: Any) -> bool:
        return isinstance(value, self.types) and not (self.number and isinstance(value, bool))

    takes = ok


STR = Leaf("a string", str)
NUM = Leaf("a number", int, float, number=True)
BOOL = Leaf("true or false", bool)
OBJ = Leaf("an object", Mapping)


class Obj(Spec):
    what = "an object"

    def __init__(self, fields: Mapping[str, Spec] | None = None, *, snake: bool = False) -> None:
        self.fields = dict(fields or {})
        if snake:  # Gemini: every field in its snake_case spelling too
            for name, spec in list(self.fields.items()):
                self.fields.setdefault(_SNAKE.sub(r"_\1", name).lower(), spec)
        self._plan = tuple((name, spec.exact, spec.ok) for name, spec in self.fields.items())
        # For the walk over a value's own fields: per field name, the types taken outright (null
        # among them: a null field is of no concern) and the test for any other.
        self._exact_of = {name: exact | {type(None)} for name, exact, _ in self._plan}
        self._ok_of = {name: ok for name, _, ok in self._plan}
        self._size = len(self._plan)

    def check(self, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise Bad(self.what, value)
        self.fields_of(value)

    def ok(self, value: Any) -> bool:
        # A parsed body is made of dicts: the exact-type test first, the ABC check (slower) after it.
        return (type(value) is dict or isinstance(value, Mapping)) and self.fields_ok(value)

    def takes(self, value: Any) -> bool:
        return isinstance(value, Mapping)

    def fields_ok(self, value: Mapping[str, Any]) -> bool:
        # Whichever is shorter is walked: the value's own fields (a request sets a few of the many a
        # shape knows) or the shape's; a field of neither, or a null one, is of no concern.
        if len(value) < self._size:
            exact_of = self._exact_of
            for name, field in value.items():
                exact = exact_of.get(name)
                if exact is None or type(field) in exact:
                    continue
                if not self._ok_of[name](field):
                    return False
            return True
        get = value.get
        for name, exact, ok in self._plan:
            field = get(name)
            if field is None or type(field) in exact:
                continue
            if not ok(field):
                return False
        return True

    def fields_of(self, value: Mapping[str, Any]) -> None:
        for name, spec in self.fields.items():
            field = value.get(name)
            if field is not None:
                try:
                    spec.check(field)
                except Bad as bad:
                    bad.path.append(name)
                    raise


class ListOf(Spec):
    def __init__(self, item: Spec) -> None:
        self.item = item
        self.what = "a list"
        # A list of objects (messages): a dict item's fields are checked here, without a call to `Obj.ok`.
        self._fields = (item._exact_of, item._ok_of) if isinstance(item, Obj) and type(item) is Obj else None
        # The item's exact types and test, kept: through `self.item` they would be a class
        # attribute's lookup and a new bound method on every call.
        self._item = (item.exact, item.ok)

    def ok(self, value: Any) -> bool:
        if not isinstance(value, list):
            return False
        exact, ok = self._item
        fields = self._fields
        for v in value:
            if type(v) in exact:
                continue
            if fields is not None and type(v) is dict:
                # `Obj.fields_ok`'s walk over the value's own fields, inline: one call less per item
                # (a conversation's every message).
                exact_of, ok_of = fields
                for name, field in v.items():
                    field_exact = exact_of.get(name)
                    if field_exact is None or type(field) in field_exact:
                        continue
                    if not ok_of[name](field):
                        return False
            elif not ok(v):
                return False
        return True

    def takes(self, value: Any) -> bool:
        return isinstance(value, list)

    def check(self, value: Any) -> None:
        if not isinstance(value, list):
            raise Bad(self.what, value)
        item = self.item
        for i, v in enumerate(value):
            try:
                item.check(v)  # a null item is of no type an item may be
            except Bad as bad:
                bad.path.append(i)
                raise


class Either(Spec):
    """A string or one other shape (a list of blocks, an object...): chosen by the value's type."""

    def __init__(self, first: Spec, other: Spec) -> None:
        self.first = first
        self.other = other
        self.what = f"{first.what} or {other.what}"
        self.exact = first.exact

    def ok(self, value: Any) -> bool:
        return self.first.ok(value) if self.first.takes(value) else self.other.ok(value)

    def takes(self, value: Any) -> bool:
        return self.first.takes(value) or self.other.takes(value)

    def check(self, value: Any) -> None:
        try:
            self.first.check(value)
            return
        except Bad as bad:
            if bad.value is not value:
                raise
        try:
            self.other.check(value)
        except Bad as bad:
            if bad.value is value:
                raise Bad(self.what, value) from None
            raise


class Tagged(Spec):
    """An object told by its `type`: the fields of that type (`common` for a type not listed);
    `untyped` for one without a `type`."""

    what = "an object"

    def __init__(
        self, kinds: Mapping[str, Obj], common: Obj, *, untyped: Obj | None = None, strings: bool = False
    ) -> None:
        self.kinds = {k: Obj({"type": STR, **common.fields, **v.fields}) for k, v in kinds.items()}
        self.common = Obj({"type": STR, **common.fields})
        self.untyped = untyped
        self.strings = strings  # a bare string is an item too (a text block)
        if strings:
            self.what = "a string or an object"
            self.exact = frozenset((str,))

    def takes(self, value: Any) -> bool:
        return (self.strings and isinstance(value, str)) or isinstance(value, Mapping)

    def ok(self, value: Any) -> bool:
        if self.strings and isinstance(value, str):
            return True
        if type(value) is not dict and not isinstance(value, Mapping):
            return False
        kind = value.get("type")
        if kind is None:
            return (self.untyped or self.common).fields_ok(value)
        if not isinstance(kind, str):
            return False
        return self.kinds.get(kind, self.common).fields_ok(value)

    def check(self, value: Any) -> None:
        if self.strings and isinstance(value, str):
            return
        if not isinstance(value, Mapping):
            raise Bad(self.what, value)
        kind = value.get("type")
        if kind is None and self.untyped is not None:
            self.untyped.fields_of(value)
            return
        if kind is not None and not isinstance(kind, str):
            bad = Bad("a string", kind)
            bad.path.append("type")
            raise bad
        spec = self.kinds.get(kind, self.common) if kind is not None else self.common
        spec.fields_of(value)
