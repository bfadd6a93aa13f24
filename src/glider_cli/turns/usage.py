"""count_tokens calibration: per backend, how far Glider's bytes/4 estimate is from what it reports.

`UsageCalibrator.record(backend, estimated, actual)` learns the ratio between the input tokens a
backend reported and the estimate for the same request (an exponential moving average, clamped to
[0.25, 4] so one odd reply cannot wreck it); `estimate(backend, estimated)` corrects a later
estimate with it. One per `turns.Turns` (so one per app or replay), never a module global.

`accounting(opened, served, calibrator)`: the usage keys an outcome event adds (see its docstring).
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


# Bytes of a reply per output token, for a reply whose backend reported no usage (the framing of a
# JSON body or an event stream is counted too: the estimate is high rather than low).
REPLY_BYTES_PER_TOKEN = 4


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
    def reply_bytes(self) -> int | None: ...


def accounting(opened: _Opened, served: _Served, calibrator: UsageCalibrator) -> dict[str, Any]:
    """What an outcome event records for usage accounting (`store.usage`), beside the reported counts:

    - `rule` (the decision's) and `requested_model` (the model the client asked for: the price of a
      local answer's savings);
    - an estimate for a count the backend did not report, named in `estimated`: the input from the
      request's size (bytes/4, corrected by what this backend has reported before); the output from
      the reply's bytes (`REPLY_BYTES_PER_TOKEN`), also for a reply that did not complete when that
      is more than it reported (a stream cut short reported only its start). An error status (400
      and above) reports and costs nothing, so nothing is estimated for it; a request the client
      left before any reply (status 0) gets its input estimated (the backend may have read it) and
      no output.
    """
    out: dict[str, Any] = {"rule": opened.decision.rule, "requested_model": opened.chat.model or None}
    estimated: list[str] = []
    status = served.status
    if status >= 400:
        return out
    if served.input_tokens is None:
        backend = served.backend or "?"
        out["input_tokens"] = calibrator.estimate(backend, opened.chat.estimated_tokens)
        estimated.append("input_tokens")
    # A reply cut short reports at most its start's count (Anthropic's message_start says 1).
    cut = not served.complete and status > 0
    if served.output_tokens is None or cut:
        n = served.reply_bytes or 0
        guess = (n + REPLY_BYTES_PER_TOKEN - 1) // REPLY_BYTES_PER_TOKEN if status else 0
        if served.output_tokens is None or guess > served.output_tokens:
            out["output_tokens"] = guess
            if status:
                estimated.append("output_tokens")
    if estimated:
        out["estimated"] = estimated
    return out
