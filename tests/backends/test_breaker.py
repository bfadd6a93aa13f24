"""The circuit breaker's states on a fake clock (backends.breaker): what counts as a failure, the
window, the cool-down, one trial at a time, stragglers, the probe, and the events it tells."""

from __future__ import annotations

from typing import Any

import pytest

from glider_cli.backends.breaker import Breakers, verdict
from glider_cli.config.settings import BreakerSettings
from glider_cli.errors import BackendError, BackendOpen, BackendTimeout, UpstreamStatus


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(**settings: Any) -> tuple[Breakers, Clock, list[tuple[str, dict[str, Any]]]]:
    clock = Clock()
    told: list[tuple[str, dict[str, Any]]] = []
    b = Breakers(
        {"ollama": BreakerSettings(**settings), "off": BreakerSettings(enabled=False)},
        clock=clock,
        wall=lambda: 1.7e9,
        on_change=lambda kind, data: told.append((kind, data)),
    )
    return b, clock, told


REFUSED = BackendError("cannot connect to 127.0.0.1:9: connection refused")


def fail(b: Breakers, n: int, exc: BaseException = REFUSED) -> None:
    for _ in range(n):
        b.ended("ollama", exc, trial=b.admit("ollama"))


def test_what_counts() -> None:
    assert verdict(None) is True
    assert verdict(UpstreamStatus("x", status=429)) is True  # it answered
    assert verdict(UpstreamStatus("x", status=404)) is True
    assert verdict(UpstreamStatus("x", status=503)) is False
    assert verdict(BackendTimeout("t")) is False
    assert verdict(REFUSED) is False
    assert verdict(BackendOpen("o", retry_after=1)) is None
    assert verdict(KeyboardInterrupt()) is None


def test_n_failures_within_the_window_open_it() -> None:
    b, clock, told = make(failures=3, window=10, cooldown=30)
    fail(b, 2)
    clock.now += 11  # the first two fell out of the window
    fail(b, 2)
    assert b.state("ollama") == "closed" and not told
    fail(b, 1, BackendTimeout("read timeout"))
    assert b.state("ollama") == "open"
    opened = {"backend": "ollama", "failures": 3, "window": 10.0, "cooldown": 30.0, "error": "timeout"}
    assert told == [("open", {**opened, "trial": False})]
    with pytest.raises(BackendOpen) as exc:
        b.admit("ollama")
    assert exc.value.retry_after == pytest.approx(30)
    assert "3 failures in 10 s" in exc.value.message and "tried again in 30 s" in exc.value.message


def test_4xx_and_cancelled_attempts_never_open_it() -> None:
    b, _, told = make(failures=2)
    fail(b, 5, UpstreamStatus("rate limited", status=429))
    fail(b, 5, KeyboardInterrupt())
    assert b.state("ollama") == "closed" and not told


def test_one_trial_after_the_cool_down_success_closes() -> None:
    b, clock, told = make(failures=1, cooldown=30)
    fail(b, 1, UpstreamStatus("x", status=500))
    clock.now += 30
    assert b.state("ollama") == "half_open"
    assert b.admit("ollama") is True  # the trial
    with pytest.raises(BackendOpen, match="a trial request is in flight"):
        b.admit("ollama")
    b.ended("ollama", None, trial=True)
    assert b.state("ollama") == "closed"
    assert told[-1] == ("closed", {"backend": "ollama", "by": "request", "open_s": 30.0})
    assert b.admit("ollama") is False
    assert b.health()["ollama"]["failures"] == 0


def test_a_failed_trial_opens_it_for_another_cool_down() -> None:
    b, clock, told = make(failures=1, cooldown=30)
    fail(b, 1)
    clock.now += 31
    fail(b, 1)  # the trial
    assert [k for k, _ in told] == ["open", "open"]
    assert told[-1][1]["trial"] is True and told[-1][1]["error"] == "connection refused"
    with pytest.raises(BackendOpen):
        b.admit("ollama")
    clock.now += 29
    with pytest.raises(BackendOpen):
        b.admit("ollama")


def test_a_trial_the_client_abandoned_goes_to_the_next_request() -> None:
    b, clock, _ = make(failures=1, cooldown=5)
    fail(b, 1)
    clock.now += 5
    assert b.admit("ollama") is True
    b.ended("ollama", KeyboardInterrupt(), trial=True)
    assert b.admit("ollama") is True


def test_stragglers_admitted_before_it_opened_change_nothing() -> None:
    b, clock, told = make(failures=1, cooldown=5)
    assert b.admit("ollama") is False  # a slow request on its way
    fail(b, 1)
    b.ended("ollama", None)  # the slow one answered: not the trial
    assert b.state("ollama") == "open"
    clock.now += 5
    trial = b.admit("ollama")
    b.ended("ollama", REFUSED)  # another straggler failing during the trial
    b.ended("ollama", None, trial=trial)
    assert [k for k, _ in told] == ["open", "closed"]


def test_the_probe_closes_it_only_after_the_cool_down() -> None:
    b, clock, told = make(failures=1, cooldown=15)
    fail(b, 1)
    b.probed("ollama")
    assert b.state("ollama") == "open"
    clock.now += 15
    b.probed("ollama")
    assert b.state("ollama") == "closed" and told[-1][1]["by"] == "probe"


def test_health_and_a_backend_without_a_breaker() -> None:
    b, clock, _ = make(failures=2, cooldown=30)
    fail(b, 2)
    clock.now += 10
    h = b.health()
    assert set(h) == {"ollama"}
    assert h["ollama"] == {
        "state": "open",
        "failures": 2,
        "threshold": 2,
        "window": 60.0,
        "cooldown": 30.0,
        "opened_at": 1.7e9,
        "retry_in": 20.0,
        "last_error": "connection refused",
        "last_attempt": "failed",
    }
    for _ in range(10):
        assert b.admit("off") is False
        b.ended("off", REFUSED)
    assert b.state("off") is None and b.state("nobody") is None


def test_the_last_attempt_says_whether_a_closed_breaker_is_failing_now() -> None:
    """A closed breaker counts a failure for its whole window, a success after it included:
    `last_attempt` says how the last attempt ended (what `glider doctor` shows as the state)."""
    b, _, _ = make(failures=5)
    assert b.health()["ollama"]["last_attempt"] is None
    fail(b, 2)
    assert (b.health()["ollama"]["failures"], b.health()["ollama"]["last_attempt"]) == (2, "failed")
    b.ended("ollama", None)
    assert (b.health()["ollama"]["failures"], b.health()["ollama"]["last_attempt"]) == (2, "ok")
