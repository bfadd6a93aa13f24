"""What kind of request this is, read from the request alone (no index, no clock).

The turn-family index (`turns.families`) links requests with these tests; they are kept apart
from it because they only read what a client sends (`../shared/CLIENTS.md`):

- `is_new_user_message`: the most recent message is user text that answers no tool call.
- `answered_calls`: the call ids the trailing tool-result messages answer (Anthropic `tool_result`,
  Chat `tool` messages, Responses `function_call_output` by `call_id`, Gemini `functionResponse` by the
  id `protocol.gemini_request` gives it from the name and order of the call it answers: Google's
  functionCall parts carry no id).
- `is_utility_request`: a Gemini request with no tools that asks for a JSON reply
  (`generationConfig.responseMimeType: application/json`): Gemini CLI's router classifier (sent before
  each prompt's main request) and its other utility checks (next speaker, loop detection).
- `is_title_request`: Claude Code's session-title request (an `output_config.format` json_schema
  with a `title` property, or user text opening with `<session>` and no tools).
- `is_summary_request` / `summary_worded`: compaction, summary or Cursor Composer wrap-up wording,
  or a Codex `x-codex-turn-metadata` whose `request_kind` is not `turn` (`codex_request_kind`).
- `agent_prompt`: the text a subagent spawned by an Agent/Task call receives, at most
  `PROMPT_CAP` characters (the `ToolCallsIssued` event carries it, so the cap bounds the log);
  `prompt_digest` of the whole prompt is what the index matches a subagent's message against;
  `subagent_type`: the call's `subagent_type` (Claude Code's `Explore`, `general-purpose`...).
- `quoted_prompt`: the prompt a Claude Code title request quotes inside `<session>` tags.
- `credentials_fingerprint`: a keyed hash (keyed BLAKE2b) of the request's auth header value (`x-api-key`,
  `Authorization`, `x-goog-api-key`), to tell two clients apart when neither sends a session id.
  Never the key itself; the index keeps it in memory only.

All functions are pure and total: malformed input gives the negative answer, never an exception.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from hmac import compare_digest
from typing import Any, Literal, get_args

from glider_cli.domain import ChatRequest
from glider_cli.values import lazy_pattern

Kind = Literal[
    "new_turn",
    "tool_result",
    "count_tokens",
    "title",
    "utility",
    "summary",
    "subagent",
    "retry",
    "continuation",
]
KINDS: tuple[str, ...] = get_args(Kind)
AGENT_TOOLS = frozenset({"Agent", "Task", "spawn_agent"})
# How much of an Agent prompt is kept (in memory and in the log); the whole prompt is matched by digest.
PROMPT_CAP = 2000
_AUTH_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")
_blake2b = hashlib.blake2b
_SESSION_QUOTE = lazy_pattern(r"<session>(.*?)</session>", re.DOTALL)

_SUMMARY = lazy_pattern(
    r"(?:^\s*(?:please\s+)?(?:now\s+)?(?:summari[sz]e|write (?:a |an )?(?:brief |short |concise |detailed )?"
    r"summary of|give (?:me )?(?:a |an )?(?:brief |short )?(?:summary|recap) of|recap)\b[^\n]{0,80}?"
    r"\b(?:conversation|chat|session|changes|work|what (?:you|we|was) (?:did|done|changed|have done))"
    r"|create a detailed summary of the conversation"
    r"|summari[sz]e (?:this|the) conversation (?:so far|above)"
    r"|<compaction_request>)",
    re.IGNORECASE,
)
# The characters re.IGNORECASE matches to a letter of "conversation" or "<compaction_request>" whose
# lower() is not that letter (U+0130 and U+0131 for i, U+017F for s): with one, lower() cannot tell.
_FOLDED_APART = ("\u0130", "\u0131", "\u017f")


def is_new_user_message(request: ChatRequest) -> bool:
    """The most recent message is user text that answers no tool call (`ChatRequest.is_new_user_message`)."""
    return request.is_new_user_message


def answered_calls(request: ChatRequest) -> tuple[str, ...]:
    """The call ids the trailing tool-result messages answer (Responses sends one item per result)."""
    messages = request.messages
    if not messages or not messages[-1].tool_results:
        return ()  # most requests: the latest message answers no call
    out: list[str] = []
    for m in reversed(messages):
        if not m.tool_results:
            break
        out.extend(m.tool_results)
        if m.role == "user" and m.content.strip():
            break
    return tuple(reversed(out))


def codex_request_kind(headers: Mapping[str, str]) -> str | None:
    """The `request_kind` of Codex's `x-codex-turn-metadata` header (`turn`, `compact`, ...)."""
    raw = headers.get("x-codex-turn-metadata")
    if not raw or not raw.startswith("{"):
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    kind = meta.get("request_kind") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) else None


