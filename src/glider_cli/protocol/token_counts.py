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
# its key's tail (a literal the regex engine scans for quickly, where a pattern starting at every `"`
# of a quote-dense JSON body is not), and its whole key, back to its opening `"`, is checked by a
# look-behind after the tail. Each pattern's groups are the same five kinds, in order: the value of an
# input, output, cache read, cache write key, and of a cache read the input count includes (the `ount`
# pattern has no key of the third and fourth: two empty groups stand in for them). `findall` gives one
# tuple of the five per count, four of them empty: no match object, no call per match (measured: a
# 200-byte reply's feed 28k -> 17k instructions).
_VALUE = rb"\s*:\s*(\d+)"


def _tail(tail: bytes, *kinds: tuple[bytes, ...]) -> re.Pattern[bytes]:
    alternatives, groups = [], b""
    for keys in kinds:
        if not keys:  # a kind this tail has no key of: an empty group, in the next alternative
            groups += b"()"
            continue
        behind = b"|".join(b'(?<="' + key + b'")' for key in keys)
        alternatives.append(groups + b"(?:" + behind + b")" + _VALUE)
        groups = b""
    # Compiled at import (~0.4 ms; only the proxy imports this): a `lazy_pattern`'s method costs a
    # few hundred instructions more per call.
    return re.compile(tail + b'"(?:' + b"|".join(alternatives) + b")")


_TAILS = (
    _tail(
        b"_tokens",
        (b"input_tokens", b"prompt_tokens"),
        (b"output_tokens", b"completion_tokens"),
        (b"cache_read_input_tokens",),
        (b"cache_creation_input_tokens",),
        (b"cached_tokens",),
    ),
    _tail(
        b"ount",
        (b"prompt_eval_count", b"promptTokenCount"),
        (b"eval_count", b"candidatesTokenCount"),
        (),
        (),
        (b"cachedContentTokenCount",),
    ),
)
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
        if self._read_text:  # the text's whole lines are read, the rest held (written out: per chunk)
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
        # `find`, not `in`: `bytes in bytes` first tries its operand as an int (a TypeError raised and
        # cleared, ~2x a find).
        if self._watch and (
            data.find(b'"length"') >= 0
            or data.find(b'"max_tokens"') >= 0
            or data.find(b"MAX_TOKENS") >= 0
            or data.find(b'"max_output_tokens"') >= 0
        ):
            self.at_limit = _LIMIT_RE.search(data) is not None
            self._watch = not self.at_limit
        for pattern in _TAILS:
            for i, o, r, w, c in pattern.findall(data):
                if i:
                    n = int(i)
                    if self.input_tokens is None or n > self.input_tokens:
                        self.input_tokens = n
                elif o:
                    n = int(o)
                    if self.output_tokens is None or n > self.output_tokens:
                        self.output_tokens = n
                elif w:
                    n = int(w)
                    if self.cache_write_tokens is None or n > self.cache_write_tokens:
                        self.cache_write_tokens = n
                else:
                    n = int(r or c)
                    if self.cache_read_tokens is None or n > self.cache_read_tokens:
                        self.cache_read_tokens = n
                    if c:
                        self.cache_in_input = True

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
    if data.find(b'":') < 0:  # no key with a value (`find`: see `feed`)
        return text, delta
    for key, lit in _TEXT_RE.findall(data):
        n = len(lit) - lit.count(b"\\")
        if key == b"delta":
            delta += n
        else:
            text += n
    return text, delta


def usage_from_bytes(data: bytes, *, limit: bool = False) -> Usage:
    u = Usage(limit=limit)
    u.feed(data)
    return u
