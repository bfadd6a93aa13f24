"""The router's pre-checks: which rules `Router.decide` may answer without calling their matcher.

Most requests carry no command, no wrap-up wording, no tools and none of the words a classifier
pattern needs; for them those rules can only give their one prebuilt "no" verdict, and a cheap test
proves it (issue 29: every matcher call costs, most when the process has been idle). Per rule,
`quick_table` gives (kind, the "no" trace line, the matcher); `decide` runs the kind's test:
- EXPLICIT: none of its commands in the user text (one pass of substring tests for every explicit
  rule and the delegate flags, only when the text holds a "/": every command starts with one), else
  its verdict on the person's own text (`ExplicitMatcher.typed`), asked once: it is the rule's;
- PATTERNS: no classifier pattern can match the text (`PatternIndex.may_match`: a literal
  pre-check, `router.prefilter`) and the rule's length limit does not apply (`quick_miss`);
- TOOLS: the request carries no tools;
- WRAPUP: not a Cursor request, and the text cannot be a wrap-up (`triggers.may_ask_wrapup`);
- DISABLED: the rule is off (its line says why); CALL: ask the matcher.
When the test does not prove the "no", the matcher is called as before: the verdicts and the trace
are the same either way.
"""

from __future__ import annotations

from typing import Any

from glider_cli.domain import Reason
from glider_cli.router.classifier import PatternsMatcher, ToolsMatcher
from glider_cli.router.compiled import CompiledRule
from glider_cli.router.triggers import ExplicitMatcher, WrapupMatcher

CALL, DISABLED, EXPLICIT, PATTERNS, TOOLS, WRAPUP = range(6)
_KINDS = (
    (ExplicitMatcher, EXPLICIT),
    (PatternsMatcher, PATTERNS),
    (ToolsMatcher, TOOLS),
    (WrapupMatcher, WRAPUP),
)


def quick_table(
    rules: tuple[CompiledRule, ...], disabled: tuple[Reason, ...]
) -> tuple[tuple[int, Reason, Any], ...]:
    """Per rule: (kind, the trace line given instead of the call, the matcher); `disabled` holds
    each rule's "disabled" line."""
    return tuple(_quick(r, d) for r, d in zip(rules, disabled, strict=True))


def _quick(rule: CompiledRule, disabled: Reason) -> tuple[int, Reason, Any]:
    if not rule.enabled:
        return DISABLED, disabled, None
    m: Any = rule.matcher
    for cls, kind in _KINDS:
        if isinstance(m, cls):
            return kind, Reason(rule.name, rule.priority, False, m.miss.reason), m
    return CALL, disabled, None  # (the line is not used: the matcher says)
