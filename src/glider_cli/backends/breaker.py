"""A circuit breaker per backend: a backend that keeps failing is skipped for a cool-down.

Contract (per backend, its `config.settings.BreakerSettings`; defaults 5 failures in 60 s, 30 s):
- closed: every request tries it. A failed attempt (`verdict`: refused or reset, timed out, answered
  5xx) is remembered; when `failures` of them fall within the last `window` seconds the breaker opens.
  A 4xx answer (429 included) is the backend answering: it never counts as a failure.
- open: `admit` raises `errors.BackendOpen` (a BackendError, so the outbound path takes it exactly as
  a failed attempt: the fallback, or the protocol's error — 503 with `retry-after` — when there is
  none) until `cooldown` seconds have passed since it opened.
- half-open (the cool-down is over): the next request is let through as the trial (`admit` returns
  True; the others still skip the backend while it runs), or the capability probe answering
  (`probed`) counts as a trial that succeeded. The trial's success closes the breaker and forgets
  the failures; its failure opens it for another cool-down; a trial that ended otherwise (the
  client went away) leaves the trial to the next request. An attempt admitted while closed that
  ends while the breaker is open changes nothing.
- Every change is told to `on_change(state, data)`: `open` {backend, failures, window, cooldown,
  error (the last failure's), trial (true: the trial failed)} and `closed` {backend, by (request |
  probe), open_s (how long it was open)}; the proxy records them as `BackendOpened` / `BackendClosed`.
- `health()` is each backend's state for `/healthz`, `glider doctor` and the dashboard, with
  `last_attempt`: how the last attempt that said something about the backend ended (`ok`, `failed`;
  None before any), since a closed breaker's count of recent failures stays after a success.
Pure: no I/O, no asyncio; the clocks are injected. Used from the event loop only.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from glider_cli.backends.probe import describe_error
from glider_cli.config.settings import BreakerSettings
from glider_cli.errors import BackendError, BackendOpen, BackendTimeout, UpstreamStatus

__all__ = ["Breakers", "verdict"]

Clock = Callable[[], float]
Change = Callable[[str, dict[str, Any]], None]


def verdict(exc: BaseException | None) -> bool | None:
    """What an attempt's outcome says about the backend: True it answered, False it failed (refused,
    timed out, 5xx), None nothing (the client went away, or the backend was not tried)."""
    if exc is None:
        return True
    if isinstance(exc, BackendOpen):
        return None
    if isinstance(exc, UpstreamStatus):
        return exc.status < 500
    if isinstance(exc, BackendError):
        return False
    return None


class _Breaker:
    __slots__ = ("failures", "last_error", "last_ok", "name", "opened_at", "opened_wall", "settings", "trial")

    def __init__(self, name: str, settings: BreakerSettings) -> None:
        self.name = name
        self.settings = settings
        self.failures: deque[float] = deque()
        self.opened_at: float | None = None  # monotonic
        self.opened_wall: float | None = None
        self.trial = False
        self.last_error: str | None = None
        self.last_ok: bool | None = None  # the verdict of the last attempt that gave one

    def recent(self, now: float) -> int:
        while self.failures and now - self.failures[0] > self.settings.window:
            self.failures.popleft()
        return len(self.failures)

    def state(self, now: float) -> str:
        if self.opened_at is None:
            return "closed"
        return "half_open" if now - self.opened_at >= self.settings.cooldown else "open"

    def start_trial(self) -> None:
        self.trial = True

    def end_trial(self) -> None:
        """The trial ended saying nothing of the backend (the client went away): the next request's."""
        self.trial = False

    def answered(self) -> None:
        self.last_ok = True

    def failed(self, now: float, error: str) -> None:
        """A failed attempt; its time is remembered unless the breaker is open (the trial failed)."""
        self.last_ok = False
        self.last_error = error
        if self.opened_at is None:
            self.failures.append(now)

    def open(self, now: float, wall: float) -> None:
        self.opened_at, self.opened_wall, self.trial = now, wall, False

    def close(self) -> None:
        """Closed: the failures forgotten."""
        self.opened_at = self.opened_wall = None
        self.trial = False
        self.last_ok = True
        self.failures.clear()


