"""The task classifier's three rules (spec: 85 tools -> cloud, 80 cloud patterns -> cloud,
70 small patterns -> local) and the complexity rule (75, off until `complexity.enabled`).

Patterns are RE2, compiled case-insensitively, and searched in the latest user message. Both lists go
into one RE2 set, searched once per decision (by whichever pattern rule runs first): the result says
which patterns matched, so the trace names the first matching pattern of each list.
A small task must also be short: at most `small_max_chars` characters.
"""

from __future__ import annotations

from typing import Any

from glider_cli.config.model import ComplexitySettings
from glider_cli.router.prefilter import Prefilter
from glider_cli.router.triggers import Context, Match, Matcher


class PatternIndex:
    """Every classifier pattern in one RE2 set: one pass over the message tells which ones match."""

    def __init__(self, groups: dict[str, tuple[str, ...]]) -> None:
        import re2

        self.sources: list[str] = []
        self.ranges: dict[str, tuple[int, int]] = {}
        self._set: Any = None
        for name, patterns in groups.items():
            self.ranges[name] = (len(self.sources), len(self.sources) + len(patterns))
            self.sources.extend(patterns)
        if self.sources:
            self._set = re2.Set.SearchSet(re2.Options())
            for source in self.sources:
                self._set.Add("(?i)" + source)
            self._set.Compile()
        # Most messages hold none of the literals the patterns need: no RE2 search for them.
        self._prefilter = Prefilter(self.sources)

    def may_match(self, text: str) -> bool:
        """False when no pattern can match `text` (`prefilter`: no RE2 search needed)."""
        return self._set is not None and self._prefilter.may_match(text)

    def hits(self, text: str) -> tuple[int, ...]:
        if self._set is None or not self._prefilter.may_match(text):
            return ()
        return tuple(sorted(self._set.Match(text) or ()))

    def first(self, name: str, hits: tuple[int, ...]) -> str | None:
        lo, hi = self.ranges[name]
        for i in hits:
            if lo <= i < hi:
                return self.sources[i]
        return None


class ToolsMatcher:
    """`task_classifier.tools`. `miss` is its verdict for a request without tools (the router
    gives it without the call)."""

    miss = Match(False, "the request carries no tools")

    def __call__(self, ctx: Context) -> Match:
        names = ctx.request.tool_names
        if names:
            shown = ", ".join(names[:4]) + (f" (+{len(names) - 4})" if len(names) > 4 else "")
            return Match(True, f"the request carries {len(names)} tools: {shown}")
        return self.miss


def tools_matcher() -> Matcher:
    return ToolsMatcher()


class PatternsMatcher:
    """`task_classifier.cloud` or `.small`: the first of its list that matches (`PatternIndex`)."""

    def __init__(self, index: PatternIndex, what: str, max_chars: int | None) -> None:
        self.index = index
        self.what = what
        self.lo, self.hi = index.ranges[what]
        self.max_chars = max_chars
        self.none = Match(False, f"no {what} patterns configured")
        self.miss = Match(False, f"no {what} pattern matches the latest user message")

    def quick_miss(self, text: str) -> bool:
        """Whether this rule's verdict on `text` is `miss`, given that no pattern of the index
        matches it (the router then gives `miss` without the call)."""
        return self.lo != self.hi and (self.max_chars is None or len(text) <= self.max_chars)

    def __call__(self, ctx: Context) -> Match:
        text = ctx.user_text
        if self.lo == self.hi:
            return self.none
        max_chars = self.max_chars
        if max_chars is not None and len(text) > max_chars:
            return Match(
                False, f"latest user message is {len(text)} chars, more than {max_chars} for a small task"
            )
        index = self.index
        found = index.first(self.what, ctx.memo(index, lambda: index.hits(text)))
        if found is None:
            return self.miss
        return Match(True, f"{self.what} pattern /{found}/ matches the latest user message")


def patterns_matcher(index: PatternIndex, what: str, *, max_chars: int | None = None) -> Matcher:
    return PatternsMatcher(index, what, max_chars)


def complexity_matcher(settings: ComplexitySettings) -> Matcher:
    above = settings.cloud_above

    def match(ctx: Context) -> Match:
        c = ctx.complexity
        ok = c.score >= above
        verdict = f"score {c.score} {'>=' if ok else '<'} cloud_above {above}"
        return Match(ok, f"{verdict}: {c.explain()}")

    return match
