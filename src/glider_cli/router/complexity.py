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
`complexity_source` is `heuristic`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_WEIGHTS: dict[str, int] = {
    "length": 30,
    "keywords": 30,
    "code": 15,
    "files": 15,
    "conversation": 10,
    "tools": 0,
}
_SCAN = 20_000
_FENCE = re.compile(r"^[ \t]*```", re.MULTILINE)  # [ \t], not \s: \s* would rescan blank lines
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


def file_paths(text: str) -> set[str]:
    """Tokens that look like file paths (`src/app.py`, `README.md`); cheaper than a regex scan."""
    found: set[str] = set()
    for token in [t for t in text.split() if "." in t]:
        token = token.strip(_STRIP).rstrip(".")
        stem, dot, ext = token.rpartition(".")
        if dot and stem and not stem.endswith("/") and ext.lower() in _EXTENSIONS:
            found.add(token)
    return found


class Signal(NamedTuple):
    name: str
    points: int
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"signal": self.name, "points": self.points, "detail": self.detail}


@dataclass(frozen=True)
class Complexity:
    score: int
    signals: tuple[Signal, ...]
    source: str = "heuristic"

    def explain(self) -> str:
        moved = [f"{s.name} +{s.points} ({s.detail})" for s in self.signals if s.points]
        return ", ".join(moved) if moved else "no signal"


class ComplexityScorer:
    """Compiled once per Router from `routing.complexity`."""

    def __init__(self, keywords: tuple[str, ...] = (), weights: tuple[tuple[str, int], ...] = ()) -> None:
        self.weights = dict(DEFAULT_WEIGHTS)
        self.weights.update(dict(weights))
        lowered = sorted({k.lower().strip() for k in keywords if k.strip()})
        # A substring test first (fast), the word-boundary check only for the keywords present.
        self._keyword_checks = tuple((k, re.compile(r"(?<!\w)" + re.escape(k) + r"(?!\w)")) for k in lowered)

    def _keywords(self, lower: str) -> list[str]:
        return [k for k, bounded in self._keyword_checks if k in lower and bounded.search(lower)]

    def score(self, text: str, *, messages: int, has_tools: bool) -> Complexity:
        body = text[:_SCAN]
        w = self.weights
        signals = [Signal("length", round(min(len(text) / 2000, 1.0) * w["length"]), f"{len(text)} chars")]
        if self._keyword_checks and w["keywords"]:
            found = self._keywords(body.lower())
            pts = min(w["keywords"], round(len(found) * w["keywords"] / 3))
            signals.append(Signal("keywords", pts, ", ".join(found) if found else "none"))
        fences = len(_FENCE.findall(body)) // 2 if "```" in body else 0
        signals.append(Signal("code", min(w["code"], round(fences * w["code"] / 2)), f"{fences} code blocks"))
        files = len(file_paths(body))
        signals.append(Signal("files", min(w["files"], round(files * w["files"] / 5)), f"{files} file paths"))
        conv = round(min(messages / 40, 1.0) * w["conversation"])
        signals.append(Signal("conversation", conv, f"{messages} messages"))
        if w["tools"]:
            detail = "tools present" if has_tools else "no tools"
            signals.append(Signal("tools", w["tools"] if has_tools else 0, detail))
        total = max(0, min(100, sum(s.points for s in signals)))
        return Complexity(total, tuple(signals))
