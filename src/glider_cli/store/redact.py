"""Redaction: secrets never reach disk.

`redact(value)` returns a copy of a JSON-like value in which
- the value under a key-ish name (Authorization, x-api-key, `*-token`, `*_secret`, cookies, ...) is
  replaced by "[REDACTED]" when it is a string (numbers such as `max_tokens` are not secrets);
- any Mapping (MappingProxyType, Starlette Headers) becomes a dict, tuples and sets lists, bytes and
  other objects the (redacted) text they would be written as;
- header pairs given as `[name, value]` lists are treated like mapping entries;
- inside every other string, substrings that look like keys or tokens (`sk-…`, `sk-ant-…`, `ghp_…`,
  `github_pat_…`, `AKIA…`, `xox…`, `AIza…`, `glpat-…`, `Bearer …`, PEM private-key blocks) are
  replaced by "[REDACTED]".
The event writer applies it to every event before the event reaches the in-memory ring or disk.

`may_need_redaction(blob)` is the writer's fast path: given the exact JSON bytes (orjson output) of a
value made of dicts, lists, strings, numbers, booleans and None, it is False only when `redact` would
return an equal value, so those bytes can be written as they are. It is a conservative check over
the text: any key-like substring or any string (key or value) that ends in a word every sensitive
name ends in makes it True. False positives only cost the full walk; a false negative would be a bug.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"

_EXACT_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "apikey",
        "api-key",
        "x-api-key",
        "token",
        "access-token",
        "refresh-token",
        "id-token",
        "session-token",
        "secret",
        "client-secret",
        "password",
        "passwd",
        "private-key",
        "credentials",
        "credential",
        "bearer",
    }
)
_NAME_SUFFIXES = ("-api-key", "-apikey", "-secret", "-password", "-token", "-credentials", "-private-key")

_VALUE_RE = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)"
    r"|\bsk-(?:ant-)?[A-Za-z0-9_\-]{8,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{16,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{16,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{8,}"
    r"|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|\bglpat-[A-Za-z0-9_\-]{16,}"
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/=\-]{6,}",
    re.DOTALL,
)
# Cheap pre-checks: no match is shorter than this, and a string without one of these cannot match.
_MIN_LEN = 11
_TRIGGER = re.compile(r"sk-|gh[pousr]_|github_pat_|AKIA|ASIA|xox|AIza|glpat-|[Bb]earer|PRIVATE KEY")


# The fast path works on substrings, not a regex (a regex alternation scans ~100x slower).
# Any of these, exactly as written, may start a key-shaped value (a superset of `_TRIGGER`'s
# alternatives); the Kelvin sign lower-cases to `k`, so a string holding one is suspect too.
_SHAPES = (
    *(b"gh" + c + b"_" for c in (b"p", b"o", b"u", b"s", b"r")),
    *(t.encode() for t in ("sk-", "github_pat_", "AKIA", "ASIA", "xox", "AIza", "glpat-")),
    *(t.encode() for t in ("Bearer", "bearer", "PRIVATE KEY", "\u212a")),
)
# Every name `sensitive_name` accepts ends, once stripped and lower-cased, in one of these (`_` for
# `-` included; `x-...-key` ends in `-key`). A string ends where a `"` follows after optional
# whitespace: raw ASCII, escaped (`\n`, `\u001f`) or any non-ASCII byte (possible Unicode space).
_NAME_ENDS = tuple(
    w.encode()
    for w in (
        "authorization",
        "cookie",
        "apikey",
        "-key",
        "_key",
        "token",
        "secret",
        "password",
        "passwd",
        "credentials",
        "credential",
        "bearer",
    )
)
_SPACE = frozenset(b" \t\n\r\x0b\x0c")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _ends_a_string(low: bytes, i: int) -> bool:
    n = len(low)
    while i < n:
        c = low[i]
        if c == _QUOTE:
            return True
        if c == _BACKSLASH:
            i += 6 if low[i + 1 : i + 2] == b"u" else 2
        elif c in _SPACE or c >= 0x80:
            i += 1
        else:
            return False
    return False


# `_TRIGGER`'s alternatives as plain substrings: a string holding none of them is left as it is.
_TEXT_SHAPES = (
    *(f"gh{c}_" for c in "pousr"),
    *("sk-", "github_pat_", "AKIA", "ASIA", "xox", "AIza", "glpat-", "Bearer", "bearer", "PRIVATE KEY"),
)


def text_may_need_redaction(text: str) -> bool:
    """False when `redact_text(text)` is `text` (a substring pre-check, cheaper than `_TRIGGER`)."""
    if len(text) < _MIN_LEN:
        return False
    for shape in _TEXT_SHAPES:  # noqa: SIM110 (a plain loop is twice as fast as any() on short text)
        if shape in text:
            return True
    return False


def may_need_redaction(blob: bytes) -> bool:
    """False when the JSON bytes `blob` hold nothing `redact` would change (see the module contract)."""
    for shape in _SHAPES:
        if shape in blob:
            return True
    low = blob.lower()
    for word in _NAME_ENDS:
        i = low.find(word)
        while i >= 0:
            end = i + len(word)
            if _ends_a_string(low, end):
                return True
            i = low.find(word, end)
    return False


@functools.lru_cache(maxsize=4096)
def sensitive_name(name: str) -> bool:
    """True for header/field names whose string values are credentials."""
    n = name.strip().lower().replace("_", "-")
    if n in _EXACT_NAMES:
        return True
    if n.endswith(_NAME_SUFFIXES):
        return True
    return n.startswith("x-") and n.endswith("-key")


def redact_text(text: str) -> str:
    if len(text) < _MIN_LEN or _TRIGGER.search(text) is None:
        return text
    return _VALUE_RE.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A redacted copy of a JSON-like value (see the module contract)."""
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else str(k)
            if isinstance(v, str | bytes) and sensitive_name(key):
                out[key] = REDACTED
            else:
                out[key] = redact(v)
        return out
    if isinstance(value, list | tuple):
        if (
            len(value) == 2
            and isinstance(value[0], str)
            and isinstance(value[1], str | bytes)
            and (sensitive_name(value[0]))
        ):
            return [value[0], REDACTED]
        return [redact(v) for v in value]
    if isinstance(value, set | frozenset):
        return [redact(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return redact_text(bytes(value).decode("utf-8", "replace"))
    # Anything else would be written as its str(): redact that string now.
    return redact_text(str(value))