def is_title_request(request: ChatRequest, body: Mapping[str, Any] | None, text: str | None = None) -> bool:
    """Claude Code's session-title request (CLIENTS.md): a `title` json_schema, or `<session>` text."""
    if request.has_tools:
        return False
    oc = body.get("output_config") if body is not None else None
    if oc is not None:  # most requests have none: no Mapping checks for them
        fmt = oc.get("format") if isinstance(oc, Mapping) else None
        schema = fmt.get("schema") if isinstance(fmt, Mapping) else None
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(props, Mapping) and "title" in props:
            return True
    text = request.last_user_text if text is None else text
    return text.lstrip().startswith("<session>")


def is_utility_request(request: ChatRequest, body: Mapping[str, Any] | None) -> bool:
    """A Gemini client's own JSON-mode side request (the router classifier, the next-speaker check)."""
    if request.protocol != "gemini" or request.has_tools or body is None:
        return False
    config = body.get("generationConfig") or body.get("generation_config")
    if not isinstance(config, Mapping):
        return False
    return (config.get("responseMimeType") or config.get("response_mime_type")) == "application/json"


def summary_worded(text: str) -> bool:
    """The text asks for a summary / compaction / wrap-up (only its first 4000 characters are read)."""
    text = text[:4000]
    # Only the first alternative can match past the start, and it needs `^`: unless the text holds
    # one of the others' words, matching at the start answers as a search. A case-insensitive scan
    # costs ~35 ns a character (140 µs for 4000); lower() and two substring tests ~1 ns.
    low = text.lower()
    apart = not text.isascii() and any(ch in text for ch in _FOLDED_APART)
    if apart or "conversation" in low or "<compaction_request>" in low:
        return _SUMMARY.search(text) is not None
    return _SUMMARY.match(text) is not None


def is_summary_request(request: ChatRequest, text: str | None = None) -> bool:
    """Compaction / summary / Composer wrap-up wording, or a Codex request that is not a turn."""
    kind = codex_request_kind(request.headers)
    if kind is not None and kind != "turn":
        return True
    return summary_worded(request.last_user_text if text is None else text)


def agent_prompt(name: str, arguments: Mapping[str, Any], cap: int | None = PROMPT_CAP) -> str:
    """The text a subagent spawned by this tool call receives, capped at `cap` characters (None: the
    whole text; '' when it is no Agent/Task call)."""
    if name not in AGENT_TOOLS:
        return ""
    for key in ("prompt", "message", "task", "description"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:cap]
    return ""


def prompt_digest(text: str) -> str:
    """The digest a prompt is matched by: sha256 of the text without surrounding whitespace."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def subagent_type(name: str, arguments: Mapping[str, Any]) -> str | None:
    """The `subagent_type` an Agent/Task call asks for (None for other calls or when absent)."""
    if name not in AGENT_TOOLS:
        return None
    value = arguments.get("subagent_type")
    return value.strip() if isinstance(value, str) and value.strip() else None


def quoted_prompt(text: str) -> str | None:
    """The prompt a title request quotes (`<session>\\nsay hi /local\\n</session>\\n\\nWrite the title...`,
    CLIENTS.md), without surrounding whitespace; None when the text quotes none."""
    if "<session>" not in text:
        return None
    m = _SESSION_QUOTE.search(text)
    quoted = m.group(1).strip() if m else ""
    return quoted or None


def credentials_fingerprint(headers: Mapping[str, str], key: bytes) -> str | None:
    """A keyed hash (BLAKE2b in its keyed mode, a MAC, with `key`: 16 bytes, 32 hex digits) of the
    first auth header value the request carries, or None without one. Only equality is ever asked of
    it; without `key` it cannot be computed nor its value guessed."""
    return Fingerprinter(key)(headers)


class Fingerprinter:
    """`credentials_fingerprint` with one key, set up once: each new value's hash starts from a copy of
    the keyed hash (the key absorbed), which costs less than a new one. The last value hashed and its
    fingerprint are kept (a client sends the same credentials with every request): the value the
    request at hand carries, which the index holds anyway (with that request), and nothing older."""

    __slots__ = ("_fp", "_keyed", "_value")

    def __init__(self, key: bytes) -> None:
        if len(key) > 64:  # BLAKE2b's longest key: a longer one is hashed down first (as HMAC does)
            key = _blake2b(key).digest()
        self._keyed = _blake2b(key=key, digest_size=16)
        self._value = b""
        self._fp: str | None = None

    def __call__(self, headers: Mapping[str, str]) -> str | None:
        for name in _AUTH_HEADERS:
            value = headers.get(name)
            if value:
                raw = value.encode("utf-8", "replace")
                if self._fp is not None and compare_digest(raw, self._value):  # in constant time
                    return self._fp
                # Keyed BLAKE2b is ~3x cheaper than hmac.digest(sha256) for a header value.
                h = self._keyed.copy()
                h.update(raw)
                fp = h.hexdigest()
                self._value, self._fp = raw, fp
                return fp
        return None
