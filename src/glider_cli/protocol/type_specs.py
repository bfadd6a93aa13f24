"""A small declarative checker of JSON types (the shapes are in `protocol.inbound_types`).

Contract: a `Spec` checks one value and raises `Bad` (what it must be, the value, and the path to it,
innermost first) when the value is not of its shape: `Leaf` (a JSON scalar or any object), `Obj`
(the listed fields, each checked when present and not null; unknown fields pass; `snake=True`
accepts each field in its snake_case spelling too), `ListOf`, `Either` (the first of two shapes
that takes the value's type) and `Tagged` (an object told by its `type` string). Linear in the
value's size; the path is only built on the way out of an error.
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

    @abstractmethod
    def check(self, value: Any) -> None: ...


class Leaf(Spec):
    def __init__(self, what: str, *types: type, number: bool = False) -> None:
        self.what = what
        self.types = types
        self.number = number

    def check(self, value: Any) -> None:
        if not isinstance(value, self.types) or (self.number and isinstance(value, bool)):
            raise Bad(self.what, value)


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

    def check(self, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise Bad(self.what, value)
        self.fields_of(value)

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
