"""A streamed reply: an upstream's stream read chunk by chunk as the client gets it (`ReplyChunks`, the
engine's one stream loop), and that stream as an HTTP client's reply (`stream_reply`).

`ReplyChunks(call, it, first, protocol=, model=, body=, usage=, tap=)`: the upstream's stream as a
client of `protocol` gets it (as it is for a passthrough, else translated by `protocol.translate_stream`),
`first` being the body's first chunk when `Dispatch.forward` held the reply for a possible fallback.
`chunks()` yields each piece once; the raw chunk is fed to `usage` and what went out to `tap` (the tool
calls the reply issued) once that piece was taken (the client first). It stops after the chunk in which
the upstream said it failed or cut the stream (`failure`; a passthrough is read for that only with
`watch`). Both doors read a stream through it: the HTTP door's streamed reply below and the Cursor
door's local answer (`Engine.local_chat`).

`stream_reply(books, job, call, resp, it, first, estimate)`: the client's reply (`estimate`: the input
tokens a translated stream reports when the backend says none; `x-glider-estimate: message_start` for
an Anthropic client). The bookkeeping (`books.finish`: `Dispatch.finish`) runs once on the loop pass
after the stream ended, whether it completed, failed mid-stream (the client gets the protocol's error
event) or the client left.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from glider_cli.backends.client import UpstreamResponse
from glider_cli.backends.headers import response_headers
from glider_cli.errors import BackendError, GliderError
from glider_cli.protocol.reply_tap import ReplyTap
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.calls import Call, Job, reply_route
from glider_cli.proxy.reply import Reply

if TYPE_CHECKING:
    from glider_cli.protocol.translate_stream import StreamConverter, StreamTranslator


class Books(Protocol):
    """Where a streamed reply's bookkeeping goes once it ended (`Dispatch.finish`)."""

    def finish(
        self,
        job: Job,
        call: Call,
        status: int,
        usage: Usage,
        *,
        complete: bool,
        disconnected: bool = False,
        failure: GliderError | None = None,
        text_bytes: int | None = None,
    ) -> None: ...


