"""Why a delegate run is stopped before it ends, and the signals that stop it.

    stop = Stop()                       # a threading.Event that says who set it
    with on_signals(stop):              # SIGINT, SIGTERM, SIGHUP set it (main thread only)
        operations.delegate(..., cancel=stop)
    stop.by                             # "SIGINT" | "SIGTERM" | "SIGHUP" | "client_left" | None
    stop.exit_code                      # 130, 143, 129 as shells expect (None: not a signal)

The runner (`delegate.runner`) watches the event and ends the run's whole process tree; a plain
`threading.Event` set by the proxy when the client left reads as `CLIENT_LEFT`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CLIENT_LEFT = "client_left"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_SAID = {
    CLIENT_LEFT: "the client that asked for it went away",
    "SIGINT": "Ctrl-C (SIGINT)",
    "SIGTERM": "Glider was told to terminate (SIGTERM)",
    "SIGHUP": "the terminal was closed (SIGHUP)",
}


class Stop(threading.Event):
    """An Event that keeps the first reason it was set for (`by`)."""

    def __init__(self) -> None:
        super().__init__()
        self._by: str | None = None

    def stop(self, by: str) -> None:
        if self._by is None:
            self._by = by
        self.set()

    @property
    def by(self) -> str | None:
        return self._by if self._by is not None else (CLIENT_LEFT if self.is_set() else None)

    @property
    def exit_code(self) -> int | None:
        """128 + the signal's number, as a shell reports a process a signal ended."""
        by = self.by
        return 128 + int(signal.Signals[by]) if by is not None and by.startswith("SIG") else None


def reason(cancel: threading.Event) -> str:
    """Who stopped the run (`Stop.by`); a plain Event is the proxy's: the client left."""
    by = cancel.by if isinstance(cancel, Stop) else None
    return by or CLIENT_LEFT


def said(by: str) -> str:
    """`reason` in words, for the run's outcome and the terminal."""
    return _SAID.get(by, by)


@contextmanager
def on_signals(stop: Stop) -> Iterator[None]:
    """While inside: SIGINT, SIGTERM and SIGHUP set `stop` (the run ends its tree and returns) instead
    of ending Glider at once; the previous handlers are back on leaving."""

    def handler(signum: int, frame: object) -> None:
        stop.stop(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
