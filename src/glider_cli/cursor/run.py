"""One Cursor run (one request id: a RunSSE and the BidiAppends that carry its client messages, or
an HTTP/2 `Run` stream) through its phases, and the outcome of a decided request, recorded once.

`Run(rid, network, adapter)` is changed only by its own transitions (`cursor.runs.CursorRuns` and
`cursor.local_answer.LocalAnswer` call them; the contract of what each phase answers is theirs):
- `pending`: nothing decided; the appends that arrive are held (`hold`).
- `decide(conversation, opened)` places the run and keeps what the router opened (None: the run
  passes through to Cursor unrecorded); then either `local(text, producer)` (`local_wait`: the local
  backend starts, the appends stay held) or `to_origin()` (`origin`: what was held is forwarded to
  Cursor in seqno order, then the stream may go; `at_origin()` for an HTTP/2 run, which holds
  nothing). `origin_unless_decided(hold)`: Cursor's when nothing decided it within `hold` seconds.
- From `local_wait`: `first_output()` (`local`: every held append answered here with an empty
  `BidiAppendResponse`), `failed_local()` (`local_failed`: `fallback: none`, likewise answered), or
  `to_origin()` (a failure before the first output falls back to Cursor).
- Abandoned (`abandon_unless_streamed(stream_wait)`): a run decided here whose stream the client has
  not asked for (`streaming()`) `stream_wait` seconds after the decision (it sent the run's
  BidiAppend, then timed out or went away) is closed with `outcome: abandoned` (status 499,
  incomplete): a local one's model work is stopped and its held appends answered (`abandoned`:
  nothing reaches Cursor); one at Cursor (a cloud decision, or a local failure's fallback) had its
  appends sent, and is recorded as a call that left the machine.
`decided` is reached when the phase leaves `pending`, `settled` when it leaves `pending` and
`local_wait`. A local run's answer flows through `pieces` (text, a whole frame, None: the end), the
channel its producer writes (the agent loop is handed it) and its stream reads; `deliver` gives an
exec's answer to the run's agent loop.

`Outcome(adapter, opened)`: what a decided request was served, recorded once (`adapter.close`):
answered here (`local`), by Cursor (`origin_end()`, the `on_end` of its relay, with the token counts
Cursor's own updates gave, `cloud`), or abandoned; `fell_back(backend)` names the local backend Cursor
took over from.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from glider_cli.cursor.adapter import CursorAdapter
from glider_cli.cursor.cloud_steps import CloudUsage
from glider_cli.cursor.forward import relay
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.upstream import Network
from glider_cli.errors import BackendError
from glider_cli.protocol.cursor import writers as w
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy import Opened
from glider_cli.values import replace

if TYPE_CHECKING:
    from glider_cli.cursor.agent_loop import AgentLoop

End = Callable[[int, bool, float], None]
ABANDONED = 499  # the status recorded: the client closed (here: never opened) the request's reply
_PROTO = [(b"content-type", b"application/proto")]


class Outcome:
    """What one decided Cursor request was served, recorded once (see the module contract)."""

    def __init__(self, adapter: CursorAdapter, opened: Opened) -> None:
        self.adapter = adapter
        self.opened = opened
        self.cloud = CloudUsage()  # what Cursor's own updates said of a request it served (`cloud_steps`)
        self.fallback_from: str | None = None  # the local backend Cursor took over from
        self.closed = False

    def fell_back(self, backend: str) -> None:
        self.fallback_from = backend

    def local(
        self,
        usage: Usage,
        status: int,
        ms: float,
        *,
        complete: bool,
        gone: bool = False,
        end: str | None = None,
        tokens: tuple[int | None, int | None] | None = None,
    ) -> None:
        """Answered here: the tokens `usage` counted (`tokens`, input and output, when the agent loop
        counted them instead)."""
        if self.closed:
            return
        self.closed = True
        served = self.adapter.served_local(
            self.opened,
            usage,
            status,
            ms,
            complete=complete,
            answered=status < 400,
            disconnected=gone,
            end=end,
        )
        if tokens is not None:
            served = replace(served, input_tokens=tokens[0], output_tokens=tokens[1])
        self.adapter.close(self.opened, served)

    def origin_end(self) -> End:
        """The `on_end` of a relay to Cursor: its status, completeness and time, its usage (`cloud`)."""

        def end(status: int, complete: bool, ms: float) -> None:
            if not self.closed:
                self.closed = True
                served = self.adapter.served_origin(self.opened, status, ms, complete, self.fallback_from)
                got = self.cloud
                served = replace(served, input_tokens=got.input_tokens, output_tokens=got.output_tokens)
                self.adapter.close(self.opened, served)

        return end

    def abandoned_at_origin(self, ms: float) -> None:
        """At Cursor, its stream never asked for: a call that left the machine, `end: abandoned`."""
        if self.closed:
            return
        self.closed = True
        served = self.adapter.served_origin(self.opened, ABANDONED, ms, False, self.fallback_from)
        self.adapter.close(self.opened, replace(served, end="abandoned"))


class Run:
    """One run (one request id) and its phases (see the module contract)."""

    def __init__(self, rid: str, network: Network, adapter: CursorAdapter) -> None:
        self.rid = rid
        self._network = network
        self._adapter = adapter
        self._phase = "pending"  # pending | origin | local_wait | local | local_failed | abandoned
        self._decided = asyncio.Event()  # set when the phase leaves pending
        self._settled = asyncio.Event()  # set when the phase leaves pending / local_wait
        self._streamed = asyncio.Event()  # set when the run's stream arrives
        self._held: list[tuple[int, HttpRequest, asyncio.Future[HttpResponse]]] = []
        self.conversation: str | None = None
        self.opened: Opened | None = None
        self.outcome: Outcome | None = None  # None until decided, and for a run Cursor serves unrecorded
        self.text = ""
        self.pieces: asyncio.Queue[str | bytes | None] = asyncio.Queue()  # text, a whole frame, the end
        self.usage = Usage()  # what the local backend's stream counted
        self.error: BackendError | None = None
        self._loop: AgentLoop | None = None  # a local turn that uses tools: Glider's agent loop
        self._loop_tokens: tuple[int, int] | None = None  # what the loop counted, once it ended
        self._producer: asyncio.Task[Any] | None = None  # the local answer being made

    # ------------------------------------------------------------------ what it is

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    @property
    def abandoned(self) -> bool:
        """Closed as abandoned (its stream did not open in time)."""
        return self._phase == "abandoned" and self.outcome is not None and self.outcome.closed

    def tokens(self) -> tuple[int | None, int | None]:
        """The local answer's input and output tokens: the agent loop's, once it ended, where it
        counted any; else what the backend's stream said."""
        if self._loop_tokens is None:
            return self.usage.input_tokens, self.usage.output_tokens
        got_in, got_out = self._loop_tokens
        return got_in or self.usage.input_tokens, got_out or self.usage.output_tokens

    # ------------------------------------------------------------------ deciding

    def hold(self, seqno: int, req: HttpRequest) -> Awaitable[HttpResponse]:
        """An append held until the run settles: forwarded to Cursor, or answered here."""
        fut: asyncio.Future[HttpResponse] = asyncio.get_running_loop().create_future()
        self._held.append((seqno, req, fut))
        return fut

    def streaming(self) -> None:
        """The run's stream arrived (its RunSSE, or the HTTP/2 `Run` it is)."""
        self._streamed.set()

    def decide(self, conversation: str, opened: Opened | None) -> None:
        """Placed in `conversation`; `opened`: what the router opened (None: Cursor's, unrecorded)."""
        self.conversation = conversation
        self.opened = opened
        self.outcome = Outcome(self._adapter, opened) if opened is not None else None

    def local(self, text: str, producer: asyncio.Task[Any]) -> None:
        """Decided local: `producer` makes the answer to `text`; the appends stay held until its first
        output."""
        self.text = text
        self._phase = "local_wait"
        self._decided.set()
        self._producer = producer

    async def origin_unless_decided(self, hold: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._decided.wait(), hold)
        if self._phase == "pending":
            await self.to_origin()

    async def to_origin(self) -> None:
        """Forward what was held, in seqno order, then let the stream go to Cursor."""
        if self._phase == "origin":
            return
        self._phase = "origin"
        self._decided.set()
        while self._held:
            held, self._held = sorted(self._held, key=lambda h: h[0]), []
            for _, req, fut in held:
                resp = await relay(self._network, req)
                if not fut.done():
                    fut.set_result(resp)
        self._settled.set()

    def at_origin(self) -> None:
        """Cursor's, with nothing held (an HTTP/2 run: its stream goes to Cursor as it came)."""
        self._phase = "origin"
        self._decided.set()
        self._settled.set()

    async def wait_settled(self) -> None:
        await self._settled.wait()

    async def settled_within(self, seconds: float) -> bool:
        """Whether the run settled within `seconds` (its waiting goes on when this one times out)."""
        try:
            await asyncio.wait_for(asyncio.shield(self._settled.wait()), seconds)
        except TimeoutError:
            return False
        return True

    # ------------------------------------------------------------------ answering here

    def first_output(self) -> None:
        """The local answer's first output (or its client left before it): the run is local, what it
        held is answered here."""
        self._settle("local")

    def failed_local(self) -> None:
        """The local backend failed before its first output, with `fallback: none`."""
        self._settle("local_failed")

    def failed(self, exc: BackendError) -> None:
        self.error = exc

    def looping(self, loop: AgentLoop) -> None:
        """The run's answer is Glider's agent loop `loop` (the exec answers the client sends go to it)."""
        self._loop = loop

    def loop_ended(self) -> None:
        """The agent loop ended: what it counted is the answer's usage (`tokens`)."""
        if self._loop is not None:
            self._loop_tokens = (self._loop.input_tokens, self._loop.output_tokens)

    def deliver(self, message: bytes | None) -> None:
        """A client message of the run (an exec's answer), to the agent loop waiting for it."""
        if self._loop is not None and self._phase != "abandoned":
            self._loop.deliver(message)

    def fell_back(self, backend: str) -> None:
        """Cursor takes over from the local backend `backend`."""
        if self.outcome is not None:
            self.outcome.fell_back(backend)

    def stop(self) -> None:
        """Stops the local model's work (the client left)."""
        if self._producer is not None and not self._producer.done():
            self._producer.cancel()

    def close_local(self, status: int, started: float, *, complete: bool, gone: bool = False) -> None:
        """Records the run answered here (once), `started` the `perf_counter` its answer began at."""
        if self.outcome is not None:
            ms = (time.perf_counter() - started) * 1000
            tokens = self.tokens() if self._loop_tokens is not None else None
            self.outcome.local(self.usage, status, ms, complete=complete, gone=gone, tokens=tokens)

    def origin_end(self) -> End:
        """The `on_end` of the run's relay to Cursor: its outcome recorded (a run Cursor serves
        unrecorded: nothing)."""

        def end(status: int, complete: bool, ms: float) -> None:
            if self.outcome is not None:
                self.outcome.origin_end()(status, complete, ms)

        return end

    def _settle(self, phase: str) -> None:
        self._phase = phase
        held, self._held = self._held, []
        for _, _, fut in held:
            if not fut.done():
                fut.set_result(HttpResponse(200, list(_PROTO), w.EMPTY_APPEND_RESPONSE))
        self._decided.set()
        self._settled.set()

    # ------------------------------------------------------------------ abandoned

    async def abandon_unless_streamed(self, stream_wait: float) -> None:
        """Closes the run when its stream never came (see the module contract)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._streamed.wait(), stream_wait)
        outcome = self.outcome
        if self._streamed.is_set() or outcome is None or outcome.closed:
            return
        if self._phase == "origin":  # at Cursor (a fallback, or a cloud run): its appends went
            outcome.abandoned_at_origin(stream_wait * 1000)
            return
        if self._producer is not None and not self._producer.done():  # decided local: stop the model
            self._producer.cancel()
            await asyncio.wait([self._producer])
        if outcome.closed:
            return
        self._settle("abandoned")
        tokens = self.tokens() if self._loop_tokens is not None else None
        outcome.local(
            self.usage, ABANDONED, stream_wait * 1000, complete=False, end="abandoned", tokens=tokens
        )