class Breakers:
    """The breakers of every configured backend (see the module contract)."""

    def __init__(
        self,
        settings: Mapping[str, BreakerSettings],
        *,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        on_change: Change | None = None,
    ) -> None:
        self._by_name = {name: _Breaker(name, s) for name, s in settings.items() if s.enabled}
        self._clock = clock
        self._wall = wall
        self.on_change = on_change

    def admit(self, name: str) -> bool:
        """Raise BackendOpen when `name` is to be skipped; True when this attempt is the trial."""
        b = self._by_name.get(name)
        if b is None or b.opened_at is None:
            return False
        left = b.opened_at + b.settings.cooldown - self._clock()
        if left <= 0 and not b.trial:
            b.start_trial()
            return True
        why = f"{b.settings.failures} failures in {b.settings.window:g} s, the last: {b.last_error}"
        then = "a trial request is in flight" if left <= 0 else f"tried again in {math.ceil(left)} s"
        raise BackendOpen(f"{name} skipped, its circuit breaker is open ({why}); {then}", retry_after=left)

    def ended(self, name: str, exc: BaseException | None, *, trial: bool = False) -> None:
        """One attempt at `name` ended: answered (`exc` None, or a 4xx), failed, or neither."""
        b = self._by_name.get(name)
        if b is None:
            return
        if b.opened_at is None and exc is None:  # answered while closed (the usual attempt)
            b.answered()
            return
        ok = verdict(exc)
        if b.opened_at is not None and not trial:
            return  # admitted before it opened: the trial decides
        if ok is None:
            b.end_trial()
        elif ok:
            b.answered()
            if b.opened_at is not None:
                self._close(b, "request")
        else:
            self._failed(b, _describe(exc))

    def probed(self, name: str) -> None:
        """The capability probe reached `name`: a trial that succeeded, once the cool-down is over."""
        b = self._by_name.get(name)
        if b is not None and not b.trial and b.state(self._clock()) == "half_open":
            self._close(b, "probe")

    def _failed(self, b: _Breaker, error: str) -> None:
        now = self._clock()
        trial = b.opened_at is not None
        b.failed(now, error)
        if trial:  # the trial failed: another cool-down
            self._open(b, now, trial=True)
            return
        if b.recent(now) >= b.settings.failures:
            self._open(b, now, trial=False)

    def _open(self, b: _Breaker, now: float, *, trial: bool) -> None:
        b.open(now, self._wall())
        s = b.settings
        data = {
            "backend": b.name,
            "failures": s.failures,
            "window": s.window,
            "cooldown": s.cooldown,
            "error": b.last_error,
            "trial": trial,
        }
        self._tell("open", data)

    def _close(self, b: _Breaker, by: str) -> None:
        assert b.opened_at is not None
        open_s = round(self._clock() - b.opened_at, 3)
        b.close()
        self._tell("closed", {"backend": b.name, "by": by, "open_s": open_s})

    def _tell(self, kind: str, data: dict[str, Any]) -> None:
        if self.on_change is not None:
            self.on_change(kind, data)

    def state(self, name: str) -> str | None:
        """closed | open | half_open; None for a backend without a breaker."""
        b = self._by_name.get(name)
        return b.state(self._clock()) if b is not None else None

    def health(self) -> dict[str, dict[str, Any]]:
        """Per backend with a breaker: state, recent failures, settings, since when open, retry in."""
        now = self._clock()
        out: dict[str, dict[str, Any]] = {}
        for name, b in self._by_name.items():
            s = b.settings
            left = None if b.opened_at is None else max(0.0, b.opened_at + s.cooldown - now)
            out[name] = {
                "state": b.state(now),
                "failures": b.recent(now),
                "threshold": s.failures,
                "window": s.window,
                "cooldown": s.cooldown,
                "opened_at": b.opened_wall,
                "retry_in": None if left is None else round(left, 1),
                "last_error": b.last_error,
                "last_attempt": None if b.last_ok is None else "ok" if b.last_ok else "failed",
            }
        return out


def _describe(exc: BaseException | None) -> str:
    if isinstance(exc, UpstreamStatus):
        return f"answered {exc.status}"
    if isinstance(exc, BackendTimeout):
        return "timeout"
    return describe_error(exc) if exc is not None else "failed"
