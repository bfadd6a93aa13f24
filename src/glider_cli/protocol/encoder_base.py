"""The lifecycle every stream encoder shares (anthropic, openai_chat, openai_responses).

Contract, the same for each protocol:
- the stream's opening frames go out once, before the first content frame (or on `ir.Start`);
- `ir.Finish` writes the closing frames and ends the stream; `ir.Failure` (or `error()`) writes
  the protocol's error frames and ends it; after the end every call returns no bytes;
- `assume_started()` marks the opening as already sent (a passthrough stream whose first frames
  reached the client verbatim), so only the ending comes from the encoder;
- a count the upstream never reported (llama-cpp-python sends no usage in a stream) is Glider's own
  estimate in the closing frames, never a 0: the input from `input_estimate` (the request's size,
  calibrated per backend), the output from the bytes of text, thinking and tool arguments sent
  (UTF-8 bytes / 4). The usage object then carries `"glider_estimate": true` (`marked`), as
  `count_tokens` answers carry `x-glider-estimate`.

A subclass writes the protocol's frames: `_opening`, `_content` (text, thinking, tool deltas),
`_closing` and `_error_frames`. It is pure: bytes out, no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from glider_cli.protocol import ir

ESTIMATE_KEY = "glider_estimate"


class StreamEncoderBase(ABC):
    """ir stream events -> one protocol's SSE bytes; see the module docstring for the lifecycle."""

    def __init__(self, *, model: str, input_estimate: int | None = None) -> None:
        self.model = model
        self._started = False
        self._usage: ir.Usage | None = None
        self.done = False
        self.input_estimate = input_estimate
        self.estimated = False  # the closing usage holds a count of Glider's own
        self._out_bytes = 0

    def encode(self, ev: ir.StreamEvent) -> list[bytes]:
        if self.done:
            return []
        if isinstance(ev, ir.Failure):
            return self.error(ev.message, type=ev.type)
        if isinstance(ev, ir.Start):
            return self._on_start(ev)
        out = self._start()
        if isinstance(ev, ir.Finish):
            out += self._closing(ev, self._estimated(ir.merge_usage(self._usage, ev.usage)))
            self.done = True
        else:
            if isinstance(ev, ir.TextDelta | ir.ThinkingDelta):
                self._out_bytes += len(ev.text.encode())
            elif isinstance(ev, ir.ToolArgs):
                self._out_bytes += len(ev.json.encode())
            out += self._content(ev)
        return out

    def _estimated(self, usage: ir.Usage) -> ir.Usage:
        """`usage` with Glider's estimate for a count the upstream left at 0 (module contract)."""
        inp, out = usage.input_tokens, usage.output_tokens
        if not usage.total_input and self.input_estimate:
            inp, self.estimated = self.input_estimate, True
        if not out and self._out_bytes:
            out, self.estimated = max(1, (self._out_bytes + 3) // 4), True
        return (
            ir.Usage(inp, out, usage.cache_read_tokens, usage.cache_write_tokens) if self.estimated else usage
        )

    @property
    def text_bytes(self) -> int:
        """UTF-8 bytes of the text, thinking and tool arguments encoded so far (what the output
        estimate is made from)."""
        return self._out_bytes

    def marked(self, usage: dict[str, Any]) -> dict[str, Any]:
        """A usage object as the protocol writes it, marked when it holds an estimate."""
        return {**usage, ESTIMATE_KEY: True} if self.estimated else usage

    def assume_started(self) -> None:
        """The client already has the stream's opening frames (passthrough); only end it from here."""
        self._started = True

    def error(self, message: str, *, type: str = "api_error") -> list[bytes]:
        if self.done:
            return []
        self.done = True
        return self._error_frames(message, type)

    def _on_start(self, ev: ir.Start) -> list[bytes]:
        """An upstream Start: its usage (the input count) is kept for the closing frames."""
        self._usage = ev.usage
        return self._start(ev)

    def _start(self, ev: ir.Start | None = None) -> list[bytes]:
        if self._started:
            return []
        self._started = True
        return self._opening(ev)

    @abstractmethod
    def _opening(self, ev: ir.Start | None) -> list[bytes]:
        """The frames that open the stream (`ev` is None when content came first)."""

    @abstractmethod
    def _content(self, ev: ir.StreamEvent) -> list[bytes]:
        """The frames for a text, thinking or tool event (the stream is already open)."""

    @abstractmethod
    def _closing(self, ev: ir.Finish, usage: ir.Usage) -> list[bytes]:
        """The frames that end the stream; `usage` merges the Start's counts with the Finish's."""

    @abstractmethod
    def _error_frames(self, message: str, type: str) -> list[bytes]:
        """The frames that report a failure and end the stream."""
