"""The six trigger types, compiled once, and what each looks at.

- `explicit`: one of `commands` as a word anywhere in what the person typed in the latest user
  message (`say hi /local` matches, `/localhost` does not). The latest *user* message: a tool
  follow-up carries the command of the prompt that started the turn. Only the person's own text
  counts (`typed_text`): blocks the client injected itself are removed first, and a command inside
  back-ticks (`` `/local` ``), a fenced code block, a quoted line (`> ...`) or quote marks
  (`"/local"`) is a mention, not a command. The router asks for no command at all in a request that
  carries none of the person's text (a title, a summary, count_tokens, a subagent: `Ctx.command_text`).
- `regex`: RE2 `pattern` searched in the most recent message (`messages[-1].content`).
- `context_size`: `estimated_tokens <operator> value`.
- `always`: every request.
- `script`: a Starlark script decides (`router.scripts`); a bundled one in the subset that
  `sandbox.native` evaluates as Python does so without the interpreter (`NativeScriptMatcher`).
- `composer_wrapup` (also `wrapup_origin`, `composer_wrapup_origin`): a Cursor Composer wrap-up, the
  summary request Composer sends when a run ends. Recognised by field when the client declares it
  (Cursor's `summarize_action`: `ChatRequest.client_kind == "summary"` from the `cursor` client),
  else by its wording (a request to summarise the conversation or the changes just made) in the
  latest user message.

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
from glider_cli.values import Frozen, lazy_pattern

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
_WRAPUP = lazy_pattern(
    r"^\s*(?:please\s+)?(?:now\s+)?(?:summari[sz]e|write (?:a |an )?(?:brief |short |concise )?summary of|"
    r"give (?:me )?(?:a |an )?(?:brief |short )?(?:summary|recap) of|recap)\b[^\n]{0,80}?"
    r"\b(?:conversation|chat|session|changes|work|what (?:you|we|was) (?:did|done|changed|have done))",
    re.IGNORECASE,
)


# What clients wrap around the person's text themselves (../shared/CLIENTS.md): Claude Code's
# <system-reminder> blocks and slash-command expansion tags, Codex's <environment_context>,
# <user_instructions> and AGENTS.md <INSTRUCTIONS>, Gemini's <session_context> (which holds
# <loaded_context>). A block left open (a client that truncated it) runs to the end of the text.
INJECTED_TAGS: tuple[str, ...] = (
    "system-reminder",
    "command-message",
    "command-name",
    "command-args",
    "local-command-stdout",
    "user-prompt-submit-hook",
    "environment_context",
    "user_instructions",
    "INSTRUCTIONS",
    "session_context",
    "loaded_context",
)
_INJECTED = lazy_pattern(r"<(" + "|".join(INJECTED_TAGS) + r")(?:\s[^>]*)?>(?:.*?</\1>|.*\Z)", re.DOTALL)
# Whole-message texts a client sends as if the person wrote them: Claude Code's `# Environment`
# section (a user message in count_tokens, "It can be toggled with /fast"), Codex's AGENTS.md header.
_INJECTED_MESSAGE = re.compile(
    r"\A\s*(?:# Environment\nYou have been invoked in the following environment"
    r"|# AGENTS\.md instructions for )"
)
# Mentions, not commands: fenced blocks, inline code spans, Markdown quote lines.
_FENCED = lazy_pattern(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
# An inline code span may wrap a line but not a paragraph: a stray back-tick does not blank the rest.
_CODE_SPAN = lazy_pattern(r"(`+)(?!`)(?:(?!\n\s*\n).)+?(?<!`)\1(?!`)", re.DOTALL)
_QUOTE_LINE = lazy_pattern(r"^[ \t]*>.*$", re.MULTILINE)
_OPEN_QUOTES = "\"'“‘«"
_CLOSE_QUOTES = "\"'”’»"


def client_text(text: str) -> str:
    """A user message's text without what the client injected into it (`INJECTED_TAGS`; a Claude
    Code `# Environment` or Codex AGENTS.md message is wholly the client's: "")."""
    if "<" in text:
        text = _INJECTED.sub(" ", text)
    # Both such messages open with a "#": a text without one (most) is not matched.
    return "" if "#" in text and _INJECTED_MESSAGE.match(text) else text


def typed_text(text: str) -> str:
    """What the person typed in a user message's text (`client_text`), with mentions (code fences,
    inline code, `> ` quote lines) blanked, so a command found in the rest is one the person gave."""
    text = client_text(text)
    if "`" in text or "~~~" in text:
        text = _CODE_SPAN.sub(" ", _FENCED.sub(" ", text))
    if ">" in text:
        text = _QUOTE_LINE.sub(" ", text)
    return text


