"""The Cursor requests of an intercepted host, turn by turn (the front door's `Handler`).

One *run* is one request id: the `RunSSE` stream and the `BidiAppend`s that carry its client
messages, or (HTTP/2, `run_h2`) one `Run` stream whose first message `begin` decides the same way,
its answer `local_stream` (a local run) or Cursor's (`origin_end`, `cloud_watch` record it). Per run:
- The first append that holds a run request decides it (`adapter.CursorAdapter.open`): a new user turn by
  the rules; a follow-on, summary or subagent with the local side refused (and with stickiness
  saying so while the family is cloud-bound). A subagent is placed in its parent's conversation
  (`X-Parent-Request-Id` names the parent run). Appends and a RunSSE that arrive before that decision
  are held (the RunSSE at most `hold` seconds, then it goes to Cursor).
- Decided for Cursor: every held append is forwarded in seqno order, then the RunSSE; later ones
  as they come. The RunSSE's end records `OriginPassthrough`.
- Decided local (a new user turn only): the local backend starts at once; a turn that offers tools
  (not Cursor's ask mode) whose backend can call tools runs Glider's agent loop
  (`cursor.agent_loop`: its exec messages go out on the RunSSE, the exec answers that arrive in
  the run's appends are handed to it; at most `max_steps` model calls within `deadline` seconds).
  The appends stay held and the RunSSE is answered 200 with heartbeats until the first output
  (text or a tool call): then every append of the run (held, late, heartbeats) is answered here
  with an empty `BidiAppendResponse` and the answer streams as Cursor's frames; nothing of the run
  reaches Cursor. A failure before the first output falls back to Cursor (the held appends
  forwarded in order, then the RunSSE relayed into the open stream) unless the rule or backend says
  `fallback: none` (then an end-of-stream error). The local answer's producer is
  `cursor.local_answer`.
- `NameAgent` (a title; `cursor.titles`) is placed in the conversation whose new turn typed its
  text, else the one seen last, and decided by the rules with the family's stickiness: at Cursor
  while the family is cloud-bound; held local (a `/local` turn's title), the local model names it
  (`NameAgentResponse`) and it does not reach Cursor (a local failure falls back to Cursor unless
  `fallback: none`). Anything else, and any body that cannot be read, is relayed byte for byte.
- A RunSSE Cursor serves is relayed unchanged; each exec its server sends is recorded as a tool step
  `routing.tool_followup` would allow or deny (`cloud_steps`; a record only, Cursor's loop as is).
- A run whose RunSSE has not come `stream_wait` seconds after its decision is closed with `outcome:
  abandoned` (`cursor.abandon`); a RunSSE that comes later gets an end-of-stream error (a local
  run) or goes to Cursor unrecorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from glider_cli.config.cursor import MAX_STEPS, SHELL_TIMEOUT, STREAM_WAIT, TURN_DEADLINE
from glider_cli.cursor.abandon import Abandon
from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.agent_loop import AgentLoop
from glider_cli.cursor.cloud_steps import watch
from glider_cli.cursor.forward import relay
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.local_answer import LocalAnswer
from glider_cli.cursor.titles import Titles
from glider_cli.cursor.transports import Transports
from glider_cli.cursor.upstream import Network
from glider_cli.errors import BackendError
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.chat import to_chat
from glider_cli.protocol.cursor.classify import (
    Classified,
    classify,
    decode_append,
    rpc,
    run_sse_id,
)
from glider_cli.protocol.token_counts import Usage
from glider_cli.router.tool_policy import Policy
from glider_cli.turns.lifecycle import Opened
from glider_cli.values import replace

_PROTO = [(b"content-type", b"application/proto")]
End = Callable[[int, bool, float], None]
Fallback = Callable[[End], Awaitable[HttpResponse]]
_STREAM = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
MAX_RUNS = 1024


class Run:
    def __init__(self, rid: str) -> None:
        self.rid = rid
        self.phase = "pending"  # pending | origin | local_wait | local | local_failed | abandoned
        self.settled = asyncio.Event()  # set when the phase leaves pending / local_wait
        self.decided = asyncio.Event()  # set when the phase leaves pending
        self.held: list[tuple[int, HttpRequest, asyncio.Future[HttpResponse]]] = []
        self.opened: Opened | None = None
        self.conversation: str | None = None
        self.text = ""
        self.first: asyncio.Future[None] | None = None
        self.pieces: asyncio.Queue[str | bytes | None] = asyncio.Queue()  # text, a whole frame, the end
        self.loop: AgentLoop | None = None  # a local turn that uses tools: Glider's agent loop
        self.error: BackendError | None = None
        self.usage = Usage()
        self.cloud_usage = Usage()  # what Cursor's own updates said of a run it served (`cloud_steps`)
        self.fallback = True
        self.fallback_from: str | None = None  # the local backend Cursor took over from
        self.producer: asyncio.Task[Any] | None = None  # the local answer being read
        self.streamed = asyncio.Event()  # set when the run's RunSSE arrives
        self.closed = False  # its outcome is recorded


class CursorRuns(Titles, Abandon, LocalAnswer):
    def __init__(
        self,
        network: Network,
        adapter: CursorAdapter,
        *,
        hold: float = 10.0,
        heartbeat: float = 3.0,
        max_steps: int = MAX_STEPS,
        deadline: float = TURN_DEADLINE,
        stream_wait: float = STREAM_WAIT,
        shell_timeout: float = SHELL_TIMEOUT,
        transports: Transports | None = None,
    ) -> None:
        self.transports = transports
        self.max_steps = max_steps
        self.shell_timeout = shell_timeout
        self.stream_wait = stream_wait
        self.deadline = deadline
        self.network = network
        self.adapter = adapter
        self.hold = hold
        self.heartbeat = heartbeat
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self.last_conversation: str | None = None
        # The text of recent new user turns -> their conversation (a title request names none).
        self.asked: OrderedDict[str, str] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def handle(self, req: HttpRequest) -> HttpResponse:
        kind = rpc(req.path)
        if req.method == "POST" and kind == "append":
            return await self._append(req)
        if req.method == "POST" and kind == "run_sse":
            return await self._run_sse(req)
        if req.method == "POST" and kind == "name_agent":
            return await self._title(req)
        if req.method == "POST" and kind == "run":  # HTTP/1.1: Cursor refuses it (464)
            self.seen(req, "HTTP/1.1 Run")
        return await relay(self.network, req)

    def seen(self, req: HttpRequest, transport: str) -> None:
        """Which transport the client of `req` uses (`cursor.transports`, what `glider doctor` says)."""
        if self.transports is not None:
            self.transports.seen(req.header("x-cursor-client-type"), transport, req.host)

    def _run(self, rid: str) -> Run:
        run = self.runs.get(rid)
        if run is None:
            run = self.runs[rid] = Run(rid)
            while len(self.runs) > MAX_RUNS:
                self.runs.popitem(last=False)
        return run

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # ------------------------------------------------------------------ appends

    async def _append(self, req: HttpRequest) -> HttpResponse:
        app = decode_append(req.body, req.header("content-encoding"))
        if app is None:
            return await relay(self.network, req)
        run = self._run(app.request_id)
        if run.phase == "pending":
            info = classify(app.message, dict(req.headers))
            if not info.in_run and info.kind in ("new_turn", "follow_on", "summary", "subagent"):
                self._decide(run, info, req)
            elif info.kind == "passthrough" and app.seqno == 0:
                self._settle(run, "origin")
        if run.phase == "origin":
            return await relay(self.network, req)
        if run.phase in ("local", "local_failed", "abandoned"):
            if run.loop is not None and run.phase != "abandoned":
                run.loop.deliver(app.message)  # an exec's answer, to the loop waiting for it
            return HttpResponse(200, list(_PROTO), w.EMPTY_APPEND_RESPONSE)
        fut: asyncio.Future[HttpResponse] = asyncio.get_running_loop().create_future()
        run.held.append((app.seqno, req, fut))
        if run.phase == "pending":
            self._spawn(self._expire(run))
        return await fut

    async def _expire(self, run: Run) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run.decided.wait(), self.hold)
        if run.phase == "pending":
            await self._to_origin(run)

    def _decide(self, run: Run, info: Classified, req: HttpRequest) -> None:
        session = info.conversation_id or run.rid
        if info.kind == "subagent":
            parent = self.runs.get(req.header("x-parent-request-id") or "")
            session = parent.conversation if parent is not None and parent.conversation else session
        run.conversation = session
        if info.kind == "passthrough":
            self._settle(run, "origin")
            return
        self.last_conversation = session
        if info.kind == "new_turn" and info.text.strip():
            self.asked[info.text.strip()] = session
            while len(self.asked) > 256:
                self.asked.popitem(last=False)
        what = {"kind": info.kind, "why": info.why, "request_id": run.rid}
        local_ok = info.kind == "new_turn"
        opened = self.adapter.open(to_chat(info, session), local_ok=local_ok, what=what)
        run.opened = opened
        if opened is not None:
            self._spawn(self._watch_stream(run))
        if opened is None or opened.decision.target != "local" or not local_ok:
            self._settle(run, "origin")
            return
        run.text = info.text
        run.phase = "local_wait"
        run.decided.set()
        run.first = asyncio.get_running_loop().create_future()
        run.producer = self._spawn(self._produce(run, opened))

    def _settle(self, run: Run, phase: str) -> None:
        if phase == "origin":
            self._spawn(self._to_origin(run))
            return
        run.phase = phase
        held, run.held = run.held, []
        for _, _, fut in held:
            if not fut.done():
                fut.set_result(HttpResponse(200, list(_PROTO), w.EMPTY_APPEND_RESPONSE))
        run.decided.set()
        run.settled.set()

    async def _to_origin(self, run: Run) -> None:
        """Forward what was held, in seqno order, then let the RunSSE go to Cursor."""
        if run.phase == "origin":
            return
        run.phase = "origin"
        run.decided.set()
        while run.held:
            held, run.held = sorted(run.held, key=lambda h: h[0]), []
            for _, req, fut in held:
                resp = await relay(self.network, req)
                if not fut.done():
                    fut.set_result(resp)
        run.settled.set()

    # ------------------------------------------------------------------ RunSSE

    async def _run_sse(self, req: HttpRequest) -> HttpResponse:
        rid = run_sse_id(req.body, req.header("connect-content-encoding"))
        if rid is None:
            return await relay(self.network, req)
        self.seen(req, "HTTP/1.1 RunSSE")
        run = self._run(rid)
        if run.closed and run.phase == "abandoned":
            message = "glider: this run was abandoned (its stream did not open in time)"
            return HttpResponse(200, list(_STREAM), w.end_stream({"code": "aborted", "message": message}))
        run.streamed.set()
        if run.phase == "pending":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.decided.wait(), self.hold)
            if run.phase == "pending":
                await self._to_origin(run)
        if run.phase == "origin":
            await run.settled.wait()
            resp = await relay(self.network, req, self._origin_end(run))
            if resp.stream is not None and run.opened is not None:
                resp.stream = watch(resp.stream, self._cloud_step(run), run.cloud_usage)
            return resp
        return HttpResponse(200, list(_STREAM), stream=self.local_stream(run, self._sse_fallback(req)))

    def _sse_fallback(self, req: HttpRequest) -> Fallback:
        async def fallback(end: End) -> HttpResponse:
            return await relay(self.network, req, end)

        return fallback

    # ------------------------------------------------------------------ Run (HTTP/2)

    def begin(self, rid: str, message: bytes | None, req: HttpRequest) -> Run:
        """A run whose first client message is `message` (an HTTP/2 `Run`'s first frame; `req` its
        headers): decided as a RunSSE's first append is. The run's stream is open already."""
        run = self.runs[rid] = Run(rid)
        self.runs.move_to_end(rid)
        while len(self.runs) > MAX_RUNS:
            self.runs.popitem(last=False)
        run.streamed.set()
        info = classify(message, dict(req.headers))
        if not info.in_run and info.kind in ("new_turn", "follow_on", "summary", "subagent"):
            self._decide(run, info, req)
        if run.phase != "local_wait":
            run.phase = "origin"
            run.decided.set()
            run.settled.set()
        return run

    def origin_end(self, run: Run) -> End:
        return self._origin_end(run)

    def cloud_watch(self, run: Run, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """A stream Cursor serves for `run`, its tool steps and usage recorded (`cloud_steps`)."""
        if run.opened is None:
            return stream
        return watch(stream, self._cloud_step(run), run.cloud_usage)

    def _cloud_step(self, run: Run) -> Callable[[str, str], None]:
        """Records a tool step of Cursor's own loop as the policy would decide it (`cloud_steps`)."""
        policy = Policy(*self.adapter.tool_lists())

        def record(tool: str, member: str) -> None:
            verdict, why = policy.verdict(tool)
            data = {"side": "cloud", "applied": False, "tool": tool, "exec": member}
            data.update(decision=verdict, why=why, request_id=run.rid)
            self.adapter.tool_step(run.opened, data)

        return record

    def _origin_end(self, run: Run) -> Callable[[int, bool, float], None]:
        def end(status: int, complete: bool, ms: float) -> None:
            if run.opened is not None and not run.closed:
                run.closed = True
                served = self.adapter.served_origin(run.opened, status, ms, complete, run.fallback_from)
                got = run.cloud_usage
                served = replace(served, input_tokens=got.input_tokens, output_tokens=got.output_tokens)
                self.adapter.close(run.opened, served)

        return end

    async def local_stream(self, run: Run, fallback: Fallback) -> AsyncGenerator[bytes, None]:
        """The answer of a run decided local, frame by frame (`fallback(end)`: Cursor's answer instead,
        when the local backend failed before its first output)."""
        opened = run.opened
        assert opened is not None and run.first is not None
        started = time.perf_counter()
        ours = True  # this stream's outcome is recorded here (not by a fallback's relay or the producer)
        complete = False
        try:
            while not run.settled.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(run.settled.wait()), self.heartbeat)
                    break
                yield w.heartbeat()
            if run.phase in ("origin", "local_failed"):
                ours = False
            if run.phase == "origin":  # the local backend failed before its first byte: Cursor answers
                resp = await fallback(self._origin_end(run))
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
                usage = run.usage
                yield w.turn_ended(usage.input_tokens, usage.output_tokens or out)
                yield w.end_stream()
                complete = True
        finally:
            if ours:
                gone = not complete and run.error is None
                if run.producer is not None and not run.producer.done():
                    run.producer.cancel()  # the client left: stop the local model's work
                if run.phase == "local_wait":  # left before the first text: answer the held appends
                    self._settle(run, "local")
                status = 200 if run.error is None else 502
                self._close_local(run, opened, status, started, complete=complete, gone=gone)