class ReplyChunks:
    """See the module contract. One per streamed reply."""

    def __init__(
        self,
        call: Call,
        it: AsyncIterator[bytes],
        first: bytes,
        *,
        protocol: str,
        model: str,
        body: dict[str, Any],
        usage: Usage,
        tap: ReplyTap | None = None,
        estimate: int | None = None,
        watch: bool = False,
    ) -> None:
        self.call = call
        self.protocol = protocol
        self.model = model
        self.usage = usage
        self.tap = tap
        self._it = it
        self._first = first
        self.convert: StreamConverter | None = None
        self._watch: StreamTranslator | None = None
        if not call.passthrough or watch:
            # Imported by the first stream that is read (`protocol.translate_stream`), not at start.
            from glider_cli.protocol.translate_stream import StreamTranslator, stream_converter

            if not call.passthrough:
                wire = call.backend.wire
                self.convert = stream_converter(
                    protocol, wire, model=model, body=body, input_estimate=estimate
                )
            else:
                self._watch = StreamTranslator(protocol, protocol, model=model)

    @property
    def failure(self) -> str | None:
        """What the upstream said when it failed or cut the stream, or None."""
        if self.convert is not None:
            return self.convert.failure
        return self._watch.failure if self._watch is not None else None

    @property
    def text_bytes(self) -> int | None:
        """The text a translated stream sent (its encoder's count); None for a passthrough."""
        return self.convert.text_bytes if self.convert is not None else None

    def error(self, message: str) -> bytes:
        """The protocol's error event, to end the client's stream with."""
        if self.convert is not None:
            return self.convert.error(message)
        from glider_cli.protocol.translate_stream import stream_error

        return stream_error(self.protocol, message, model=self.model)

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The one stream loop (see the module contract). Raises what reading the upstream raises."""
        call, usage, tap, convert, watch = self.call, self.usage, self.tap, self.convert, self._watch
        chunk = self._first
        while True:
            if chunk:
                call.first_byte()
            out = chunk if convert is None else convert.feed(chunk)
            if out:
                try:
                    yield out  # the client first; usage and tool calls are read once it is out
                finally:
                    usage.feed(chunk)
                    if tap is not None:
                        tap.feed(out)
            else:
                usage.feed(chunk)
            if watch is not None:
                watch.feed(chunk)
            if self.failure is not None:
                break  # the upstream said it failed (or cut the stream): nothing more to read
            try:
                chunk = await self._it.__anext__()
            except StopAsyncIteration:
                break
        if convert is not None:
            tail = convert.close()
            if tail:
                if tap is not None:
                    tap.feed(tail)
                yield tail


def stream_reply(
    books: Books,
    job: Job,
    call: Call,
    resp: UpstreamResponse,
    it: AsyncIterator[bytes],
    first: bytes,
    estimate: int | None,
) -> Reply:
    inb = job.inb
    local = call.backend.side == "local"
    # A local reply is read for its stop at the limit; a stream relayed as it is from a local server or
    # to a Chat client (which may not ask for usage) for its text (a translated one: the encoder's).
    text = call.passthrough and (local or inb.protocol == "openai_chat")
    usage = Usage(limit=local, text=text)
    model = inb.chat.model or call.model or ""
    # A local Chat server's stream relayed as it is is still read for a cut (recorded, not sent).
    watch = call.passthrough and local and inb.protocol == "openai_chat"
    reader = ReplyChunks(
        call,
        it,
        first,
        protocol=inb.protocol,
        model=model,
        body=inb.body,
        usage=usage,
        tap=job.tap,
        estimate=estimate,
        watch=watch,
    )

    ended = False  # the upstream response closed and the bookkeeping scheduled, exactly once

    def end(failure: GliderError | None, complete: bool) -> None:
        nonlocal ended
        ended = True
        gone = failure is None and not complete

        def closed() -> None:
            books.finish(
                job,
                call,
                resp.status,
                usage,
                complete=complete,
                disconnected=gone,
                failure=failure,
                text_bytes=reader.text_bytes,
            )

        asyncio.get_running_loop().call_soon(closed)

    async def gen() -> AsyncGenerator[bytes, None]:
        complete = False
        failure: GliderError | None = None
        chunks = reader.chunks()
        try:
            async with contextlib.aclosing(chunks):
                async for out in chunks:
                    yield out
            said = reader.failure
            if said is not None:  # the upstream said it failed (or cut the stream): not a reply
                failure = BackendError(f"upstream {call.backend.name} failed mid-stream: {said}")
                return
            complete = True
        except BackendError as exc:
            failure = exc
            yield reader.error(f"upstream {call.backend.name} failed mid-stream: {exc.message}")
        finally:
            # Runs on completion, on upstream failure and when the client went away (the stream
            # is closed or its task cancelled): closing the upstream response cancels its work.
            if not ended:
                await resp.aclose()
                end(failure, complete)

    async def close() -> None:
        # A generator that never started runs no `finally`: when the reply failed before its
        # first chunk (the client left while its headers were sent), close the upstream here.
        if not ended:
            await resp.aclose()
            end(None, False)

    route = reply_route(job, call)
    if call.passthrough:
        headers = response_headers(resp.raw_headers)
    else:
        array = inb.protocol == "gemini" and inb.body.get("alt") == "json"  # no `alt=sse`
        headers = [(b"content-type", b"application/json" if array else b"text/event-stream")]
        if estimate is not None and inb.protocol == "anthropic":
            headers.append((b"x-glider-estimate", b"message_start"))
    names = {k for k, _ in headers}
    if b"content-type" not in names:
        headers.append((b"content-type", b"text/event-stream"))
    if b"cache-control" not in names:  # an upstream's own (Anthropic sends no-cache) is kept, once
        headers.append((b"cache-control", b"no-cache"))
    headers.append((b"x-glider-route", route))
    return Reply(resp.status, headers, stream=gen(), close=close)
