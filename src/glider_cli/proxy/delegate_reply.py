"""The answer to a delegated turn, sent while the delegate runs (`proxy.delegation`, `Engine._delegate`).

Contract:
- `Running`: one delegate run on a worker thread. `result()` awaits its reply text; a request
  cancelled while awaiting it (the client left) cancels the run. `cancel()` sets `stop`, which the
  runner watches (it stops the vendor's process group). `report(line)` (from the run's threads)
  queues what the vendor says it is doing.
- `reply(protocol, chat, body, running, headers) -> Reply`: the status and headers go out at once.
  A stream then gets its protocol's first event (Anthropic `message_start`, OpenAI's first chunk,
  `response.created`), a keep-alive every `KEEPALIVE` quiet seconds (Anthropic's own `event: ping`,
  an SSE comment for OpenAI), each progress line as an SSE comment (every SSE reader skips them),
  and once the run is done the text and the end of the stream, through the protocol's own encoder.
  A whole (JSON) reply is preceded by keep-alive whitespace (JSON allows it before the value). A
  reply closed before the run ended (the client left) cancels the run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import orjson

from glider_cli.domain import ChatRequest
from glider_cli.proxy.reply import Reply

KEEPALIVE = 2.0
_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_COMMENT = b": keep-alive\n\n"


class Running:
    """See the module contract. Made on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.stop = threading.Event()
        self.progress: asyncio.Queue[str] = asyncio.Queue(maxsize=256)
        self.future: asyncio.Future[str] = loop.create_future()

    def report(self, line: str) -> None:
        def put() -> None:
            if not self.progress.full():  # nobody reads a whole reply's progress: drop, never block
                self.progress.put_nowait(line)

        self.loop.call_soon_threadsafe(put)

    def cancel(self) -> None:
        self.stop.set()

    @property
    def done(self) -> bool:
        return self.future.done()

    async def result(self) -> str:
        try:
            return await asyncio.shield(self.future)
        except asyncio.CancelledError:
            self.cancel()
            raise


async def _waiting(running: Running) -> AsyncGenerator[str | None, None]:
    """While the run goes on: each progress line as it comes, None after each quiet KEEPALIVE."""
    while not running.done:
        getter = asyncio.ensure_future(running.progress.get())
        done, _ = await asyncio.wait(
            {getter, running.future}, timeout=KEEPALIVE, return_when=asyncio.FIRST_COMPLETED
        )
        if getter in done:
            yield getter.result()
            continue
        getter.cancel()
        if not done:
            yield None


def _cancel_unless_done(running: Running) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        if not running.done:
            running.cancel()

    return close


def reply(
    protocol: str,
    chat: ChatRequest,
    body: Mapping[str, Any],
    running: Running,
    headers: list[tuple[bytes, bytes]],
) -> Reply:
    """See the module contract."""
    from glider_cli.protocol import ir
    from glider_cli.protocol.translate import canonical, encoder_for, text_reply

    model = chat.model or "glider"
    close = _cancel_unless_done(running)
    if not chat.stream:

        async def whole() -> AsyncGenerator[bytes, None]:
            async for _ in _waiting(running):
                yield b" \n"
            out = text_reply(protocol, await running.result(), model=model, stream=False)
            yield orjson.dumps(out)

        return Reply(200, [(b"content-type", b"application/json"), *headers], stream=whole(), close=close)
    client = canonical(protocol)
    opts = body.get("stream_options")
    usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
    ping = _PING if client == "anthropic" else _COMMENT

    async def events() -> AsyncGenerator[bytes, None]:
        enc = encoder_for(client, model, usage)
        for chunk in enc.encode(ir.Start("", model, ir.Usage())):
            yield chunk
        async for said in _waiting(running):
            if said is None:
                yield ping
            else:
                yield b": " + " ".join(said.split()).encode("utf-8", "replace")[:2000] + b"\n\n"
        text = await running.result()
        for ev in (ir.TextDelta(text), ir.Finish("end_turn", ir.Usage())):
            for chunk in enc.encode(ev):
                yield chunk

    sse = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    return Reply(200, [*sse, *headers], stream=events(), close=close)
