"""A streamed reply relayed chunk by chunk (`Dispatch.relay`, apart so each module stays small).

`stream_reply(dispatch, job, call, resp, it, first)`: the upstream's stream as the client gets it (as
it is for a passthrough, else translated by `protocol.translate_stream`), `first` being the body's
first chunk when `Dispatch.forward` held the reply for a possible fallback. Usage, the tool calls the
reply issued and whether the upstream cut or failed the stream are read as the chunks pass, after
each was handed to the client; the bookkeeping (`Dispatch.finish`) runs once on the loop pass after
the stream ended, whether it completed, failed mid-stream (the client gets the protocol's error
event) or the client left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from glider_cli.backends.client import UpstreamResponse
from glider_cli.backends.headers import response_headers
from glider_cli.errors import BackendError, GliderError
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.calls import Call, Job, reply_route
from glider_cli.proxy.reply import Reply

if TYPE_CHECKING:
    from glider_cli.protocol.translate_stream import StreamConverter, StreamTranslator
    from glider_cli.proxy.dispatch import Dispatch


def stream_reply(
    dispatch: Dispatch, job: Job, call: Call, resp: UpstreamResponse, it: AsyncIterator[bytes], first: bytes
) -> Reply:
    inb = job.inb
    local = call.backend.side == "local"
    # A local reply is read for its stop at the limit; a stream relayed as it is from a local server or
    # to a Chat client (which may not ask for usage) for its text (a translated one: the encoder's).
    text = call.passthrough and (local or inb.protocol == "openai_chat")
    usage = Usage(limit=local, text=text)
    model = inb.chat.model or call.model or ""
    estimate = None
    if not call.passthrough:  # Anthropic: in message_start; every client: when the backend says none
        # The request as this backend was sent it (a local backend's pack), not the client's.
        sent = dispatch.sent_tokens(job, call)
        sent = inb.chat.estimated_tokens if sent is None else sent
        estimate = dispatch.turns.estimate(call.backend.name, sent)
    # A local Chat server's stream relayed as it is is still read for a cut (recorded, not sent).
    local_chat = call.passthrough and call.backend.side == "local" and inb.protocol == "openai_chat"
    convert: StreamConverter | None = None
    watch: StreamTranslator | None = None
    if not call.passthrough or local_chat:
        # Imported by the first stream that is read (`protocol.translate_stream`), not at start.
        from glider_cli.protocol.translate_stream import StreamTranslator, stream_converter

        if not call.passthrough:
            convert = stream_converter(
                inb.protocol, call.backend.wire, model=model, body=inb.body, input_estimate=estimate
            )
        if local_chat:
            watch = StreamTranslator(inb.protocol, inb.protocol, model=model)

    def said() -> str | None:
        return convert.failure if convert is not None else watch.failure if watch is not None else None

    ended = False  # the upstream response closed and the bookkeeping scheduled, exactly once

    def end(failure: GliderError | None, complete: bool) -> None:
        nonlocal ended
        ended = True
        gone = failure is None and not complete

        def closed() -> None:
            status = resp.status
            text = convert.text_bytes if convert is not None else None
            dispatch.finish(
                job,
                call,
                status,
                usage,
                complete=complete,
                disconnected=gone,
                failure=failure,
                text_bytes=text,
            )

        asyncio.get_running_loop().call_soon(closed)

    async def gen() -> AsyncGenerator[bytes, None]:
        complete = False
        failure: GliderError | None = None
        try:
            chunk = first
            while True:
                if call.first_chunk is None and chunk:
                    call.first_chunk = time.perf_counter()
                out = chunk if convert is None else convert.feed(chunk)
                if out:
                    try:
                        yield out  # the client first; usage and tool calls are read once it is out
                    finally:
                        usage.feed(chunk)
                        if job.tap is not None:
                            job.tap.feed(out)
                else:
                    usage.feed(chunk)
                if watch is not None:
                    watch.feed(chunk)
                if said() is not None:
                    break  # the upstream said it failed (or cut the stream): nothing more to read
                try:
                    chunk = await it.__anext__()
                except StopAsyncIteration:
                    break
            if convert is not None:
                tail = convert.close()
                if tail:
                    if job.tap is not None:
                        job.tap.feed(tail)
                    yield tail
            if said() is not None:  # the upstream said it failed (or cut the stream): not a reply
                failure = BackendError(f"upstream {call.backend.name} failed mid-stream: {said()}")
                return
            complete = True
        except BackendError as exc:
            failure = exc
            message = f"upstream {call.backend.name} failed mid-stream: {exc.message}"
            from glider_cli.protocol.translate_stream import stream_error

            yield (
                stream_error(inb.protocol, message, model=model)
                if convert is None
                else convert.error(message)
            )
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
    headers.append((b"x-glider-route", route.encode("latin-1")))
    return Reply(resp.status, headers, stream=gen(), close=close)
