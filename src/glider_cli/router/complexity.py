"""The complexity heuristic: a 0-100 score with the signals that moved it.

Signals (each capped at its weight; the weights are configurable under `routing.complexity.weights`):
- `length`: the last user message's length, full marks at 2,000 characters;
- `keywords`: words or phrases that suggest a hard task (`routing.complexity.keywords`; literal,
  case-insensitive, whole words), a third of the weight per distinct keyword found;
- `code`: fenced code blocks in the message, half the weight each;
- `files`: file paths mentioned (`src/app.py`, `README.md`), a fifth of the weight each;
- `conversation`: how long the conversation already is, full marks at 40 messages;
- `tools`: the request carries tools (weight 0 by default: the classifier already routes on that).
Only the first 20,000 characters of the message are scanned, so the cost stays flat.
`complexity_source` is `heuristic`, or `cursor` when the client sent a hint (`with_client_hint`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from glider_cli.values import Frozen, lazy_pattern

DEFAULT_WEIGHTS: dict[str, int] = {
    "length": 30,
    "keywords": 30,
    "code": 15,
    "files": 15,
    "conversation": 10,
    "tools": 0,
}
_SCAN = 20_000
_ONE_PASS = 40
_FULL_CONVERSATION = 40  # messages: the `conversation` signal's full marks
_KEPT_LENGTH = 512  # the `length` signals of messages shorter than this are kept, once made
_FENCE = lazy_pattern(r"^[ \t]*```", re.MULTILINE)  # [ \t], not \s: \s* would rescan blank lines
_EXTENSIONS = frozenset(
    [
        "py",
        "pyi",
        "ts",
        "tsx",
        "js",
        "jsx",
        "go",
        "rs",
        "java",
        "kt",
        "c",
        "cc",
        "cpp",
        "h",
        "hpp",
        "rb",
        "php",
        "cs",
        "swift",
        "scala",
        "sql",
        "sh",
        "md",
        "yaml",
        "yml",
        "json",
        "toml",
        "ini",
        "cfg",
        "html",
        "css",
    ]
)
_STRIP = "`'\"()[]{}<>,;:!?"
# The signals most messages give (no keyword, no code block, no file path): made once, shared by
# every Complexity that has them (read, never changed).
_NO_KEYWORDS = {"signal": "keywords", "points": 0, "detail": "none"}
_NO_CODE = {"signal": "code", "points": 0, "detail": "0 code blocks"}
_NO_FILES = {"signal": "files", "points": 0, "detail": "0 file paths"}


def file_paths(text: str) -> set[str]:
    """Tokens that look like file paths (`src/app.py`, `README.md`); cheaper than a regex scan."""
    found: set[str] = set()
    for token in [t for t in text.split() if "." in t]:
        token = token.strip(_STRIP).rstrip(".")
        stem, dot, ext = token.rpartition(".")
        if dot and stem and not stem.endswith("/") and ext.lower() in _EXTENSIONS:
            found.add(token)
    return found


class Complexity(Frozen):
    """A score and its signals: `{"signal", "points", "detail"}` dicts, as the decision record shows them."""

    score: int
    signals: tuple[dict[str, Any], ...]
    source: str

    def __init__(self, score: int, signals: tuple[dict[str, Any], ...], source: str = "heuristic") -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.score = score
        s.signals = signals
        s.source = source

    def explain(self) -> str:
        moved = [f"{s['signal']} +{s['points']} ({s['detail']})" for s in self.signals if s["points"]]
        return ", ".join(moved) if moved else "no signal"


# What a client's own hint does to the heuristic score (`complexity_source: cursor`).
_HINT_FLOOR = {"max_mode": 80, "plan": 60}
_HINT_CEILING = {"ask": 40}


def with_client_hint(scored: Complexity, hint: Mapping[str, Any]) -> Complexity:
    """The heuristic score moved by what Cursor said: `max_mode` raises it to at least 80, the plan
    mode to at least 60, the ask mode caps it at 40; the source is `cursor`, the hint a signal."""
    score = scored.score
    if hint.get("max_mode") is True:
        score = max(score, _HINT_FLOOR["max_mode"])
    mode = hint.get("mode")
    if mode == "plan":
        score = max(score, _HINT_FLOOR["plan"])
    elif mode == "ask":
        score = min(score, _HINT_CEILING["ask"])
    detail = ", ".join(f"{k}={v}" for k, v in sorted(hint.items()))
    signal = {"signal": "cursor", "points": score - scored.score, "detail": detail}
    return Complexity(score, (*scored.signals, signal), source="cursor")


class LazyComplexity:
    """A request's Complexity, scored on first use: only a complexity rule, a script and the decision
    record read it, and the record is built off the request path (server.state.Deferred)."""

    __slots__ = ("_args", "_scorer", "_value")

    def __init__(
        self,
        scorer: ComplexityScorer,
        text: str,
        messages: int,
        has_tools: bool,
        hint: Mapping[str, Any] | None = None,
    ) -> None:
        self._scorer = scorer
        self._args = (text, messages, has_tools, hint)
        self._value: Complexity | None = None

    @property
    def value(self) -> Complexity:
        if self._value is None:
            text, messages, has_tools, hint = self._args
            scored = self._scorer.score(text, messages=messages, has_tools=has_tools)
            self._value = with_client_hint(scored, hint) if hint else scored
        return self._value

    @property
    def score(self) -> int:
        v = self._value
        return (v if v is not None else self.value).score

    @property
    def signals(self) -> tuple[dict[str, Any], ...]:
        v = self._value
        return (v if v is not None else self.value).signals

    @property
    def source(self) -> str:
        v = self._value
        return (v if v is not None else self.value).source

    def explain(self) -> str:
        return self.value.explain()


class ComplexityScorer:
    """Compiled once per Router from `routing.complexity`."""

    def __init__(self, keywords: tuple[str, ...] = (), weights: tuple[tuple[str, int], ...] = ()) -> None:
        w = dict(DEFAULT_WEIGHTS)
        w.update(dict(weights))
        self.weights = w
        self._w_length, self._w_keywords, self._w_code = w["length"], w["keywords"], w["code"]
        self._w_files, self._w_conversation, self._w_tools = w["files"], w["conversation"], w["tools"]
        lowered = sorted({k.lower().strip() for k in keywords if k.strip()})
        self._keyword_checks = tuple((k, re.compile(r"(?<!\w)" + re.escape(k) + r"(?!\w)")) for k in lowered)
        # Whether any keyword occurs at all, in one pass (most messages name none): on a message up to
        # `_ONE_PASS` characters, where one alternation beats a substring test per keyword. Not on a
        # longer one: `re` tries the alternation at every character, ~175 instructions each (350k on
        # 2,000 characters, against 60k for the 16 default keywords' substring tests).
        # Grouped by first letter (`a(?:lgorithm|sync)|d(?:ebug|esign)`): an alternative is tried only
        # where its letter is, not each keyword at every character (~20% fewer instructions).
        groups: dict[str, list[str]] = {}
        for k in lowered:
            groups.setdefault(k[0], []).append(re.escape(k[1:]))
        alternation = "|".join(re.escape(c) + "(?:" + "|".join(rest) + ")" for c, rest in groups.items())
        self._any_keyword = re.compile(alternation) if lowered else None
        # The `length` signal of a message shorter than `_KEPT_LENGTH` characters, made on first use
        # and kept (read, never changed, like `_NO_CODE`): its f-string, round() and dict are a fifth
        # of a short message's score.
        self._lengths: dict[int, tuple[int, dict[str, Any]]] = {}
        # The `conversation` signal of a conversation up to `_FULL_CONVERSATION` messages long, made
        # once (read, never changed, like `_NO_CODE`); a longer one's is made per request.
        self._conversation: tuple[tuple[int, dict[str, Any]], ...] = tuple(
            (pts, {"signal": "conversation", "points": pts, "detail": f"{m} messages"})
            for m in range(_FULL_CONVERSATION)
            for pts in (round(m / _FULL_CONVERSATION * self._w_conversation),)
        )

    def score(self, text: str, *, messages: int, has_tools: bool) -> Complexity:
        # Scored for every request's record (off the request path): min() of a ratio and 1.0, the
        # keyword look-up and the signals' tuple written inline, as each builtin or method call is a
        # measurable share of it.
        n = len(text)
        body = text if n <= _SCAN else text[:_SCAN]
        kept = self._lengths.get(n)
        if kept is None:
            total = round((n / 2000 if n < 2000 else 1.0) * self._w_length)
            kept = (total, {"signal": "length", "points": total, "detail": f"{n} chars"})
            if n < _KEPT_LENGTH:
                self._lengths[n] = kept
        total, length = kept
        keywords = None
        checks = self._keyword_checks
        w = self._w_keywords
        if checks and w:
            lower = body.lower()
            found: list[str] = []
            # A substring test first (fast), the word-boundary check only for the keywords present.
            if len(lower) > _ONE_PASS or self._any_keyword.search(lower):  # type: ignore[union-attr]
                for k, bounded in checks:
                    if k in lower and bounded.search(lower):
                        found.append(k)
            if found:
                pts = min(w, round(len(found) * w / 3))
                keywords = {"signal": "keywords", "points": pts, "detail": ", ".join(found)}
                total += pts
            else:
                keywords = _NO_KEYWORDS
        fences = len(_FENCE.findall(body)) // 2 if "```" in body else 0
        if fences:
            w = self._w_code
            pts = min(w, round(fences * w / 2))
            code = {"signal": "code", "points": pts, "detail": f"{fences} code blocks"}
            total += pts
        else:
            code = _NO_CODE
        files = len(file_paths(body)) if "." in body else 0
        if files:
            w = self._w_files
            pts = min(w, round(files * w / 5))
            paths = {"signal": "files", "points": pts, "detail": f"{files} file paths"}
            total += pts
        else:
            paths = _NO_FILES
        if 0 <= messages < _FULL_CONVERSATION:
            pts, said = self._conversation[messages]
        else:
            pts = round((messages / 40 if messages < 40 else 1.0) * self._w_conversation)
            said = {"signal": "conversation", "points": pts, "detail": f"{messages} messages"}
        total += pts
        signals: tuple[dict[str, Any], ...] = (
            (length, code, paths, said) if keywords is None else (length, keywords, code, paths, said)
        )
        if self._w_tools:
            pts = self._w_tools if has_tools else 0
            tools = {"signal": "tools", "points": pts, "detail": "tools present" if has_tools else "no tools"}
            signals += (tools,)
            total += pts
        return Complexity(total if total < 100 else 100, signals)
