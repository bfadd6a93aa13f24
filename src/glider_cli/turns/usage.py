"""count_tokens calibration: per backend, how far Glider's bytes/4 estimate is from what it reports.

`UsageCalibrator.record(backend, estimated, actual)` learns the ratio between the input tokens a
backend reported and the estimate for the same request (an exponential moving average, clamped to
[0.25, 4] so one odd reply cannot wreck it); `estimate(backend, estimated)` corrects a later
estimate with it. One per `turns.Turns` (so one per app or replay), never a module global.
"""

from __future__ import annotations


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
