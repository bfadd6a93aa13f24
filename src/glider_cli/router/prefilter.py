"""A literal pre-check for the classifier's RE2 patterns: most messages contain none of the words a
pattern needs, and then no RE2 search is made at all (issue 29: a decision's RE2 call is among its
dearest parts when the process has been idle).

`Prefilter(sources).may_match(text)` is False only when no pattern of `sources` (each searched
case-insensitively, as `classifier.PatternIndex` does) can match `text`; True means "ask RE2".
From each pattern it derives what any match must contain, as lower-case ASCII literals:
- "contains": one of a set of strings (`design `, `deadlock`...) must occur in the text;
- "starts": a pattern that opens with `^\\s*` matches only where the text, past its leading
  blanks, starts with one of a set of strings (`fix`, `rename`...); "prefix": one that opens with
  `^` alone, where the text itself starts with one.
The pattern is read with Python's own regular-expression parser, whose syntax RE2's patterns share
for the constructs accepted here; anything outside them (an escape Python does not know, a POSIX
class, a flag that changes `^`, a look-around, a back-reference...) gives no requirement, and that
pattern is always searched. The check is made only on ASCII text (case folding is then plain ASCII
lower-casing, as RE2's `(?i)` does for it) of at most `LIMIT` characters; otherwise, RE2 decides.
"""

from __future__ import annotations

import re
import warnings
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

LIMIT = 8192
_BLANKS = " \t\n\f\r"  # RE2's \s
_REPEAT = re.compile(r"(?<!\\)\{\d+(?:,\d*)?\}")
_NODES = {c.LITERAL, c.NOT_LITERAL, c.IN, c.ANY, c.BRANCH, c.SUBPATTERN, c.MAX_REPEAT, c.MIN_REPEAT, c.AT}
_IN = {c.LITERAL, c.RANGE, c.CATEGORY, c.NEGATE}


class Unsupported(Exception):
    pass


def _check(items: Any) -> None:
    """Raise Unsupported for any construct outside the accepted ones (see the module contract)."""
    for op, av in items:
        if op not in _NODES:
            raise Unsupported(str(op))
        if op is c.IN and any(o not in _IN for o, _ in av):
            raise Unsupported("class")
        if op is c.SUBPATTERN:
            if (av[1] | av[2]) & (re.MULTILINE | re.VERBOSE):
                raise Unsupported("flags")
            _check(av[3])
        elif op is c.BRANCH:
            for alt in av[1]:
                _check(alt)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            _check(av[2])


def _ascii(op: Any, av: Any) -> str | None:
    return chr(av).lower() if op is c.LITERAL and av < 128 else None


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two requirements (the longer shortest string)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if min(map(len, a)) >= min(map(len, b)) else b


def _contains(items: Any) -> frozenset[str] | None:
    """Strings one of which every match of the sequence `items` contains; None if unknown."""
    best: frozenset[str] | None = None
    run: list[str] = []
    for op, av in items:
        ch = _ascii(op, av)
        if ch is not None:
            run.append(ch)
            continue
        if run:
            best = _better(best, frozenset(["".join(run)]))
            run = []
        if op is c.SUBPATTERN:
            best = _better(best, _contains(av[3]))
        elif op is c.BRANCH:
            best = _better(best, _union([_contains(alt) for alt in av[1]]))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
            best = _better(best, _contains(av[2]))
    if run:
        best = _better(best, frozenset(["".join(run)]))
    return best


def _union(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
    if not parts or any(p is None or not p for p in parts):
        return None
    return frozenset().union(*[p for p in parts if p is not None])


def _starts(items: Any) -> frozenset[str] | None:
    """Strings one of which every match of the sequence `items` starts with; None if unknown."""
    run: list[str] = []
    for op, av in items:
        ch = _ascii(op, av)
        if ch is None:
            break
        run.append(ch)
    if run:
        return frozenset(["".join(run)])
    if not items:
        return None
    op, av = items[0]
    if op is c.SUBPATTERN:
        return _starts(av[3])
    if op is c.BRANCH:
        return _union([_starts(alt) for alt in av[1]])
    return None


def _blanks(op: Any, av: Any) -> bool:
    """`\\s*`."""
    return (
        op is c.MAX_REPEAT
        and av[0] == 0
        and av[1] == c.MAXREPEAT
        and list(av[2]) == [(c.IN, [(c.CATEGORY, c.CATEGORY_SPACE)])]
    )


def requirement(source: str) -> tuple[str, frozenset[str]] | None:
    """(how, strings): what any match of `source` needs (see the module contract): `contains`,
    `starts` (past the text's leading blanks) or `prefix` (the text itself starts with one); None
    when nothing safe can be said."""
    if "[:" in source or "\\p" in source or "\\P" in source:
        return None
    if "{" in _REPEAT.sub("", source):  # a brace RE2 may read as a literal where Python does not
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = parser.parse(source)
        if parsed.state.flags & (re.MULTILINE | re.VERBOSE):
            return None
        items = list(parsed)
        _check(items)
    except (re.error, Unsupported, Warning, RecursionError, ValueError, TypeError):
        return None
    if items and items[0] == (c.AT, c.AT_BEGINNING):
        rest = items[1:]
        blanks = bool(rest) and _blanks(*rest[0])
        starts = _starts(rest[1:] if blanks else rest)
        if starts and blanks:
            # Past any number of blanks: what follows them in the text starts with the string's
            # own part after its blanks (a string of blanks alone says nothing).
            starts = frozenset(a.lstrip(_BLANKS) for a in starts)
            if all(starts):
                return "starts", starts
        elif starts:
            return "prefix", starts
    found = _contains(items)
    return ("contains", found) if found else None


class Prefilter:
    """`may_match(text)`: whether any of `sources` may match (False: none can; see the contract)."""

    def __init__(self, sources: list[str]) -> None:
        reqs = [requirement(s) for s in sources]
        self.usable = bool(reqs) and all(r is not None for r in reqs)
        found: dict[str, set[str]] = {"contains": set(), "starts": set(), "prefix": set()}
        for r in reqs:
            if r is not None:
                found[r[0]].update(r[1])
        self.contains = tuple(sorted(found["contains"]))
        self.starts = tuple(sorted(found["starts"]))
        self.prefix = tuple(sorted(found["prefix"]))

    def may_match(self, text: str) -> bool:
        if not self.usable or len(text) > LIMIT or not text.isascii():
            return True
        low = text.lower()
        if self.starts and low.lstrip(_BLANKS).startswith(self.starts):
            return True
        if self.prefix and low.startswith(self.prefix):
            return True
        return any(a in low for a in self.contains)
