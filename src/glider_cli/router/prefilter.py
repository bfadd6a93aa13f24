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
The pattern is read by `_Reader`, which knows a subset of the syntax RE2 and Python share: literals
(escaped ASCII punctuation, `\\t \\n \\r \\f \\v`), `.`, classes, `\\d \\D \\s \\S \\w \\W \\b \\B`, `^`, `$`,
groups (`(?:...)`, `(?i-s:...)`: flags `i` and `s`, alone only at the start), `|`, `? * + {m} {m,}
{m,n}` (lazy too). Anything else (`\\x41`, `\\p`, a POSIX class, a brace that is no quantifier, a
named group, a look-around, a back-reference...) gives no requirement: that pattern is always
searched. The check is made only on ASCII text (case folding is then plain ASCII lower-casing, as
RE2's `(?i)` does for it) of at most `LIMIT` characters; otherwise, RE2 decides.
"""

from __future__ import annotations

import re
from typing import Any

LIMIT = 8192
_BLANKS = " \t\n\f\r"  # RE2's \s
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`|}~")  # escaped, stands for itself (`\{` is refused)
_CONTROL = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v"}
_COUNT = re.compile(r"([0-9]{1,5})(?:(,)([0-9]{0,5}))?\}")  # a quantifier past its `{`
_FLAGS = re.compile(r"([is]*)(?:-([is]+))?([:)])")  # a group's flags past its `(?`; `(?:` has none
_ATOMS = ("lit", "nlit", "in", "any", "at")  # what alternatives may share as a head
_SPACES = ("in", False, (("cat", "s"),))  # `\s` (and `[\s]`)

# The tree: a sequence is a list of nodes, a node a tuple:
# ("lit", ch) one character; ("nlit", ch) any character but ch; ("in", negated, items) a class, its
# items ("lit", ch) | ("range", lo, hi) | ("cat", "d"...); ("any",); ("at", "^" | "$" | "b" | "B");
# ("group", "capture" | "flags", seq) ("plain" only while read); ("branch", [seq, ...]);
# ("repeat", min, max | None, lazy, seq).
Node = tuple[Any, ...]


class Unsupported(Exception):
    pass


class _Reader:
    """Reads the accepted syntax (see the module contract), raises Unsupported at anything else. Its
    tree has the shape Python's parser gave (a group without flags spliced into its sequence, a head
    all alternatives share taken out, one-character alternatives merged into a class), so the
    requirements stay the same."""

    def __init__(self, source: str) -> None:
        self.text = source
        self.i = 0

    def read(self) -> list[Node]:
        items = self._alternation(top=True)
        if self.i != len(self.text):
            raise Unsupported("unbalanced )")
        return items

    def _next(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def _take(self, chars: str) -> str:
        """The next character, consumed, if it is one of `chars`; else ""."""
        ch = self._next()
        if ch and ch in chars:
            self.i += 1
            return ch
        return ""

    def _alternation(self, top: bool = False) -> list[Node]:
        alts = [self._sequence(top)]
        while self._take("|"):
            alts.append(self._sequence(False))
        if len(alts) == 1:
            return alts[0]
        head: list[Node] = []
        while all(alts) and alts[0][0][0] in _ATOMS and all(a[0] == alts[0][0] for a in alts):
            head.append(alts[0][0])
            alts = [a[1:] for a in alts]
        if all(len(a) == 1 and (a[0][0] == "lit" or (a[0][0] == "in" and not a[0][1])) for a in alts):
            items: list[Node] = []
            for (node,) in alts:
                items.extend(node[2] if node[0] == "in" else [node])
            return [*head, ("in", False, tuple(dict.fromkeys(items)))]
        return [*head, ("branch", alts)]

    def _sequence(self, first: bool) -> list[Node]:
        """Up to the next `|` or `)`; `first`: the pattern's first alternative (global flags)."""
        seq: list[Node] = []
        while (ch := self._next()) and ch not in "|)":
            self.i += 1
            if ch in "?*+{":
                self._repeat(seq, ch)
            elif ch == "(":
                self._group(seq, first)
            elif ch == "[":
                seq.append(self._class())
            elif ch == "\\":
                seq.append(self._escape(in_class=False))
            elif ch == ".":
                seq.append(("any",))
            elif ch in "^$":
                seq.append(("at", ch))
            else:
                seq.append(("lit", ch))
        spliced: list[Node] = []
        for node in seq:
            spliced.extend(node[2] if node[0] == "group" and node[1] == "plain" else [node])
        return spliced

    def _repeat(self, seq: list[Node], ch: str) -> None:
        low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}.get(ch, (0, None))
        if ch == "{":
            count = _COUNT.match(self.text, self.i)
            if count is None:  # RE2 reads such a brace as a literal, Python may not: refuse it
                raise Unsupported("brace")
            self.i = count.end()
            low = int(count[1])
            high = None if count[2] and not count[3] else int(count[3] or count[1])
            if max(low, high or 0) > 1000 or (high is not None and high < low):
                raise Unsupported("count")
        if not seq or seq[-1][0] in ("at", "repeat"):
            raise Unsupported("nothing to repeat")  # a possessive `*+` ends here too
        body = seq[-1][2] if seq[-1][0] == "group" and seq[-1][1] == "plain" else [seq[-1]]
        seq[-1] = ("repeat", low, high, bool(self._take("?")), body)

    def _group(self, seq: list[Node], first: bool) -> None:
        kind = "capture"
        if self._take("?"):
            flags = _FLAGS.match(self.text, self.i)
            if flags is None or set(flags[1]) & set(flags[2] or ""):
                raise Unsupported("group")  # a look-around, a name, a flag other than i and s...
            self.i = flags.end()
            kind = "flags" if flags[1] or flags[2] else "plain"
            if flags[3] == ")":  # global flags: only at the very start, as Python has them
                if not flags[1] or flags[2] or not first or seq:
                    raise Unsupported("flags")
                return
        inner = self._alternation()
        if not self._take(")"):
            raise Unsupported("unterminated group")
        seq.append(("group", kind, inner))

    def _class(self) -> Node:
        negated = bool(self._take("^"))
        if self._next() == ":":
            raise Unsupported("POSIX class")
        items: list[Node] = []
        while True:
            ch = self._next()
            self.i += 1
            if not ch or ch in "[{" or (ch in "-&~|" and self._next() == ch):
                raise Unsupported("class")  # unterminated, nested, a brace, a set operation
            if ch == "]" and items:
                break
            item = self._escape(in_class=True) if ch == "\\" else ("lit", ch)
            if not self._take("-"):
                items.append(item)
                continue
            if self._take("]"):
                items += [item, ("lit", "-")]
                break
            end = self._next()
            self.i += 1
            last = self._escape(in_class=True) if end == "\\" else ("lit", end)
            if not end or end in "-[{" or item[0] != "lit" or last[0] != "lit" or last[1] < item[1]:
                raise Unsupported("range")
            items.append(("range", item[1], last[1]))
        items = list(dict.fromkeys(items))
        if len(items) == 1 and items[0][0] == "lit":
            return ("nlit" if negated else "lit", items[0][1])
        return ("in", negated, tuple(items))

    def _escape(self, in_class: bool) -> Node:
        ch = self._next()
        self.i += 1
        if not ch:
            raise Unsupported("\\ at the end")
        if ch in _PUNCT:
            return ("lit", ch)
        if ch in _CONTROL:
            return ("lit", _CONTROL[ch])
        if ch in "dDsSwW":
            return ("cat", ch) if in_class else ("in", False, (("cat", ch),))
        if ch in "bB" and not in_class:
            return ("at", ch)
        raise Unsupported("\\" + ch)  # \x41, \p, \1, \A, \Q, \z...


