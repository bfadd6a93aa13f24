"""The Cursor requests of an intercepted host, turn by turn (the front door's `Handler`).

One *run* is one request id: the `RunSSE` stream and the `BidiAppend`s that carry its client
messages, or (HTTP/2, `run_h2`) one `Run` stream whose first message `begin` decides the same way,
its answer `local_stream` (a local run) or Cursor's (`Run.origin_end`, `cloud_watch` record it). Per run:
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
  `fallback: none` (then an end-of-stream error). The local answer is `cursor.local_answer`'s.
- `NameAgent` (a title; `cursor.titles`) is placed in the conversation whose new turn typed its
  text, else the one seen last, and decided by the rules with the family's stickiness: at Cursor
  while the family is cloud-bound; held local (a `/local` turn's title), the local model names it
  (`NameAgentResponse`) and it does not reach Cursor (a local failure falls back to Cursor unless
  `fallback: none`). Anything else, and any body that cannot be read, is relayed byte for byte.
- A RunSSE Cursor serves is relayed unchanged; each exec its server sends is recorded as a tool step
  `routing.tool_followup` would allow or deny (`cloud_steps`; a record only, Cursor's loop as is).
- A run whose RunSSE has not come `stream_wait` seconds after its decision is closed with `outcome:
  abandoned` (`cursor.run.Run.abandon_unless_streamed`); a RunSSE that comes later gets an
  end-of-stream error (a local run) or goes to Cursor unrecorded.
A run's state and its phases are `cursor.run.Run`'s; `CursorRuns` keeps the runs by id (the last
`MAX_RUNS`), decides them, and builds what answers them with the collaborators each needs: a
`titles.Titles` (network, adapter) and a `local_answer.LocalAnswer` (adapter and its limits).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from typing import Any

from glider_cli.config.cursor import MAX_STEPS, SHELL_TIMEOUT, STREAM_WAIT, TURN_DEADLINE
from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.cloud_steps import watch
from glider_cli.cursor.forward import relay
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.local_answer import Fallback, LocalAnswer
from glider_cli.cursor.run import End, Run
from glider_cli.cursor.titles import Titles
from glider_cli.cursor.transports import Transports
from glider_cli.cursor.upstream import Network
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.cursor.chat import to_chat
from glider_cli.protocol.cursor.classify import (
    Classified,
    classify,
    decode_append,
    rpc,
    run_sse_id,
)
from glider_cli.router.tool_policy import Policy

_PROTO = [(b"content-type", b"application/proto")]
_STREAM = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_DECIDED_KINDS = ("new_turn", "follow_on", "summary", "subagent")
MAX_RUNS = 1024


class CursorRuns:
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
        self.network = network
        self.adapter = adapter
        self.hold = hold
        self.stream_wait = stream_wait
        self.transports = transports
        self.titles = Titles(network, adapter)
        self.answer = LocalAnswer(
            adapter, heartbeat=heartbeat, max_steps=max_steps, deadline=deadline, shell_timeout=shell_timeout
        )
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def handle(self, req: HttpRequest) -> HttpResponse:
        kind = rpc(req.path)
        if req.method == "POST" and kind == "append":
            return await self._append(req)
        if req.method == "POST" and kind == "run_sse":
            return await self._run_sse(req)
        if req.method == "POST" and kind == "name_agent":
            return await self.titles.handle(req)
        if req.method == "POST" and kind == "run":  # HTTP/1.1: Cursor refuses it (464)
            self.seen(req, "HTTP/1.1 Run")
        return await relay(self.network, req)

    def seen(self, req: HttpRequest, transport: str) -> None:
        """Which transport the client of `req` uses (`cursor.transports`, what `glider doctor` says)."""
        if self.transports is not None:
            self.transports.seen(req.header("x-cursor-client-type"), transport, req.host)

    def _run(self, rid: str) -> Run:
        run = self._runs.get(rid)
        if run is None:
            run = self._runs[rid] = Run(rid, self.network, self.adapter)
            self._trim()
        return run

    def _trim(self) -> None:
        while len(self._runs) > MAX_RUNS:
            self._runs.popitem(last=False)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
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
            if not info.in_run and info.kind in _DECIDED_KINDS:
                self._decide(run, info, req)
            elif info.kind == "passthrough" and app.seqno == 0:
                self._spawn(run.to_origin())
        if run.phase == "origin":
            return await relay(self.network, req)
        if run.phase in ("local", "local_failed", "abandoned"):
            run.deliver(app.message)  # an exec's answer, to the loop waiting for it
            return HttpResponse(200, list(_PROTO), w.EMPTY_APPEND_RESPONSE)
        held = run.hold(app.seqno, req)
        if run.phase == "pending":
            self._spawn(run.origin_unless_decided(self.hold))
        return await held

    def _decide(self, run: Run, info: Classified, req: HttpRequest) -> None:
        session = info.conversation_id or run.rid
        if info.kind == "subagent":
            parent = self._runs.get(req.header("x-parent-request-id") or "")
            session = parent.conversation if parent is not None and parent.conversation else session
        self.titles.conversation_seen(session, info.text if info.kind == "new_turn" else "")
        what = {"kind": info.kind, "why": info.why, "request_id": run.rid}
        local_ok = info.kind == "new_turn"
        opened = self.adapter.open(to_chat(info, session), local_ok=local_ok, what=what)
        run.decide(session, opened)
        if opened is not None:
            self._spawn(run.abandon_unless_streamed(self.stream_wait))
        if opened is None or opened.decision.target != "local" or not local_ok:
            self._spawn(run.to_origin())
            return
        run.local(info.text, self._spawn(self.answer.produce(run)))

    # ------------------------------------------------------------------ RunSSE

    async def _run_sse(self, req: HttpRequest) -> HttpResponse:
        rid = run_sse_id(req.body, req.header("connect-content-encoding"))
        if rid is None:
            return await relay(self.network, req)
        self.seen(req, "HTTP/1.1 RunSSE")
        run = self._run(rid)
        if run.abandoned:
            message = "glider: this run was abandoned (its stream did not open in time)"
            return HttpResponse(200, list(_STREAM), w.end_stream({"code": "aborted", "message": message}))
        run.streaming()
        if run.phase == "pending":
            await run.origin_unless_decided(self.hold)
        if run.phase == "origin":
            await run.wait_settled()
            resp = await relay(self.network, req, run.origin_end())
            if resp.stream is not None and run.outcome is not None:
                resp = resp.with_stream(self.cloud_watch(run, resp.stream))
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
        run = self._runs[rid] = Run(rid, self.network, self.adapter)
        self._runs.move_to_end(rid)
        self._trim()
        run.streaming()
        info = classify(message, dict(req.headers))
        if not info.in_run and info.kind in _DECIDED_KINDS:
            self._decide(run, info, req)
        if run.phase != "local_wait":
            run.at_origin()
        return run

    def local_stream(self, run: Run, fallback: Fallback) -> AsyncGenerator[bytes, None]:
        """The answer of a run decided local, frame by frame (`LocalAnswer.stream`; `fallback(end)`:
        Cursor's answer instead, when the local backend failed before its first output)."""
        return self.answer.stream(run, fallback)

    def cloud_watch(self, run: Run, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """A stream Cursor serves for `run`, its tool steps and usage recorded (`cloud_steps`)."""
        if run.outcome is None:
            return stream
        return watch(stream, self._cloud_step(run), run.outcome.cloud)

    def _cloud_step(self, run: Run) -> Callable[[str, str], None]:
        """Records a tool step of Cursor's own loop as the policy would decide it (`cloud_steps`)."""
        policy = Policy(*self.adapter.tool_lists())

        def record(tool: str, member: str) -> None:
            verdict, why = policy.verdict(tool)
            data = {"side": "cloud", "applied": False, "tool": tool, "exec": member}
            data.update(decision=verdict, why=why, request_id=run.rid)
            self.adapter.tool_step(run.opened, data)

        return record
