"""Token counts read out of any protocol's reply bytes, without parsing them.

Anthropic/Responses `input_tokens`/`output_tokens`, Chat `prompt_tokens`/`completion_tokens`, Ollama
`prompt_eval_count`/`eval_count`, Gemini `promptTokenCount`/`candidatesTokenCount`; the largest value
seen for each wins, which is right for the cumulative usage a stream reports. `Usage.feed` takes
chunks as they pass (a stream) or a whole body, and counts their bytes (`bytes`).

Cache tokens: Anthropic's `cache_read_input_tokens` / `cache_creation_input_tokens` come beside its
`input_tokens` (which does not count them); OpenAI's `cached_tokens` (Chat `prompt_tokens_details`,
Responses `input_tokens_details`) and Gemini's `cachedContentTokenCount` are part of the input count
they come with: `cache_in_input` is then True (`record()` says so, and `store.pricing` takes them
out of the input before pricing it).

Stopped at the limit: with `Usage(limit=True)` (a local backend's reply: only those are counted,
and the search is not free), `at_limit` is True once the reply says its output stopped at the token
limit (Chat `"finish_reason": "length"`, Ollama `"done_reason": "length"`, Anthropic `"stop_reason":
"max_tokens"`, Gemini `"finishReason": "MAX_TOKENS"`, Responses `"reason": "max_output_tokens"`).

Text (`text_bytes`): the bytes of the reply's text, thinking and tool arguments, what an estimate of
its output tokens is made from when it reports none (never the framing: an event stream is mostly
framing, 1,300 "tokens" of it for an 18-token answer). The JSON string values of `text`, `content`,
`thinking`, `reasoning_content`, `partial_json`, `arguments`, `response` (Ollama's generate) are
counted, an escape as one byte; in a Responses stream, which repeats its text in the closing events,
only the `delta` values (once a `delta` string was seen, only those count). A value cut between two
chunks is counted from the next complete line (the tail after a chunk's last newline is held). Read
only with `Usage(text=True)`: the callers ask for it where an estimate may be needed and nothing else
counts the text (a reply read whole, a local server's stream, a Chat stream relayed as it is), not on
a cloud stream's path, which reports its usage.
"""

from __future__ import annotations

import re
from typing import Any

from glider_cli.values import lazy_pattern

# Every usage key ends in `_tokens` or `ount` (`eval_count`, `...TokenCount`): a count is found by
# its key's tail and value (a literal the regex engine scans for quickly, where a pattern starting at
# every `"` of a quote-dense JSON body is not), and its key is the text back to the `"` before it.
_TAILS = (re.compile(rb'(_tokens)"\s*:\s*(\d+)'), re.compile(rb'(ount)"\s*:\s*(\d+)'))
# key -> 0 input, 1 output, 2 cache read, 3 cache write; 4 a cache read the input count includes.
_KEYS = {
    b"input_tokens": 0,
    b"prompt_tokens": 0,
    b"prompt_eval_count": 0,
    b"promptTokenCount": 0,
    b"output_tokens": 1,
    b"completion_tokens": 1,
    b"eval_count": 1,
    b"candidatesTokenCount": 1,
    b"cache_read_input_tokens": 2,
    b"cache_creation_input_tokens": 3,
    b"cached_tokens": 4,
    b"cachedContentTokenCount": 4,
}
# A text-bearing key's JSON string value (group 1: `delta` or another; group 2: the literal's inside).
_TEXT_RE = re.compile(
    rb'"(delta|text|content|thinking|reasoning_content|partial_json|arguments|response)"\s*:\s*"'
    rb'([^"\\]*(?:\\.[^"\\]*)*)"'
)
_TAIL_MAX = 1 << 20
_LIMIT_RE = lazy_pattern(
    rb'"(?:finish_reason|done_reason|stop_reason|finishReason|reason)"\s*:\s*'
    rb'"(?:length|max_tokens|MAX_TOKENS|max_output_tokens)"'
)