def _ascii(node: Node) -> str | None:
    return node[1].lower() if node[0] == "lit" and node[1] < "\x80" else None


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two requirements (the longer shortest string)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if min(map(len, a)) >= min(map(len, b)) else b


def _contains(items: list[Node]) -> frozenset[str] | None:
    """Strings one of which every match of the sequence `items` contains; None if unknown."""
    best: frozenset[str] | None = None
    run: list[str] = []
    for node in items:
        ch = _ascii(node)
        if ch is not None:
            run.append(ch)
            continue
        if run:
            best = _better(best, frozenset(["".join(run)]))
            run = []
        if node[0] == "group":
            best = _better(best, _contains(node[2]))
        elif node[0] == "branch":
            best = _better(best, _union([_contains(alt) for alt in node[1]]))
        elif node[0] == "repeat" and node[1] >= 1:
            best = _better(best, _contains(node[4]))
    if run:
        best = _better(best, frozenset(["".join(run)]))
    return best


def _union(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
    if not parts or any(p is None or not p for p in parts):
        return None
    return frozenset().union(*[p for p in parts if p is not None])


def _starts(items: list[Node]) -> frozenset[str] | None:
    """Strings one of which every match of the sequence `items` starts with; None if unknown."""
    run: list[str] = []
    for node in items:
        ch = _ascii(node)
        if ch is None:
            break
        run.append(ch)
    if run:
        return frozenset(["".join(run)])
    if not items:
        return None
    if items[0][0] == "group":
        return _starts(items[0][2])
    if items[0][0] == "branch":
        return _union([_starts(alt) for alt in items[0][1]])
    return None


def requirement(source: str) -> tuple[str, frozenset[str]] | None:
    """(how, strings): what any match of `source` needs (see the module contract): `contains`,
    `starts` (past the text's leading blanks) or `prefix` (the text itself starts with one); None
    when nothing safe can be said."""
    try:
        items = _Reader(source).read()
    except (Unsupported, RecursionError):
        return None
    if items and items[0] == ("at", "^"):
        rest = items[1:]
        blanks = bool(rest) and rest[0] == ("repeat", 0, None, False, [_SPACES])
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
