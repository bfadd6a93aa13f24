"""`glider serve`'s side of delegation: record user turns, run in-message `/claude` `/cursor-agent` `/agy`.

Contract (the calls `delegate.operations` documents for the proxy):
- `record(chat)`: every new user turn whose client names a workspace is appended to that workspace's
  continuity record, flagged or not; a delegate run's own request (`x-glider-delegate-of`, which the
  delegate CLI gets from `begin`) is not a user turn and is not recorded. The file work (a lock,
  milliseconds) runs on a worker thread and the request never waits for it.
- `begin(chat, flag, turn_id) -> proxy.delegate_reply.Running`: the delegate the flag names runs
  (its environment marks its own requests as the run's: `turns.turn_keys.delegate_env`) on a
  worker thread (it blocks for the whole run, and stops when the Running is cancelled); its
  reply text (or `[vendor failed] …` with the vendor's own reason) is what the client gets as an
  ordinary assistant message, sent as `delegate_reply.reply` describes. `run(...)` awaits that text.
  A client that names no workspace gets a reply saying so; nothing runs.
- Permission relay (`delegate.permissions`): what a run's CLI refused is in its reply with a one-shot
  token (`grants`, in memory, 10 minutes). `answer(chat, turn_id)`: a new user turn whose typed text
  (`router.triggers.typed_text`, as for every command) says `/allow <token>` resumes that run with
  exactly what was refused allowed (`delegate.allow_deny.allow`), `/deny <token>` records the decision and
  runs nothing; an unknown, used or expired token is said so. None when the text says neither.
- The lifespan calls `start()` (the background compaction worker) and `close()`.
Events from these calls go to the thread-safe sink given here (the EventWriter), not the loop-only one.
- Start-up cost: `delegate.operations`, `delegate.allow_deny`, `delegate.permissions` and the compaction
  worker are imported and built when a turn first needs them (a turn from a client that names a
  workspace, a delegate flag, `/allow` or `/deny`), not when `glider serve` starts (issue 29).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from glider_cli.delegate import workspace as ws
from glider_cli.domain import ChatRequest, EventSink
from glider_cli.paths import Paths
from glider_cli.proxy.delegate_reply import Running
from glider_cli.store.eventlog.events import CONTINUITY_WRITE_FAILED
from glider_cli.turns import turn_keys

if TYPE_CHECKING:
    from glider_cli.config.settings import Settings
    from glider_cli.delegate.compaction import Compactor
    from glider_cli.delegate.permissions import Grants


class Delegation:
    def __init__(
        self, paths: Paths, settings: Settings, environ: Mapping[str, str], events: EventSink
    ) -> None:
        self.paths = paths
        self.settings = settings
        self.environ = dict(environ)
        self.events = events
        self.compactor: Compactor | None = None
        self._pending: set[asyncio.Future[Any]] = set()
        self._grants: Grants | None = None
        self._started = False
        self._making = threading.Lock()

    @property
    def grants(self) -> Grants:
        """The one-shot permission tokens (`delegate.permissions.Grants`), made on first use."""
        if self._grants is None:
            from glider_cli.delegate.permissions import Grants

            self._grants = Grants()
        return self._grants

    def start(self) -> None:
        """From now on the compaction worker exists: built when a turn first needs it."""
        self._started = True

    def _compactor(self) -> Compactor | None:
        """The compaction worker, made by the first turn recorded (on a worker thread: one made, not
        two, when two turns are recorded at once)."""
        with self._making:
            if self.compactor is None and self._started:
                from glider_cli.delegate import operations

                self.compactor = operations.make_compactor(
                    self.paths, self.settings, environ=self.environ, events=self.events
                )
            return self.compactor

    async def close(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        self._started = False
        if self.compactor is not None:
            self.compactor.close()
            self.compactor = None

    def record(self, chat: ChatRequest) -> None:
        """A new turn that names its workspace goes into the continuity record, on a worker thread:
        there the workspace is normalised (a few `stat` calls), `delegate.operations` imported (~25 ms,
        the first time: the event loop would stall on it, every request with it) and the turn
        written. Only reading the workspace out of the request's texts happens here."""
        named = ws.named_in(chat)
        if named is None or turn_keys.delegate_of(chat.headers):
            return
        work = partial(self._record_turn, named, chat.last_user_text, ws.client_name(chat.headers))
        fut = asyncio.get_running_loop().run_in_executor(None, work)
        self._pending.add(fut)
        fut.add_done_callback(self._done)

    def _record_turn(self, named: str, text: str, client: str) -> None:
        from glider_cli.delegate import operations

        workspace = ws.normalise(named)
        compactor = self._compactor()
        operations.record_turn(
            self.paths,
            self.settings,
            workspace,
            text,
            client,
            events=self.events,
            compactor=compactor,
            environ=self.environ,
        )

    def _done(self, fut: asyncio.Future[Any]) -> None:
        self._pending.discard(fut)
        exc = None if fut.cancelled() else fut.exception()
        if exc is not None:
            self.events.emit(CONTINUITY_WRITE_FAILED, {"error": str(exc)[:500]})

    def begin(self, chat: ChatRequest, flag: str, turn_id: str | None = None) -> Running:
        loop = asyncio.get_running_loop()
        from glider_cli.delegate import operations

        running = Running(loop)
        found = operations.parse_flag(chat.last_user_text)
        task = found[1] if found else chat.last_user_text
        workspace = ws.from_request(chat)
        if workspace is None:
            running.future.set_result(
                f"[glider] {flag} needs a workspace, and this client named none "
                f"(send the `{ws.HEADER}` header, or use Claude Code / Codex from the project directory)"
            )
            return running
        work = partial(
            operations.run_flagged,
            self.paths,
            self.settings,
            flag,
            task,
            workspace,
            ws.client_name(chat.headers),
            events=self.events,
            environ=turn_keys.delegate_env(self.environ, turn_id or secrets.token_hex(8)),
            compactor=self._compactor(),
            turn_id=turn_id,
            cancel=running.stop,
            progress=running.report,
            grants=self.grants,
        )
        self._start(running, work)
        return running

    def answer(self, chat: ChatRequest, turn_id: str | None = None) -> tuple[str, Running] | None:
        """(vendor, the reply) for a `/allow <token>` or `/deny <token>` the person typed; else None."""
        text = chat.last_user_text
        if "/allow" not in text and "/deny" not in text:  # every new turn passes here: most carry neither
            return None
        from glider_cli.delegate import allow_deny, permissions
        from glider_cli.router.triggers import typed_text

        found = permissions.answer(typed_text(text))
        if found is None:
            return None
        verb, token = found
        running = Running(asyncio.get_running_loop())
        pending = self.grants.take(token)
        if pending is None:
            running.future.set_result(
                f"[glider] /{verb} {token}: no refused run waits for this token "
                "(unknown, already answered, or older than 10 minutes); nothing was allowed"
            )
            return "glider", running
        if verb == "deny":
            work: Callable[[], Any] = partial(
                allow_deny.deny, self.paths, pending, ws.client_name(chat.headers)
            )
            refused = "; ".join(r.line() for r in pending.refused)
            done = f"[glider] denied: {pending.vendor} was not allowed {refused}"
            self._start(running, work, lambda _: done)
            return pending.vendor, running
        work = partial(
            allow_deny.allow,
            self.paths,
            self.settings,
            pending,
            events=self.events,
            environ=turn_keys.delegate_env(self.environ, turn_id or secrets.token_hex(8)),
            compactor=self._compactor(),
            turn_id=turn_id,
            cancel=running.stop,
            progress=running.report,
            grants=self.grants,
        )
        self._start(running, work)
        return pending.vendor, running

    def _start(
        self, running: Running, work: Callable[[], Any], text: Callable[[Any], str] | None = None
    ) -> None:
        """`work` on a worker thread; its DelegateResult's reply (or `text(result)`) ends `running`."""
        fut = running.loop.run_in_executor(None, work)
        self._pending.add(fut)

        def finished(f: asyncio.Future[Any]) -> None:
            self._pending.discard(f)
            if running.future.done():
                return
            exc = None if f.cancelled() else f.exception()
            if exc is not None:
                running.future.set_exception(exc)
            else:
                running.future.set_result(text(f.result()) if text else f.result().reply_text())

        fut.add_done_callback(finished)

    async def run(self, chat: ChatRequest, flag: str, turn_id: str | None = None) -> str:
        return await self.begin(chat, flag, turn_id).result()