class Usage:
    """Token counts seen in a reply (None until seen)."""

    __slots__ = (
        "_delta",
        "_read_text",
        "_tail",
        "_text",
        "_watch",
        "at_limit",
        "bytes",
        "cache_in_input",
        "cache_read_tokens",
        "cache_write_tokens",
        "input_tokens",
        "output_tokens",
    )

    def __init__(self, *, limit: bool = False, text: bool = True) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cache_read_tokens: int | None = None
        self.cache_write_tokens: int | None = None
        self.cache_in_input = False
        self.bytes = 0  # every byte fed (an estimate's basis when the reply reports no usage)
        self.at_limit = False  # the reply stopped at its output-token limit (looked for with `limit`)
        self._watch = limit
        self._text = 0  # bytes of text values but `delta`'s
        self._delta = 0  # bytes of `delta` string values (a Responses stream's text)
        self._tail = b""  # the bytes after the last newline fed, not yet read for text
        self._read_text = text

    @property
    def text_bytes(self) -> int:
        """Bytes of text, thinking and tool arguments fed so far (see the module contract)."""
        text, delta = self._text, self._delta
        if self._tail:
            text, delta = _text_in(self._tail, text, delta)
        return delta or text

    def feed(self, data: bytes) -> None:
        self.bytes += len(data)
        if self._read_text:
            self._feed_text(data)
        if self._watch and (
            b'"length"' in data
            or b'"max_tokens"' in data
            or b"MAX_TOKENS" in data
            or b'"max_output_tokens"' in data
        ):
            self.at_limit = _LIMIT_RE.search(data) is not None
            self._watch = not self.at_limit
        for pattern in _TAILS:
            for m in pattern.finditer(data):
                # The key is the text back to the `"` before its tail (a usage key has no `"`); with
                # no `"` before it in `data` (a chunk cut inside the key) it is no key.
                at, end = m.span(1)
                opening = data.rfind(b'"', 0, at)
                which = _KEYS.get(data[opening + 1 : end]) if opening >= 0 else None
                if which is None:
                    continue
                n = int(m.group(2))
                if which == 0:
                    if self.input_tokens is None or n > self.input_tokens:
                        self.input_tokens = n
                elif which == 1:
                    if self.output_tokens is None or n > self.output_tokens:
                        self.output_tokens = n
                elif which == 3:
                    if self.cache_write_tokens is None or n > self.cache_write_tokens:
                        self.cache_write_tokens = n
                else:
                    if self.cache_read_tokens is None or n > self.cache_read_tokens:
                        self.cache_read_tokens = n
                    if which == 4:
                        self.cache_in_input = True

    def _feed_text(self, data: bytes) -> None:
        cut = data.rfind(b"\n") + 1
        if cut == len(data) and not self._tail:  # whole lines (a stream's usual chunk): no copy
            self._text, self._delta = _text_in(data, self._text, self._delta)
        elif cut:
            self._text, self._delta = _text_in(self._tail + data[:cut], self._text, self._delta)
            self._tail = data[cut:]
        else:
            self._tail += data
            if len(self._tail) > _TAIL_MAX:  # a body without newlines: read it as it is
                self._text, self._delta = _text_in(self._tail, self._text, self._delta)
                self._tail = b""

    def record(self) -> dict[str, Any]:
        """The cache counts as an outcome event records them (only the ones the reply reported)."""
        out: dict[str, Any] = {}
        if self.cache_read_tokens is not None:
            out["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.cache_in_input and self.cache_read_tokens:
            out["cache_in_input"] = True
        return out


def _text_in(data: bytes, text: int, delta: int) -> tuple[int, int]:
    if b'":' not in data and b'": ' not in data:
        return text, delta
    for m in _TEXT_RE.finditer(data):
        lit = m.group(2)
        n = len(lit) - lit.count(b"\\") if b"\\" in lit else len(lit)
        if m.group(1) == b"delta":
            delta += n
        else:
            text += n
    return text, delta


def usage_from_bytes(data: bytes, *, limit: bool = False) -> Usage:
    u = Usage(limit=limit)
    u.feed(data)
    return u
