"""What a natively evaluated script (sandbox.native) calls at run time: Starlark's meaning in Python.

The checker (sandbox.native) rewrites every operation whose Python meaning differs from
Starlark's into a call to one of the `g_*` functions here, so the script computes what the Starlark
interpreter would:
- booleans are not numbers: `True == 1` is False, `True in [1]` is False, `True + 1`, `True < 1`
  (also inside lists: `[1] < [True]`) and `-True` are errors, a boolean is no index (`x[True]`);
- a string is not iterable (`for c in text` is an error: Starlark asks for `text.elems()`);
- a struct (`request`, each message) equals another with the same fields and becomes a dict when
  it is returned, as Starlark's struct does when it leaves the interpreter;
- `lower()` gives Starlark's answer: starlark-pyo3's tables are Unicode 17, CPython 3.11's 14, so
  the code points that gained a lower-case form since (`STARLARK_LOWER`; CPython leaves them as
  they are) are mapped after `str.lower`. tests/sandbox/test_native_equivalence.py compares the
  two on every code point, so a newer interpreter that moves again is caught;
- a method exists only on its type (`get` on a dict; `lower`, `startswith`, `endswith`, `find`
  on a string, with string arguments).

An error is raised as `StarlarkLikeError` (any other exception a script raises is an error too).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from glider_cli.domain import Message
from glider_cli.values import lazy_pattern

# Lower-case mappings starlark-pyo3 (Rust, Unicode 17) has and CPython 3.11 (Unicode 14) has not.
_RANGES = ((0x10D50, 0x10D65, 0x20), (0x16EA0, 0x16EB8, 0x1B))
STARLARK_LOWER: dict[int, int] = {
    0x1C89: 0x1C8A,
    0xA7CB: 0x0264,
    0xA7CC: 0xA7CD,
    0xA7CE: 0xA7CF,
    0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5,
    0xA7DA: 0xA7DB,
    0xA7DC: 0x019B,
    **{cp: cp + shift for lo, hi, shift in _RANGES for cp in range(lo, hi + 1)},
}
# The characters `STARLARK_LOWER` maps: compiled by the first lower() of a non-ASCII string, not at
# import (`glider serve` imports this module to lint the bundled scripts; issue 29).
_NEWER_UPPER = lazy_pattern("[" + "".join(chr(cp) for cp in sorted(STARLARK_LOWER)) + "]")


class StarlarkLikeError(Exception):
    """An operation Starlark refuses (the script's call ends with an error outcome)."""


class NativeRequest:
    """The `request` a natively evaluated script gets: the fields of the Starlark struct
    (router.scripts' contract); a field the struct would not have is absent (AttributeError)."""

    __slots__ = (
        "complexity_score",
        "complexity_source",
        "estimated_tokens",
        "has_tools",
        "max_tokens",
        "messages",
        "model",
        "parent",
        "stream",
        "temperature",
    )
    complexity_score: Any
    complexity_source: Any
    temperature: Any
    max_tokens: Any

    def __init__(
        self,
        model: str,
        stream: bool,
        messages: list[Message],
        estimated_tokens: int,
        has_tools: bool,
        parent: dict[str, Any] | None,
        *,
        complexity: tuple[Any, Any] | None = None,
        temperature: Any = None,
        max_tokens: Any = None,
    ) -> None:
        """`complexity` (score, source), `temperature` and `max_tokens`: None leaves the field absent."""
        self.model = model
        self.stream = stream
        self.messages = messages
        self.estimated_tokens = estimated_tokens
        self.has_tools = has_tools
        self.parent = parent
        if complexity is not None:
            self.complexity_score, self.complexity_source = complexity
        if temperature is not None:
            self.temperature = temperature
        if max_tokens is not None:
            self.max_tokens = max_tokens

    def fields(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in sorted(self.__slots__) if hasattr(self, k)}


def plain(value: Any) -> Any:
    """A returned value as it leaves the Starlark interpreter: a struct a dict, a tuple a list,
    containers copied (a script's module-level values are never handed out)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is dict:
        return {plain(k): plain(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [plain(v) for v in value]
    if kind is Message:
        return {"content": value.content, "role": value.role}
    if kind is NativeRequest:
        return plain(value.fields())
    raise StarlarkLikeError(f"returned a {_name(value)}, which is not data")


def _name(value: Any) -> str:
    kind = type(value)
    if kind is Message or kind is NativeRequest:
        return "struct"
    return {"str": "string", "NoneType": "NoneType"}.get(kind.__name__, kind.__name__)


def _no_bool(op: str, *values: Any) -> None:
    for v in values:
        if type(v) is bool:
            kinds = " and ".join(f"`{_name(x)}`" for x in values)
            raise StarlarkLikeError(f"Operation `{op}` not supported for types {kinds}")


def g_eq(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is str or tb is str:
        return bool(a == b)
    if (ta is bool) != (tb is bool):
        return False
    if ta is not tb and {ta, tb} & {list, tuple, dict, Message, NativeRequest}:
        return False
    if ta is list or ta is tuple:
        return len(a) == len(b) and all(g_eq(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return bool(a.keys() == b.keys()) and all(g_eq(v, b[k]) for k, v in a.items())
    if ta is Message or ta is NativeRequest:
        return g_eq(plain(a), plain(b))
    return bool(a == b)


def g_ne(a: Any, b: Any) -> bool:
    return not g_eq(a, b)


def g_in(x: Any, c: Any) -> bool:
    kind = type(c)
    if kind is str:
        if type(x) is not str:
            raise StarlarkLikeError(f"Operation `in` not supported for types `{_name(x)}` and `string`")
        return x in c
    if kind is list or kind is tuple:
        if type(x) is str:
            return x in c
        return any(g_eq(x, e) for e in c)
    if kind is dict:
        # Dict keys are strings here (literal keys are, and so are JSON's): no bool/int confusion.
        return x in c
    raise StarlarkLikeError(f"Operation `in` not supported on type `{_name(c)}`")


def g_not_in(x: Any, c: Any) -> bool:
    return not g_in(x, c)


def _order(op: str, test: Callable[[Any, Any], bool], a: Any, b: Any) -> bool:
    """`a <op> b` as Starlark orders: a bool only against a bool, lists and tuples element-wise."""
    ta, tb = type(a), type(b)
    if (ta is bool) != (tb is bool):
        raise StarlarkLikeError(f"Operation `{op}` not supported for types `{_name(a)}` and `{_name(b)}`")
    if (ta is list or ta is tuple) and ta is tb:
        for x, y in zip(a, b, strict=False):
            if not g_eq(x, y):
                return _order(op, test, x, y)
        return test(len(a), len(b))
    return test(a, b)


def g_lt(a: Any, b: Any) -> bool:
    return _order("<", operator.lt, a, b)


def g_le(a: Any, b: Any) -> bool:
    return _order("<=", operator.le, a, b)


def g_gt(a: Any, b: Any) -> bool:
    return _order(">", operator.gt, a, b)


def g_ge(a: Any, b: Any) -> bool:
    return _order(">=", operator.ge, a, b)


def g_add(a: Any, b: Any) -> Any:
    _no_bool("+", a, b)
    return a + b


def g_sub(a: Any, b: Any) -> Any:
    _no_bool("-", a, b)
    return a - b


def g_neg(a: Any) -> Any:
    _no_bool("-", a)
    return -a


def g_iter(c: Any) -> Any:
    if type(c) is str:
        raise StarlarkLikeError("Operation `(iter)` not supported on type `string`")
    return c


def g_index(c: Any, i: Any) -> Any:
    _no_bool("[]", i)
    return c[i]


def g_slice(c: Any, lo: Any, hi: Any, step: Any) -> Any:
    _no_bool("[:]", lo, hi, step)
    return c[lo:hi:step]


def g_len(c: Any) -> int:
    if type(c) is NativeRequest or type(c) is Message:
        raise StarlarkLikeError("Operation `len` not supported on type `struct`")
    return len(c)


def _str_method(name: str, s: Any, args: tuple[Any, ...]) -> None:
    if type(s) is not str:
        raise StarlarkLikeError(f"Object of type `{_name(s)}` has no attribute `{name}`")
    for a in args:
        if type(a) is not str and not (type(a) is tuple and all(type(x) is str for x in a)):
            raise StarlarkLikeError(f"{name}: expected a string argument, got `{_name(a)}`")


def g_lower(s: Any) -> str:
    _str_method("lower", s, ())
    out: str = s.lower()
    if not out.isascii() and _NEWER_UPPER.search(out):
        out = out.translate(STARLARK_LOWER)
    return out


def g_startswith(s: Any, prefix: Any) -> bool:
    _str_method("startswith", s, (prefix,))
    return bool(s.startswith(prefix))


def g_endswith(s: Any, suffix: Any) -> bool:
    _str_method("endswith", s, (suffix,))
    return bool(s.endswith(suffix))


def g_find(s: Any, sub: Any) -> int:
    if type(sub) is tuple:
        raise StarlarkLikeError("find: expected a string argument, got `tuple`")
    _str_method("find", s, (sub,))
    return int(s.find(sub))


def g_get(d: Any, key: Any, default: Any = None) -> Any:
    if type(d) is not dict:
        raise StarlarkLikeError(f"Object of type `{_name(d)}` has no attribute `get`")
    return d.get(key, default)


# name in the script -> (helper, the numbers of arguments it takes besides the receiver)
METHODS: dict[str, tuple[str, tuple[int, ...]]] = {
    "lower": ("g_lower", (0,)),
    "startswith": ("g_startswith", (1,)),
    "endswith": ("g_endswith", (1,)),
    "find": ("g_find", (1,)),
    "get": ("g_get", (1, 2)),
}
BUILTINS: dict[str, tuple[str, tuple[int, ...]]] = {"len": ("g_len", (1,))}
HELPERS: dict[str, Any] = {name: value for name, value in globals().items() if name.startswith("g_")}
