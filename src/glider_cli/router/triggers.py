"""The six trigger types, compiled once, and what each looks at.

- `explicit`: one of `commands` as a word anywhere in the latest user message (`say hi /local`
  matches, `/localhost` does not). The latest *user* message: a tool follow-up carries the command
  of the prompt that started the turn.
- `regex`: RE2 `pattern` searched in the most recent message (`messages[-1].content`).
- `context_size`: `estimated_tokens <operator> value`.
- `always`: every request.
- `script`: a Starlark script decides (`router.scripts`).
- `composer_wrapup` (also `wrapup_origin`, `composer_wrapup_origin`): a Cursor Composer wrap-up, the
  summary request Composer sends when a run ends. Recognised by its wording (a request to summarise
  the conversation or the changes just made) in the latest user message.

Every matcher returns a `Match`: matched or not, and a one-line reason for the trace.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from glider_cli.config.model import Trigger
from glider_cli.domain import ChatRequest
from glider_cli.router.complexity import LazyComplexity
from glider_cli.values import Frozen

if TYPE_CHECKING:
    from glider_cli.router.scripts import ScriptOutcome

_OPS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "=": operator.eq,
}
_WRAPUP = re.compile(
    r"^\s*(?:please\s+)?(?:now\s+)?(?:summari[sz]e|write (?:a |an )?(?:brief |short |concise )?summary of|"
    r"give (?:me )?(?:a |an )?(?:brief |short )?(?:summary|recap) of|recap)\b[^\n]{0,80}?"
    r"\b(?:conversation|chat|session|changes|work|what (?:you|we|was) (?:did|done|changed|have done))",
    re.IGNORECASE,
)


class Context(Protocol):
    """What matchers read; built once per decision by the router."""

    request: ChatRequest
    last_text: str
    user_text: str
    complexity: LazyComplexity

    def script_payload(self) -> Any: ...

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """`compute()` once per decision for `key` (work several rules share)."""


class Match(Frozen):
    """A matcher's verdict: matched or not, the trace reason, a script's action, a script failure."""

    matched: bool
    reason: str
    action: dict[str, Any] | None
    error: bool

    def __init__(
        self, matched: bool, reason: str, action: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        self.__dict__.update(matched=matched, reason=reason, action=action, error=error)


def command_pattern(commands: tuple[str, ...]) -> re.Pattern[str]:
    """A word-bounded alternation of literal commands (stdlib re is safe: the commands are escaped)."""
    alts = "|".join(re.escape(c) for c in sorted(commands, key=len, reverse=True))
    return re.compile(r"(?<![\w/])(?:" + alts + r")(?![\w/-])")


def find_command(pattern: re.Pattern[str], commands: tuple[str, ...], text: str) -> str | None:
    for command in commands:  # a plain substring test first: most messages carry no command
        if command in text:
            m = pattern.search(text)
            return m.group(0) if m else None
    return None


class Matcher(Protocol):
    def __call__(self, ctx: Context) -> Match: ...


def _explicit(trigger: Trigger) -> Matcher:
    commands = trigger.commands
    pattern = command_pattern(commands)
    miss = Match(False, f"none of {' '.join(commands)} in the latest user message")

    def match(ctx: Context) -> Match:
        found = find_command(pattern, commands, ctx.user_text)
        if found:
            return Match(True, f"command {found} in the latest user message")
        return miss

    return match


def _regex(trigger: Trigger) -> Matcher:
    import re2

    source = trigger.pattern or ""
    pattern = re2.compile(source)
    hit = Match(True, f"pattern /{source}/ matches the most recent message")
    miss = Match(False, f"pattern /{source}/ does not match the most recent message")

    def match(ctx: Context) -> Match:
        return hit if pattern.search(ctx.last_text) else miss

    return match


def _context_size(trigger: Trigger) -> Matcher:
    op_name = trigger.operator or ">"
    op = _OPS[op_name]
    value = trigger.value or 0

    def match(ctx: Context) -> Match:
        tokens = ctx.request.estimated_tokens
        ok = op(tokens, value)
        return Match(ok, f"{tokens} estimated tokens {op_name} {value}" + ("" if ok else " is false"))

    return match


def _always(trigger: Trigger) -> Matcher:
    hit = Match(True, "always matches")

    def match(ctx: Context) -> Match:
        return hit

    return match


def _composer_wrapup(trigger: Trigger) -> Matcher:
    hit = Match(True, "the latest user message asks for a wrap-up summary (Composer)")
    miss = Match(False, "not a Composer wrap-up message")

    def match(ctx: Context) -> Match:
        return hit if _WRAPUP.search(ctx.user_text[:2000]) else miss

    return match


def script_match(name: str, outcome: ScriptOutcome) -> Match:
    """A script's outcome as a trace verdict (a failing script is no match, and says why)."""
    if outcome.error is not None:
        return Match(False, f"script {name} {outcome.error}; counted as no match", error=True)
    if not outcome.matched:
        return Match(False, f"script {name} returned no match")
    return Match(True, f"script {name} matched", outcome.action)


class ScriptMatcher:
    """A script rule's matcher; `script` stays reachable so the router can group adjacent scripts."""

    def __init__(self, trigger: Trigger) -> None:
        from glider_cli.router.scripts import Script

        self.script = Script(trigger.source or "", trigger.file or "<script>")
        self.name = (trigger.file or "script").rsplit("/", 1)[-1]

    def __call__(self, ctx: Context) -> Match:
        return script_match(self.name, self.script.call(ctx.script_payload()))


_BUILDERS: dict[str, Callable[[Trigger], Matcher]] = {
    "explicit": _explicit,
    "regex": _regex,
    "context_size": _context_size,
    "always": _always,
    "script": ScriptMatcher,
    "composer_wrapup": _composer_wrapup,
}


def compile_trigger(trigger: Trigger) -> Matcher:
    """A matcher for `trigger`. Raises ScriptError for a script that cannot load."""
    return _BUILDERS[trigger.type](trigger)
