"""The supervisor: one script worker process, kept alive, bounded in time, replaced when it fails.

Contract (see the package docstring for what it guarantees):
- `load(source, filename)` compiles a script in the worker (under `LOAD_DEADLINE_S`) and returns its
  id, or raises LoadFailed with a Diagnostic; the supervisor keeps the source, so a replacement
  worker loads every live script again before it takes calls. `forget(id)` drops one (safe from a
  finalizer: it only queues the id).
- `check(source, filename)` loads without keeping: the Diagnostics (empty when the script is fine).
- `call(ids, payload)` evaluates the scripts in order on one request (see sandbox.starlark_eval) and
  returns their ScriptOutcomes. It waits at most the scripts' deadlines plus `GRACE_S`: for the
  lock (another thread's call), for a restarting worker, and for the answer. A worker that has not
  answered by then is killed and replaced; the script it was running (read from the progress
  board) gets the reason, the scripts before it keep theirs.
- Thread-safe; one call at a time per Sandbox. After `os.fork` the child starts its own worker.
- After the first death a second, idle worker is kept started in reserve: the next replacement takes
  calls as soon as it has loaded the live scripts, with no interpreter start in the way.
- A worker that keeps dying before it is ready is retried with a growing pause (at most 30 s), so a
  broken installation does not spawn a process per request; calls meanwhile say why.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import itertools
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from glider_cli.sandbox import wire
from glider_cli.sandbox.process import WorkerProcess, death_reason
from glider_cli.sandbox.results import Diagnostic, LoadFailed, ScriptOutcome

DEFAULT_DEADLINE_S = 0.05
LOAD_DEADLINE_S = 1.0
GRACE_S = 0.05
MEMORY_MB = 256
START_TIMEOUT_S = 10.0
# How long a call waits for its reply without sleeping: the default profile's scripts answer in
# well under this, and a blocked wait would add this process's wake-up to every decision.
REPLY_SPIN_S = 0.0005


class Sandbox:
    """See the module contract."""

    def __init__(
        self,
        *,
        memory_mb: int = MEMORY_MB,
        grace_s: float = GRACE_S,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.memory_mb = memory_mb
        self.grace_s = grace_s
        self.start_timeout_s = start_timeout_s
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._spare: WorkerProcess | None = None
        self._sources: dict[int, tuple[str, str, float, float]] = {}
        self._ids = itertools.count(1)
        self._forgotten: collections.deque[int] = collections.deque()
        # Per tuple of ids: (the call's time limit, its CALL header line), computed once.
        self._plans: dict[tuple[int, ...], tuple[float, bytes]] = {}
        self._ended: list[subprocess.Popen[bytes]] = []
        self._pid = os.getpid()
        self._failed_starts = 0
        self._retry_at = 0.0
        self.restarts = 0
        self.last_failure: str | None = None

    # -- the worker's life -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker now without waiting for it, so it is ready by the first load."""
        with self._lock:
            self._ensure()

    def close(self) -> None:
        """End the worker: end of file on its pipe (a worker still starting is killed), reaped."""
        with self._lock:
            w, self._worker = self._worker, None
            spare, self._spare = self._spare, None
            if self._pid != os.getpid():
                return
            if spare is not None:
                spare.stop()
                spare.returncode(1.0)
                spare.release()
            if w is None:
                return
            if not w.hello:
                w.stop()
            elif w.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    w.proc.stdin.close()
            if w.returncode(0.2) is None:
                w.stop()
                w.returncode(1.0)
            w.release()

    def _ensure(self) -> WorkerProcess | None:
        """The live worker, or a new one (not necessarily ready); None while starts are paused."""
        if self._pid != os.getpid():  # forked: those workers belong to the parent process
            self._pid, self._worker, self._spare, self._ended = os.getpid(), None, None, []
        self._ended = [p for p in self._ended if p.poll() is None]
        w = self._worker
        if w is not None:
            self._drop_forgotten(w)
            if w.alive and (w.ready or time.monotonic() - w.started < self.start_timeout_s):
                return w
            self._discard(w, self._too_slow() if w.alive else None)
        if time.monotonic() < self._retry_at:
            return None
        self._forgotten_all()
        w = self._take_spare()
        if w is None:
            try:
                w = WorkerProcess(self.memory_mb)
            except OSError as exc:
                self._note_failure(f"the script worker did not start ({exc})", started=False)
                return None
        for sid, (source, filename, deadline, load_s) in self._sources.items():
            body = {"id": sid, "source": source, "filename": filename, "deadline": deadline, "load": load_s}
            w.reloads[w.request(wire.LOAD, orjson.dumps(body))] = sid
        self._worker = w
        if self.restarts and not self._failed_starts and self._spare is None:
            # A worker has died once: keep a started one in reserve, so the next death costs no start.
            with contextlib.suppress(OSError):
                self._spare = WorkerProcess(self.memory_mb)
        return w

    def _take_spare(self) -> WorkerProcess | None:
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.proc.poll() is not None:
            spare.release()
            return None
        spare.put_to_work()
        return spare

    def _discard(self, w: WorkerProcess, reason: str | None, *, wait_s: float = 0.05) -> str:
        """Stop and forget worker `w`; returns why it ended (for the trace)."""
        if reason is None:
            reason = death_reason(w.returncode(wait_s), self.memory_mb, started=w.hello)
        w.stop()
        self._ended.append(w.proc)
        w.release()
        if self._worker is w:
            self._worker = None
        self.restarts += 1
        self._note_failure(reason, started=w.hello)
        return reason

    def _too_slow(self) -> str:
        return f"the script worker did not start within {self.start_timeout_s:.0f} s"

    def _note_failure(self, reason: str, *, started: bool) -> None:
        self.last_failure = reason
        self._failed_starts = 0 if started else self._failed_starts + 1
        if self._failed_starts >= 3:
            self._retry_at = time.monotonic() + min(2.0**self._failed_starts, 30.0)

    def _drop_forgotten(self, w: WorkerProcess) -> None:
        gone: list[int] = []
        while self._forgotten:
            sid = self._forgotten.popleft()
            self._sources.pop(sid, None)
            self._plans = {k: v for k, v in self._plans.items() if sid not in k}
            if sid in w.loaded or sid in w.reloads.values():
                w.loaded.discard(sid)
                gone.append(sid)
        if gone:
            w.request(wire.DROP, orjson.dumps({"ids": gone}))

    def _forgotten_all(self) -> None:
        while self._forgotten:
            sid = self._forgotten.popleft()
            self._sources.pop(sid, None)
            self._plans = {k: v for k, v in self._plans.items() if sid not in k}

    def forget(self, sid: int) -> None:
        """Drop script `sid` at the next opportunity (no lock: finalizers call this)."""
        self._forgotten.append(sid)

    @contextlib.contextmanager
    def _held(self, timeout: float) -> Iterator[bool]:
        got = self._lock.acquire(timeout=max(timeout, 0.0))
        try:
            yield got
        finally:
            if got:
                self._lock.release()

    # -- loading and checking ----------------------------------------------------------------------

    def _ask(self, kind: int, body: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """One LOAD or CHECK answered, or raise LoadFailed saying why not (caller holds the lock)."""
        w = self._ensure()
        if w is None:
            raise LoadFailed(Diagnostic(1, 1, self.last_failure or "the script worker is not available"))
        if not w.pump(time.monotonic() + self.start_timeout_s, lambda: w.ready):
            raise LoadFailed(Diagnostic(1, 1, self._discard(w, self._too_slow() if w.alive else None)))
        seq = w.request(kind, orjson.dumps(body))
        if w.pump(time.monotonic() + limit_s + self.grace_s, lambda: seq in w.replies):
            reply = orjson.loads(w.replies.pop(seq))
            assert isinstance(reply, dict)
            return reply
        late = f"loading took longer than {limit_s * 1000:.0f} ms" if w.alive else None
        reason = self._discard(w, late)
        self._ensure()
        raise LoadFailed(Diagnostic(1, 1, reason if late else f"{reason} while loading"))

    def load(
        self,
        source: str,
        filename: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        load_s: float = LOAD_DEADLINE_S,
    ) -> int:
        """Compile a script in the worker; its id for `call`. Raises LoadFailed."""
        with self._held(self.start_timeout_s) as got:
            if not got:
                raise LoadFailed(Diagnostic(1, 1, "the script worker stayed busy"))
            sid = next(self._ids)
            body = {"id": sid, "source": source, "filename": filename, "deadline": deadline_s, "load": load_s}
            reply = self._ask(wire.LOAD, body, load_s)
            if not reply.get("ok"):
                raise LoadFailed(Diagnostic.from_dict(reply.get("diagnostic")))
            self._sources[sid] = (source, filename, deadline_s, load_s)
            if self._worker is not None:
                self._worker.loaded.add(sid)
            return sid

    def check(self, source: str, filename: str, *, load_s: float = LOAD_DEADLINE_S) -> list[Diagnostic]:
        """Every problem that stops the script from loading (empty when it is fine)."""
        with self._held(self.start_timeout_s) as got:
            if not got:
                return [Diagnostic(1, 1, "the script checker stayed busy")]
            try:
                reply = self._ask(
                    wire.CHECK, {"source": source, "filename": filename, "load": load_s}, load_s
                )
            except LoadFailed as exc:
                return [exc.diagnostic]
            diags = reply.get("diagnostics")
            return [Diagnostic.from_dict(d) for d in diags] if isinstance(diags, list) else []

    # -- calling -----------------------------------------------------------------------------------

    def call(self, ids: Sequence[int], payload: str) -> list[ScriptOutcome]:
        """Evaluate scripts `ids` in order on one request (see the module contract)."""
        ids = tuple(ids)
        plan = self._plans.get(ids)
        if plan is None:
            sources = self._sources
            budget = sum(sources[s][2] if s in sources else DEFAULT_DEADLINE_S for s in ids)
            plan = self._plans[ids] = (budget + self.grace_s, orjson.dumps({"ids": ids}) + b"\n")
        # The lock wait, a restarting worker and the answer all come out of the same budget.
        limit, head = plan
        if len(payload) > wire.MAX_BODY // 4:  # up to 4 bytes a character once encoded
            return _all(ids, f"not evaluated: the request is larger than {wire.MAX_BODY >> 22} MiB of text")
        hard = time.monotonic() + limit
        if not self._lock.acquire(False) and not self._lock.acquire(timeout=limit):
            return _all(ids, "not evaluated: the script worker stayed busy past the deadline")
        try:
            return self._call(ids, head + payload.encode(), hard)
        finally:
            self._lock.release()

    def _call(self, ids: tuple[int, ...], body: bytes, hard: float) -> list[ScriptOutcome]:
        sources = self._sources
        w = self._worker
        if w is None or not w.ready or not w.alive or self._forgotten or self._pid != os.getpid():
            w = self._ensure()
        if w is None:
            return _all(ids, f"not evaluated: {self.last_failure or 'the script worker is not available'}")
        if not w.ready and not w.pump(hard, lambda: w.ready):
            if w.alive:
                return _all(ids, "not evaluated: the script worker is restarting")
            return _all(ids, f"not evaluated: {self._discard(w, None)}")
        if not w.loaded.issuperset(ids):
            missing = [s for s in ids if s not in w.loaded]
            why = w.broken.get(missing[0], "is not loaded in the script worker")
            return _all(ids, f"not evaluated: script {sources.get(missing[0], ('', '?'))[1]} {why}")
        seq = w.request(wire.CALL, body)
        if w.pump(hard, lambda: seq in w.replies, spin_s=REPLY_SPIN_S):
            w.partials.pop(seq, None)
            return _outcomes(w.replies.pop(seq), len(ids))
        index = w.progress(seq)
        parts = w.partials.pop(seq, {})
        late = None
        if w.alive:
            limit = sources[ids[index]][2] if ids[index] in sources else DEFAULT_DEADLINE_S
            late = f"stopped after {limit * 1000:.0f} ms (the script worker was stopped and restarted)"
        reason = self._discard(w, late, wait_s=hard - time.monotonic())
        if late is None:
            reason += "; the worker was restarted"
        self._ensure()
        out = [
            ScriptOutcome.from_dict(parts[i]) if i in parts else ScriptOutcome(False) for i in range(index)
        ]
        out.append(ScriptOutcome(False, error=reason))
        return out


def _all(ids: tuple[int, ...], error: str) -> list[ScriptOutcome]:
    return [ScriptOutcome(False, error=error) for _ in ids]


# Replies repeat (most calls: every script returned None), and outcomes without an action are
# immutable: the same reply bytes give the same list, parsed once.
_SEEN: dict[tuple[int, bytes], tuple[ScriptOutcome, ...]] = {}


def _outcomes(body: bytes, n: int) -> list[ScriptOutcome]:
    seen = _SEEN.get((n, body))
    if seen is not None:
        return list(seen)
    out = _parse_outcomes(body, n)
    if len(_SEEN) < 256 and all(o.action is None for o in out):
        _SEEN[n, body] = tuple(out)
    return out


def _parse_outcomes(body: bytes, n: int) -> list[ScriptOutcome]:
    try:
        raw = orjson.loads(body).get("outcomes")
    except (orjson.JSONDecodeError, AttributeError):
        raw = None
    if not isinstance(raw, list) or not raw or len(raw) > n:
        return [ScriptOutcome(False, error="the script worker sent a malformed reply")] * n
    return [ScriptOutcome.from_dict(o) for o in raw]


@functools.cache
def routing_sandbox() -> Sandbox:
    """The process's sandbox for routing decisions (started on first use, ended at exit)."""
    box = Sandbox()
    atexit.register(box.close)
    return box


@functools.cache
def checking_sandbox() -> Sandbox:
    """The process's sandbox for `glider lint` and the playground, apart from routing's."""
    box = Sandbox()
    atexit.register(box.close)
    return box
