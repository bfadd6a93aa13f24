"""The task classifier's three rules (spec: 85 tools -> cloud, 80 cloud patterns -> cloud,
70 small patterns -> local) and the complexity rule (75, off until `complexity.enabled`).

Patterns are RE2, compiled case-insensitively, and searched in the latest user message. Each list is
compiled once into one alternation, so a request that matches nothing costs one search per list;
only on a match are the patterns tried one by one to name the one that matched in the trace.
A small task must also be short: at most `small_max_chars` characters.
"""

from __future__ import annotations

from typing import Any

from glider_cli.config_model import ComplexitySettings
from glider_cli.router.triggers import Context, Match, Matcher


class _PatternSet:
    def __init__(self, patterns: tuple[str, ...]) -> None:
        import re2

        self.patterns = patterns
        self._each: list[Any] = [re2.compile("(?i)" + p) for p in patterns]
        self._any: Any = re2.compile("(?i)" + "|".join(f"(?:{p})" for p in patterns)) if patterns else None

    def first(self, text: str) -> str | None:
        if self._any is None or self._any.search(text) is None:
            return None
        for source, compiled in zip(self.patterns, self._each, strict=True):
            if compiled.search(text):
                return source
        return None


def tools_matcher() -> Matcher:
    miss = Match(False, "the request carries no tools")

    def match(ctx: Context) -> Match:
        names = ctx.request.tool_names
        if names:
            shown = ", ".join(names[:4]) + (f" (+{len(names) - 4})" if len(names) > 4 else "")
            return Match(True, f"the request carries {len(names)} tools: {shown}")
        return miss

    return match


def patterns_matcher(patterns: tuple[str, ...], what: str, *, max_chars: int | None = None) -> Matcher:
    compiled = _PatternSet(patterns)
    none = Match(False, f"no {what} patterns configured")
    miss = Match(False, f"no {what} pattern matches the latest user message")

    def match(ctx: Context) -> Match:
        text = ctx.user_text
        if not patterns:
            return none
        if max_chars is not None and len(text) > max_chars:
            return Match(
                False, f"latest user message is {len(text)} chars, more than {max_chars} for a small task"
            )
        found = compiled.first(text)
        if found is None:
            return miss
        return Match(True, f"{what} pattern /{found}/ matches the latest user message")

    return match


def complexity_matcher(settings: ComplexitySettings) -> Matcher:
    above = settings.cloud_above

    def match(ctx: Context) -> Match:
        c = ctx.complexity
        ok = c.score >= above
        verdict = f"score {c.score} {'>=' if ok else '<'} cloud_above {above}"
        return Match(ok, f"{verdict}: {c.explain()}")

    return match
