"""Token counts read out of any protocol's reply bytes, without parsing them.

Anthropic/Responses `input_tokens`/`output_tokens`, Chat `prompt_tokens`/`completion_tokens`, Ollama
`prompt_eval_count`/`eval_count`, Gemini `promptTokenCount`/`candidatesTokenCount`; the largest value
seen for each wins, which is right for the cumulative usage a stream reports. `Usage.feed` takes
chunks as they pass (a stream) or a whole body.
"""

from __future__ import annotations

import re

_USAGE_RE = re.compile(
    rb'"(input_tokens|output_tokens|prompt_tokens|completion_tokens|prompt_eval_count|eval_count'
    rb'|promptTokenCount|candidatesTokenCount)"\s*:\s*(\d+)'
)
_INPUT_KEYS = {b"input_tokens", b"prompt_tokens", b"prompt_eval_count", b"promptTokenCount"}


class Usage:
    """Token counts seen in a reply (None until seen)."""

    __slots__ = ("input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def feed(self, data: bytes) -> None:
        if b"_tokens" not in data and b"eval_count" not in data and b"TokenCount" not in data:
            return
        for m in _USAGE_RE.finditer(data):
            n = int(m.group(2))
            if m.group(1) in _INPUT_KEYS:
                if self.input_tokens is None or n > self.input_tokens:
                    self.input_tokens = n
            elif self.output_tokens is None or n > self.output_tokens:
                self.output_tokens = n


def usage_from_bytes(data: bytes) -> Usage:
    u = Usage()
    u.feed(data)
    return u
