"""`agent.v1.AgentService/Run` over HTTP/2: one full-duplex Connect stream per run, the client's
AgentClientMessages in the request body and the server's AgentServerMessages in the response, both
enveloped. A transport onto the run logic of `cursor.runs.CursorRuns` (a `cursor.run.Run` per
stream), not a second engine.

`RunH2(runs, hold).serve(stream, origin, host, port)`:
- The request body is read up to its first whole envelope (at most `hold` seconds): that client
  message is what a RunSSE's first append is, and `CursorRuns.begin` decides the run by the same
  rules, turn families and events (the run's id: the `x-request-id` header, else a fresh one).
  A body that ends (or does not start) before it, a content type that is not a Connect stream, or a
  message that is no decision of Glider's (a prewarm, undecodable bytes) goes to Cursor as it came.
- Cursor's: the stream is relayed to Cursor frame by frame in both directions (`origin_h2.pipe`, the
  bytes read so far first), its tool steps and usage recorded (`CursorRuns.cloud_watch`), its end
  recorded as the run's outcome (`Run.origin_end`).
- Local: answered on the same stream (`CursorRuns.local_stream`: heartbeats while the model starts,
  then text and the agent loop's frames); the client messages that follow on the request body (exec
  results, heartbeats, KV acks, a user message into the open run) are read as they come and given to
  the run's agent loop (`Run.deliver`); none of it reaches Cursor. A local failure before the first
  output falls back to Cursor on the same stream: what the client sent so far, then the rest as it
  comes. The client resetting the stream (stop) cancels the run, recorded as disconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator

import h2.errors

from glider_cli.cursor.forward import unavailable
from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.h2link import Gone, Stream
from glider_cli.cursor.origin_h2 import OriginH2, Unreachable, pipe
from glider_cli.cursor.run import End, Run
from glider_cli.cursor.runs import CursorRuns
from glider_cli.cursor.upstream import h2_request_headers
from glider_cli.protocol.cursor.framing import STREAM_TYPES, FrameReader

CONNECT_PROTO = "application/connect+proto"
# What a local run keeps of its request body while a fallback to Cursor may still need it (its first
# message is in it; what follows before the first output is heartbeats and acks).
HELD = 4 * 1024 * 1024


class RunH2:
    def __init__(self, runs: CursorRuns, *, hold: float = 10.0) -> None:
        self.runs = runs
        self.hold = hold

    async def serve(self, stream: Stream, origin: OriginH2, authority: str, host: str, port: int) -> None:
        headers = [(k, v) for k, v in stream.headers if not k.startswith(":")]
        path = stream.header(":path") or ""
        self.runs.seen(HttpRequest(host, port, "POST", path, headers, b""), "HTTP/2 Run")
        ctype = (stream.header("content-type") or "").split(";", 1)[0].strip().lower()
        if ctype not in STREAM_TYPES:
            await pipe(stream, origin, authority)
            return
        reader = FrameReader()
        head = bytearray()
        first = None
        later: list[bytes | None] = []
        ended = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.hold):
                while first is None:
                    chunk = await stream.read()
                    if chunk is None:
                        ended = True
                        break
                    head += chunk
                    envs = reader.feed(chunk)
                    if envs:
                        first = envs[0]
                        later = [e.message() for e in envs[1:] if not e.end_stream]
        if first is None or first.end_stream:
            await pipe(stream, origin, authority, head=bytes(head), ended=ended)
            return
        req = HttpRequest(host, port, "POST", path, headers, bytes(head), origin)
        rid = stream.header("x-request-id") or str(uuid.uuid4())
        run = self.runs.begin(rid, first.message(), req)
        if run.phase != "local_wait":
            end = run.origin_end() if run.opened is not None else None

            def watch(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
                return self.runs.cloud_watch(run, chunks)

            await pipe(stream, origin, authority, head=bytes(head), ended=ended, watch=watch, on_end=end)
            return
        await _Local(self.runs, run, stream, origin, authority, reader, head, later, ended).serve(ctype)


class _Local:
    """One run answered here, on its own stream (see the module contract)."""

    def __init__(
        self,
        runs: CursorRuns,
        run: Run,
        stream: Stream,
        origin: OriginH2,
        authority: str,
        reader: FrameReader,
        head: bytearray,
        later: list[bytes | None],
        ended: bool,
    ) -> None:
        self.runs = runs
        self.run = run
        self.stream = stream
        self.origin = origin
        self.authority = authority
        self.reader = reader
        self.held: bytearray | None = head  # what the client sent, while a fallback may need it
        self.later = later
        self.ended = ended
        self.up: Stream | None = None  # Cursor's stream, after a fallback
        self.lock = asyncio.Lock()
        self.started = time.perf_counter()

    def _ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    async def serve(self, ctype: str) -> None:
        loop = asyncio.get_running_loop()
        inbound = loop.create_task(self._inbound())
        writer = loop.create_task(self._write(ctype))
        gone = loop.create_task(self.stream.wait_gone())
        try:
            done, _ = await asyncio.wait([writer, gone], return_when=asyncio.FIRST_COMPLETED)
            if writer not in done:  # the client reset the stream (Stop) or its connection went
                writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Gone):
                await writer
        finally:
            for task in (inbound, writer, gone):
                if not task.done():
                    task.cancel()
            await asyncio.gather(inbound, writer, gone, return_exceptions=True)
            if self.up is not None and self.up.gone is None and not writer_ok(writer):
                self.up.reset(h2.errors.ErrorCodes.CANCEL)

    async def _write(self, ctype: str) -> None:
        stream = self.stream
        out = ctype if ctype != "text/event-stream" else CONNECT_PROTO
        await stream.respond(200, [("content-type", out)])
        gen = self.runs.local_stream(self.run, self._fallback)
        try:
            async for chunk in gen:
                await stream.send(chunk)
            await stream.end()
        finally:
            await gen.aclose()

    async def _inbound(self) -> None:
        """The client messages after the first: to the run's agent loop, or to Cursor after a fallback."""
        for message in self.later:
            self.run.deliver(message)
        if self.ended:
            return
        while (chunk := await self.stream.read()) is not None:
            async with self.lock:
                if self.up is not None:
                    await self.up.send(chunk)
                    continue
                if self.held is not None:
                    if self.run.phase == "local_wait" and len(self.held) + len(chunk) <= HELD:
                        self.held += chunk
                    else:
                        self.held = None
                for env in self.reader.feed(chunk):
                    if not env.end_stream:
                        self.run.deliver(env.message())
        async with self.lock:
            self.ended = True
            if self.up is not None:
                await self.up.end()

    async def _fallback(self, end: End) -> HttpResponse:
        """Cursor answers the run instead (the local backend failed before its first output)."""
        if self.held is None:
            return unavailable("glider: the local backend failed and the run cannot be replayed to Cursor")
        try:
            up = await self.origin.open(h2_request_headers(self.stream.headers, self.authority))
        except Unreachable as exc:
            end(502, False, self._ms())
            return unavailable(f"glider could not reach {exc}")
        async with self.lock:
            await up.send(bytes(self.held))
            self.held = None
            self.up = up
            if self.ended:
                await up.end()
        try:
            await up.response()
        except Gone:
            end(502, False, self._ms())
            return unavailable("Cursor reset the run")
        return HttpResponse(up.status, [], stream=self._relayed(up, end))

    async def _relayed(self, up: Stream, end: End) -> AsyncIterator[bytes]:
        complete = False
        try:
            while (chunk := await up.read()) is not None:
                yield chunk
            complete = True
        except Gone:
            pass
        finally:
            end(up.status, complete, self._ms())


def writer_ok(task: asyncio.Task[None]) -> bool:
    return task.done() and not task.cancelled() and task.exception() is None
