"""count_tokens calibration: per backend, how far Glider's bytes/4 estimate is from what it reports.

`UsageCalibrator.record(backend, estimated, actual)` learns the ratio between the input tokens a
backend reported and the estimate for the same request (an exponential moving average, clamped to
[0.25, 4] so one odd reply cannot wreck it); `estimate(backend, estimated)` corrects a later
estimate with it. One per `turns.Turns` (so one per app or replay), never a module global.

`accounting(opened, served, calibrator, out=)`: the usage keys an outcome event adds (see its docstring).
"""

from __future__ import annotations

from typing import Any, Protocol

from glider_cli.domain import ChatRequest, RouteDecision


class UsageCalibrator:
    def __init__(self, alpha: float = 0.3) -> None:
        self._alpha = alpha
        self._ratio: dict[str, float] = {}

    def record(self, backend: str, estimated: int, actual: int | None) -> None:
        if not actual or estimated <= 0:
            return
        r = min(4.0, max(0.25, actual / estimated))
        prev = self._ratio.get(backend)
        self._ratio[backend] = r if prev is None else prev + self._alpha * (r - prev)

    def ratio(self, backend: str) -> float:
        return self._ratio.get(backend, 1.0)

    def estimate(self, backend: str, estimated: int) -> int:
        return max(1, round(estimated * self.ratio(backend))) if estimated > 0 else 1


# Bytes of a reply's text per output token, for a reply whose backend reported no usage (the same
# bytes/4 a translated stream's closing usage tells the client: `protocol.encoder_base`).
TEXT_BYTES_PER_TOKEN = 4


def estimates_output(status: int, output_tokens: int | None, complete: bool) -> bool:
    """Whether `accounting` estimates a reply's output from its text (`Served.text_bytes`): an answer
    (status below 400) whose backend reported no output count, or that did not complete (a reply cut
    short reports at most its start's count: Anthropic's message_start says 1). The proxy reads a
    reply's text only then."""
    return status < 400 and (output_tokens is None or (not complete and status > 0))


def output_estimate(text_bytes: int) -> int:
    """The output tokens of a reply with this many bytes of text (1 at least for any text)."""
    return max(1, (text_bytes + TEXT_BYTES_PER_TOKEN - 1) // TEXT_BYTES_PER_TOKEN) if text_bytes > 0 else 0


class _Opened(Protocol):
    @property
    def chat(self) -> ChatRequest: ...

    @property
    def decision(self) -> RouteDecision: ...


class _Served(Protocol):
    @property
    def backend(self) -> str | None: ...

    @property
    def status(self) -> int: ...

    @property
    def input_tokens(self) -> int | None: ...

    @property
    def output_tokens(self) -> int | None: ...

    @property
    def answered(self) -> bool: ...

    @property
    def complete(self) -> bool: ...

    @property
    def text_bytes(self) -> int | None: ...

    @property
    def sent_tokens(self) -> int | None: ...

    @property
    def side(self) -> str: ...


def sent_estimate(opened: _Opened, served: _Served) -> int:
    """The estimated tokens of the request as its backend was sent it (the client's when unknown)."""
    sent = served.sent_tokens
    return sent if sent is not None and sent > 0 else opened.chat.estimated_tokens


def accounting(
    opened: _Opened, served: _Served, calibrator: UsageCalibrator, out: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What an outcome event records for usage accounting (`store.usage`), beside the reported counts,
    set in `out` when given (the outcome being built: a count it holds is replaced where it stands,
    as `update` would), else in a new dict; returns it:

    - `rule` (the decision's) and `requested_model` (the model the client asked for: the price of a
      local answer's savings);
    - an estimate for a count the backend did not report, named in `estimated`: the input from the
      request as the backend was sent it (`sent_estimate`: a local backend's pack, not the client's
      whole request; bytes/4, corrected by what this backend has reported before); the output from
      the bytes of the reply's text (`output_estimate`: text, thinking and tool arguments, never
      the stream's framing), also for a reply that did not complete when that is more than it
      reported (a stream cut short reported only its start). An error status (400 and above)
      reports and costs nothing, so nothing is estimated for it; a request the client left before
      any reply (status 0) gets its input estimated (the backend may have read it) and no output;
    - a local answer's `client_input_tokens`: the client's own request (bytes/4, an estimate), the
      cloud request the local answer saved: savings are priced on it, not on the local input (0 for
      a request the client left before any reply).
    """
    if out is None:
        out = {}
    out["rule"] = opened.decision.rule
    out["requested_model"] = opened.chat.model or None
    estimated: list[str] = []
    status = served.status
    if served.side == "local" and status < 400:  # a request the client left saved it nothing
        out["client_input_tokens"] = opened.chat.estimated_tokens if status else 0
    if status >= 400:
        return out
    if served.input_tokens is None:
        backend = served.backend or "?"
        out["input_tokens"] = calibrator.estimate(backend, sent_estimate(opened, served))
        estimated.append("input_tokens")
    if estimates_output(status, served.output_tokens, served.complete):
        guess = output_estimate(served.text_bytes or 0) if status else 0
        if served.output_tokens is None or guess > served.output_tokens:
            out["output_tokens"] = guess
            if status:
                estimated.append("output_tokens")
    if estimated:
        out["estimated"] = estimated
    return out
