"""`Frozen`: the base of Glider's small immutable values (settings, config, requests, decisions).

A subclass behaves as the `@dataclass(frozen=True)` it replaces, for type-checked code: two instances
of the same class with equal fields are equal and hash alike, the repr is `Name(field=value, ...)`,
instances copy and pickle, `Cls.field` is the field's default, and `replace(value, **changes)` makes a
changed copy. Type checkers see a frozen dataclass (`dataclass_transform`), so assigning a field
anywhere but in its own `__init__` is a type error, and `mypy --strict` runs on all of `src` in
CI (`tests/test_values.py` holds that check to it).

Immutability is that static guarantee, not a runtime one: there is no `__setattr__` that raises. A
Python-level `__setattr__` makes every attribute store a call, so an `__init__` had to go around it
(one update of the instance's `__dict__`): building a value cost ~4.4k instructions, against ~2.3k with
plain stores (the request path builds a dozen values per request; issue 41).

Why not @dataclass: on Python 3.11 a frozen dataclass compiles six methods with exec() when its class
is created, ~1.4 ms a class on the bench machine: 45 ms of `glider route explain`, which creates 33
of them (issue #2 §6). Here nothing is generated: the shared methods live on this base.

A subclass annotates its fields in order and writes an `__init__` that takes exactly those fields,
in that order (the defaults go there), and sets them: `init_fields` for values built once, and for
values built per request one plain store per field, in order, through `self` seen as `Any` by the
type checker (`s: Any = self`, then `s.field = value`: the one place a field is assigned).
tests/test_values.py holds every subclass to this.

The one value idiom: an immutable value is a `Frozen` subclass (settings, config, requests, decisions,
plans, the turn lifecycle's `Opened` and `Served`). What is mutable by design — one request's working
records in the engine (`proxy.calls`: `Inbound`, `Job`, `Call`; `proxy.reply.Reply`, whose `after`
and `close` the server sets off) — is a plain `@dataclass`. A value that must keep a secret out of its
repr and comparisons (`backends.registry.Backend`) says so where it is defined.

`lazy_pattern(pattern, flags)` is `re.compile(pattern, flags)` compiled on first use: for a module's
patterns that a start does not need (Python's `re` compiles a case-insensitive or Unicode-class
pattern in Python code, up to ~1 ms each), so that importing the module costs nothing for them.
"""

from __future__ import annotations

import re
from inspect import get_annotations
from typing import Any, AnyStr, ClassVar, TypeVar, cast, dataclass_transform

V = TypeVar("V", bound="Frozen")


@dataclass_transform(frozen_default=True)
class Frozen:
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The class's own annotations, as strings (`from __future__ import annotations`); a ClassVar
        # is no field. Fields of a Frozen base class come first, as in a dataclass.
        cls._fields = cls._fields + tuple(
            name
            for name, kind in get_annotations(cls).items()
            if not str(kind).startswith(("ClassVar", "typing.ClassVar"))
        )
        # As on a dataclass, `Cls.field` is the field's default (`DelegateSettings.timeout`).
        init = cls.__dict__.get("__init__")
        if init is not None and init.__defaults__:
            params = init.__code__.co_varnames[1 : init.__code__.co_argcount]
            for name, default in zip(params[-len(init.__defaults__) :], init.__defaults__, strict=True):
                setattr(cls, name, default)

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Frozen) and other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{self.__class__.__qualname__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, self._values())


def init_fields(obj: Frozen, *values: Any) -> None:
    """Set `obj`'s fields, in order, from an `__init__`'s arguments (stored as plain attributes, so
    the instance keeps them inline, as a per-request value's own stores do)."""
    for name, value in zip(obj._fields, values, strict=True):
        setattr(obj, name, value)


def replace(obj: V, **changes: Any) -> V:
    """A copy of `obj` with some fields changed (as `dataclasses.replace`)."""
    values = dict(zip(obj._fields, obj._values(), strict=True))
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{obj.__class__.__qualname__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return obj.__class__(**values)


# The methods of a compiled pattern that a `lazy_pattern` keeps, once compiled, as its own attributes.
_PATTERN_METHODS = ("search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split")


class _LazyPattern:
    __slots__ = ("_flags", "_source", *_PATTERN_METHODS)

    def __init__(self, source: str | bytes, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        # Called while the methods are not set yet (and for the pattern's other attributes): compile
        # (re's own cache makes a second compile, by another thread or for `.pattern`, a lookup) and
        # keep the compiled pattern's bound methods, so later calls cost what the pattern's own do.
        compiled = re.compile(self._source, self._flags)
        for method in _PATTERN_METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._source!r}, {self._flags!r})"


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when first used (see the module docstring). Its methods
    are the compiled pattern's; it is no `re.Pattern` instance (not for `isinstance` or `re.sub`)."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))
