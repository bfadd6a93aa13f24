"""The local answer of a Cursor run decided local (part of `cursor.runs.CursorRuns`, see its
contract): the local backend starts at once; a turn that offers tools, on a backend that can call
them, runs Glider's agent loop (`cursor.agent_loop`), any other streams the model's text into the
run's `pieces`. The first output settles the run local (its held appends answered here); a failure
before it falls back to Cursor, or with `fallback: none` settles the run `local_failed` and records
it. `_close_local` records a local run's outcome once (the Served the turn closes with)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.agent_loop import AgentLoop
from glider_cli.errors import BackendError
from glider_cli.turns.lifecycle import Opened

if TYPE_CHECKING:
    from glider_cli.cursor.runs import Run


class LocalAnswer:
    adapter: CursorAdapter
    max_steps: int
    deadline: float
    shell_timeout: float

    # CursorRuns's own: a run's next phase (answers what it held), and its handing over to Cursor.
    _settle: Callable[[Run, str], None]
    _to_origin: Callable[[Run], Awaitable[None]]

    async def _produce(self, run: Run, opened: Opened) -> None:
        assert run.first is not None
        backend = self.adapter.local_backend(opened)
        run.fallback = self.adapter.fallback_allowed(opened, backend)
        started = time.perf_counter()
        got = False

        def first() -> None:
            nonlocal got
            if not got:
                got = True
                self._settle(run, "local")
                assert run.first is not None
                run.first.set_result(None)

        try:
            if opened.chat.tool_names and self.adapter.can_call_tools(backend):
                run.loop = AgentLoop(
                    self.adapter,
                    opened,
                    backend,
                    run.text,
                    out=run.pieces,
                    first=first,
                    max_steps=self.max_steps,
                    deadline=self.deadline,
                    request_id=run.rid,
                    shell_timeout=self.shell_timeout,
                )
                try:
                    await run.loop.run()
                finally:
                    run.usage.input_tokens = run.loop.input_tokens or run.usage.input_tokens
                    run.usage.output_tokens = run.loop.output_tokens or run.usage.output_tokens
                return
            async for piece in self.adapter.local_text(opened, backend, run.text, run.usage):
                first()
                run.pieces.put_nowait(piece)
            first()
            run.pieces.put_nowait(None)
        except BackendError as exc:
            run.error = exc
            if not got:
                self.adapter.failed(opened, backend, exc, run.fallback)
                if run.fallback:
                    run.fallback_from = backend.name
                    await self._to_origin(run)
                else:
                    self._settle(run, "local_failed")
                    self._close_local(run, opened, 502, started, complete=False)
                if not run.first.done():
                    run.first.set_result(None)
            run.pieces.put_nowait(None)
        except asyncio.CancelledError:
            run.pieces.put_nowait(None)
            raise

    def _close_local(
        self, run: Run, opened: Opened, status: int, started: float, *, complete: bool, gone: bool = False
    ) -> None:
        if run.closed:
            return
        run.closed = True
        ms = (time.perf_counter() - started) * 1000
        served = self.adapter.served_local(
            opened, run.usage, status, ms, complete=complete, answered=status < 400, disconnected=gone
        )
        self.adapter.close(opened, served)
