"""The local answer of a Cursor run decided local: made by the local backend, streamed as Cursor's
frames (on a RunSSE, or on the HTTP/2 `Run` stream itself).

`LocalAnswer(adapter, heartbeat=, max_steps=, deadline=, shell_timeout=)`:
- `produce(run)` (the run's producer task): the local backend starts at once; a turn that offers
  tools, on a backend that can call them, runs Glider's agent loop (`cursor.agent_loop`: at most
  `max_steps` model calls within `deadline` seconds), any other streams the model's text into the
  run's `pieces`. The first output settles the run local (`Run.first_output`: its held appends
  answered here); a failure before it falls back to Cursor (`Run.to_origin`), or with `fallback:
  none` settles the run `local_failed` and records it.
- `stream(run, fallback)`: the answer's frames: heartbeats (every `heartbeat` seconds) until the run
  settles and while the model or a tool runs, then its text (with token deltas) and the agent loop's
  frames, then `turn_ended` and the end of the stream (an end-of-stream error when the backend failed
  after its first output). Settled at Cursor instead (a failure before the first output):
  `fallback(end)` answers (Cursor's answer, its outcome recorded through `end`); settled
  `local_failed`: an end-of-stream error. Its end records the run's outcome (once) and stops the
  model's work when the client left early.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

from glider_cli.config.cursor import MAX_STEPS, SHELL_TIMEOUT, TURN_DEADLINE
from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.agent_loop import AgentLoop
from glider_cli.cursor.front import HttpResponse
from glider_cli.cursor.run import End, Run
from glider_cli.errors import BackendError
from glider_cli.protocol.cursor import writers as w

Fallback = Callable[[End], Awaitable[HttpResponse]]


class LocalAnswer:
    def __init__(
        self,
        adapter: CursorAdapter,
        *,
        heartbeat: float = 3.0,
        max_steps: int = MAX_STEPS,
        deadline: float = TURN_DEADLINE,
        shell_timeout: float = SHELL_TIMEOUT,
    ) -> None:
        self.adapter = adapter
        self.heartbeat = heartbeat
        self.max_steps = max_steps
        self.deadline = deadline
        self.shell_timeout = shell_timeout

    async def produce(self, run: Run) -> None:
        opened = run.opened
        assert opened is not None
        backend = self.adapter.local_backend(opened)
        fallback = self.adapter.fallback_allowed(opened, backend)
        started = time.perf_counter()
        got = False

        def first() -> None:
            nonlocal got
            if not got:
                got = True
                run.first_output()

        try:
            if opened.chat.tool_names and self.adapter.can_call_tools(backend):
                loop = AgentLoop(
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
                run.looping(loop)
                try:
                    await loop.run()
                finally:
                    run.loop_ended()
                return
            async for piece in self.adapter.local_text(opened, backend, run.text, run.usage):
                first()
                run.pieces.put_nowait(piece)
            first()
            run.pieces.put_nowait(None)
        except BackendError as exc:
            run.failed(exc)
            if not got:
                self.adapter.failed(opened, backend, exc, fallback)
                if fallback:
                    run.fell_back(backend.name)
                    await run.to_origin()
                else:
                    run.failed_local()
                    run.close_local(502, started, complete=False)
            run.pieces.put_nowait(None)
        except asyncio.CancelledError:
            run.pieces.put_nowait(None)
            raise

    async def stream(self, run: Run, fallback: Fallback) -> AsyncGenerator[bytes, None]:
        """The answer of a run decided local, frame by frame (see the module contract)."""
        assert run.opened is not None
        started = time.perf_counter()
        ours = True  # this stream's outcome is recorded here (not by a fallback's relay or the producer)
        complete = False
        try:
            while not run.settled:
                if await run.settled_within(self.heartbeat):
                    break
                yield w.heartbeat()
            if run.phase in ("origin", "local_failed"):
                ours = False
            if run.phase == "origin":  # the local backend failed before its first byte: Cursor answers
                resp = await fallback(run.origin_end())
                if resp.stream is None or resp.status != 200:
                    yield w.end_stream({"code": "unavailable", "message": f"Cursor answered {resp.status}"})
                    return
                async for chunk in resp.stream:
                    yield chunk
                return
            if run.phase == "local_failed":
                message = run.error.message if run.error is not None else "the local backend failed"
                yield w.end_stream({"code": "unavailable", "message": f"glider: {message} (fallback: none)"})
                return
            out = 0
            while True:
                try:  # a heartbeat while the model or a tool runs
                    piece = await asyncio.wait_for(run.pieces.get(), self.heartbeat)
                except TimeoutError:
                    yield w.heartbeat()
                    continue
                if piece is None:
                    break
                if isinstance(piece, bytes):
                    yield piece
                    continue
                out += w.tokens_for(piece)
                yield w.text_delta(piece) + w.token_delta(w.tokens_for(piece))
            if run.error is not None:
                yield w.end_stream({"code": "internal", "message": f"glider: {run.error.message}"})
            else:
                input_tokens, output_tokens = run.tokens()
                yield w.turn_ended(input_tokens, output_tokens or out)
                yield w.end_stream()
                complete = True
        finally:
            if ours:
                gone = not complete and run.error is None
                run.stop()  # the client left: stop the local model's work
                if run.phase == "local_wait":  # left before the first text: answer the held appends
                    run.first_output()
                status = 200 if run.error is None else 502
                run.close_local(status, started, complete=complete, gone=gone)
