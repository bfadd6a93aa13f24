"""Glider's own scripts (the bundled profiles'), evaluated in this process: no worker, no pipe.

Contract:
- The same interface as `supervisor.Sandbox` (`load`, `check`, `call`, `forget`, `start`, `close`),
  so `router.scripts.Script` takes either; `call` returns one ScriptOutcome per script evaluated,
  never raises, and keeps each script's deadline (the interpreter's cancel hook) and call-stack limit.
- Only for the scripts that ship in the wheel (`Trigger.bundled`) that `sandbox.native` cannot
  evaluate as Python (a script that uses `struct`, `fail`, `json`...): they are Glider's own code
  and bounded by what they are (a look at the last message). User scripts go to the supervised worker,
  which adds what only a process boundary gives (a memory cap, crash isolation, a kill).
- Thread-safe: one call at a time (the interpreter's state is shared by the loaded scripts).

Why: a pipe round trip to the worker costs more than the whole decision, and far more when the
worker has gone to sleep between requests seconds apart (issue 29).
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from glider_cli.sandbox import wire
from glider_cli.sandbox.results import NO_MATCH, Diagnostic, LoadFailed, ScriptOutcome

if TYPE_CHECKING:
    from glider_cli.sandbox.starlark_eval import Evaluator

_NONE = ScriptOutcome(False)

DEFAULT_DEADLINE_S = 0.05
LOAD_DEADLINE_S = 1.0


class InProcessSandbox:
    """See the module contract."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine: Evaluator | None = None
        self._ids = itertools.count(1)
        self._forgotten: list[int] = []

    def _get(self) -> Evaluator:
        """The engine, with the scripts forgotten since the last use dropped (caller holds the lock)."""
        if self._engine is None:
            from glider_cli.sandbox.starlark_eval import Evaluator

            self._engine = Evaluator()
        if self._forgotten:
            gone, self._forgotten[:] = list(self._forgotten), []
            self._engine.drop(gone)
        return self._engine

    def start(self) -> None:
        """Nothing to start: the interpreter is this process."""

    def close(self) -> None:
        """Nothing to end."""

    def forget(self, sid: int) -> None:
        """Drop script `sid` at the next use (no lock: finalizers call this, maybe during a call)."""
        self._forgotten.append(sid)

    def load(
        self,
        source: str,
        filename: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        load_s: float = LOAD_DEADLINE_S,
    ) -> int:
        with self._lock:
            sid = next(self._ids)
            reply = self._get().load(sid, source, filename, deadline_s, load_s)
        if not reply.get("ok"):
            raise LoadFailed(Diagnostic.from_dict(reply.get("diagnostic")))
        return sid

    def check(self, source: str, filename: str, *, load_s: float = LOAD_DEADLINE_S) -> list[Diagnostic]:
        with self._lock:
            reply = self._get().check(source, filename, load_s)
        diags = reply.get("diagnostics")
        return [Diagnostic.from_dict(d) for d in diags] if isinstance(diags, list) else []

    def call(self, ids: Sequence[int], payload: str) -> list[ScriptOutcome]:
        ids = tuple(ids)
        if len(payload) > wire.MAX_BODY // 4:  # the worker's limit, kept so both behave alike
            error = f"not evaluated: the request is larger than {wire.MAX_BODY >> 22} MiB of text"
            return [ScriptOutcome(False, error=error) for _ in ids]
        with self._lock:
            raw = self._get().call(ids, payload, _ignore)
        # Most outcomes are the engine's shared no-match: one immutable ScriptOutcome for them.
        return [_NONE if o is NO_MATCH else ScriptOutcome.from_dict(o) for o in raw]


def _ignore(index: int, outcome: object) -> None:
    """Partial outcomes matter only when a worker can die mid-call; here the call always returns."""


@functools.cache
def bundled_sandbox() -> InProcessSandbox:
    """The process's evaluator of the bundled profiles' scripts."""
    return InProcessSandbox()