class Context(Protocol):
    """What matchers read; built once per decision by the router. `command_text` is the person's own
    text in the latest user message (`typed_text`), or "" when the request carries none."""

    request: ChatRequest
    last_text: str
    user_text: str
    complexity: LazyComplexity

    @property
    def command_text(self) -> str: ...

    def script_payload(self) -> Any: ...

    def script_request(self) -> Any: ...

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """`compute()` once per decision for `key` (work several rules share)."""


class Match(Frozen):
    """A matcher's verdict: matched or not, the trace reason, a script's action, a script failure,
    and the command an `explicit` trigger found."""

    matched: bool
    reason: str
    action: dict[str, Any] | None
    error: bool
    command: str | None

    def __init__(
        self,
        matched: bool,
        reason: str,
        action: dict[str, Any] | None = None,
        error: bool = False,
        command: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.matched = matched
        s.reason = reason
        s.action = action
        s.error = error
        s.command = command


def command_pattern(commands: tuple[str, ...]) -> re.Pattern[str]:
    """A word-bounded alternation of literal commands (stdlib re is safe: the commands are escaped)."""
    alts = "|".join(re.escape(c) for c in sorted(commands, key=len, reverse=True))
    return re.compile(r"(?<![\w/])(?:" + alts + r")(?![\w/-])")


def find_command(pattern: re.Pattern[str], commands: tuple[str, ...], text: str) -> str | None:
    """The first of `commands` in `text` as a word, skipping one in quote marks (`"/local"`)."""
    for command in commands:  # a plain substring test first: most messages carry no command
        if command in text:
            # One search after another (finditer's matches, without making its iterator).
            m = pattern.search(text)
            while m is not None:
                start, end = m.span()
                before = text[start - 1] if start else ""
                after = text[end] if end < len(text) else ""
                if before and before in _OPEN_QUOTES and after and after in _CLOSE_QUOTES:
                    m = pattern.search(text, end)  # a match is never empty: `end` moves on
                    continue
                return m.group(0)
            return None
    return None


def typed_command(pattern: re.Pattern[str], commands: tuple[str, ...], ctx: Context) -> str | None:
    """A command the person typed in the latest user message (see `typed_text`)."""
    text = ctx.user_text
    for c in commands:  # most messages carry none: no cleaning for them
        if c in text:
            return find_command(pattern, commands, ctx.command_text)
    return None


class Matcher(Protocol):
    def __call__(self, ctx: Context) -> Match: ...


class ExplicitMatcher:
    """An `explicit` trigger. `miss` is its one "no command" verdict: the router gives it without
    the call when no command can be in the text (`router.decide`); the verdict for a command found
    is made once per command."""

    def __init__(self, trigger: Trigger) -> None:
        self.commands = commands = trigger.commands
        self.pattern = command_pattern(commands)
        self.miss = Match(False, f"none of {' '.join(commands)} in the latest user message")
        # Its "yes" verdicts, one per command (a Match is immutable): made on first use.
        self._hits: dict[str, Match] = {}

    def __call__(self, ctx: Context) -> Match:
        text = ctx.user_text
        for c in self.commands:  # most messages carry none: no cleaning for them (`typed_command`)
            if c in text:
                return self.typed(ctx.command_text)
        return self.miss

    def typed(self, text: str) -> Match:
        """The verdict on `text`, the person's own text (`Context.command_text`), for a request whose
        user text holds one of the commands (the router tests that for every explicit rule at once)."""
        found = find_command(self.pattern, self.commands, text)
        if not found:
            return self.miss
        hit = self._hits.get(found)
        if hit is None:
            hit = self._hits[found] = Match(
                True, f"command {found} in the latest user message", command=found
            )
        return hit


def _explicit(trigger: Trigger) -> Matcher:
    return ExplicitMatcher(trigger)


def _regex(trigger: Trigger) -> Matcher:
    import re2

    source = trigger.pattern or ""
    pattern = re2.compile(source, quiet_options())
    hit = Match(True, f"pattern /{source}/ matches the most recent message")
    miss = Match(False, f"pattern /{source}/ does not match the most recent message")

    def match(ctx: Context) -> Match:
        return hit if pattern.search(ctx.last_text) else miss

    return match


def quiet_options() -> Any:
    """RE2 options that keep RE2's own error log (absl's start-up banner and `re2.cc` lines) off
    stderr: every pattern error is reported by Glider, with the rule that holds the pattern."""
    import re2

    options = re2.Options()
    options.log_errors = False
    return options


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


# How `_WRAPUP`'s first word (after blanks) begins: please, now, summarise/summarize, write, give, recap.
_WRAPUP_WORDS = ("please", "now", "summari", "write", "give", "recap")


def may_ask_wrapup(text: str) -> bool:
    """False when `_WRAPUP` cannot match `text`: past its leading blanks, the text is ASCII and
    starts with none of the words the pattern opens with (or is empty). True otherwise (ask the
    pattern: a non-ASCII character may fold to a pattern letter, `ſ` to `s`)."""
    for i, ch in enumerate(text):  # `\s` of a str pattern is str.isspace()
        if not ch.isspace():
            head = text[i : i + 7]
            return not head.isascii() or head.lower().startswith(_WRAPUP_WORDS)
    return False


class WrapupMatcher:
    """A `composer_wrapup` trigger. `miss` is its "not a wrap-up" verdict: the router gives it
    without the call for a request that cannot be one (`may_ask_wrapup`, not from Cursor)."""

    hit = Match(True, "the latest user message asks for a wrap-up summary (Composer)")
    miss = Match(False, "not a Composer wrap-up message")
    by_field = Match(True, "a Cursor summarize_action (a wrap-up, by field)")

    def __call__(self, ctx: Context) -> Match:
        req = ctx.request
        if req.protocol == "cursor":
            return self.by_field if req.client_kind == "summary" else self.miss
        # endpos: as if the text were cut at 2,000 characters, without copying them.
        return self.hit if _WRAPUP.search(ctx.user_text, 0, 2000) else self.miss


def _composer_wrapup(trigger: Trigger) -> Matcher:
    return WrapupMatcher()


def script_match(name: str, outcome: ScriptOutcome, miss: Match | None = None) -> Match:
    """A script's outcome as a trace verdict (a failing script is no match, and says why).
    `miss`: the script's "returned no match" verdict, built once (`no_match_verdict`)."""
    if outcome.error is not None:
        return Match(False, f"script {name} {outcome.error}; counted as no match", error=True)
    if not outcome.matched:
        return miss or no_match_verdict(name)
    return Match(True, f"script {name} matched", outcome.action)


def no_match_verdict(name: str) -> Match:
    return Match(False, f"script {name} returned no match")


class ScriptMatcher:
    """A script rule's matcher; `script` stays reachable so the router can group adjacent scripts."""

    def __init__(self, trigger: Trigger) -> None:
        from glider_cli.router.scripts import Script

        # Glider's own scripts run in-process; a user's go to the supervised worker (started now).
        sandbox = None
        if trigger.bundled:
            from glider_cli.sandbox.inprocess import bundled_sandbox

            sandbox = bundled_sandbox()
        self.script = Script(trigger.source or "", trigger.file or "<script>", sandbox=sandbox)
        self.name = script_name(trigger)
        self.miss = no_match_verdict(self.name)

    def __call__(self, ctx: Context) -> Match:
        return script_match(self.name, self.script.call(ctx.script_payload()), self.miss)


class NativeScriptMatcher:
    """A bundled script evaluated as Python (`sandbox.native`): the same verdicts and trace as
    `ScriptMatcher`, without the Starlark interpreter; never grouped (there is no round trip to
    share)."""

    def __init__(self, trigger: Trigger, script: Any) -> None:
        self.script = script
        self.name = script_name(trigger)
        self.miss = no_match_verdict(self.name)

    def __call__(self, ctx: Context) -> Match:
        outcome = self.script.call(ctx.script_request())
        if outcome.error is None and not outcome.matched:  # script_match's usual answer, inline
            return self.miss
        return script_match(self.name, outcome, self.miss)


def script_name(trigger: Trigger) -> str:
    return (trigger.file or "script").rsplit("/", 1)[-1]


def _script(trigger: Trigger) -> Matcher:
    """A bundled script in the subset `sandbox.native` takes runs as Python; any other, Starlark."""
    if trigger.bundled:
        from glider_cli.sandbox.native import compile_native

        native = compile_native(trigger.source or "", trigger.file or "<script>")
        if native is not None:
            return NativeScriptMatcher(trigger, native)
    return ScriptMatcher(trigger)


_BUILDERS: dict[str, Callable[[Trigger], Matcher]] = {
    "explicit": _explicit,
    "regex": _regex,
    "context_size": _context_size,
    "always": _always,
    "script": _script,
    "composer_wrapup": _composer_wrapup,
}


def compile_trigger(trigger: Trigger) -> Matcher:
    """A matcher for `trigger`. Raises ScriptError for a script that cannot load."""
    return _BUILDERS[trigger.type](trigger)
