"""The tests' own HTTP/2 endpoint on asyncio, built on python-hyper's `h2` directly (not on Glider's
`cursor.h2link`), for the Cursor-shaped HTTP/2 client and the fake Cursor origin.

`Peer(reader, writer, client_side=, window=, on_request=)`: `start()` sends the preface and settings
(`window`: the initial stream window this side advertises), `serve()` reads until the connection
ends. `open(headers)` (client) starts a stream; `on_request(stream)` (server) is called per request.
`PeerStream.read()` returns body chunks as they came and gives them back to the sender's window
after `read_delay` seconds (a slow reader), `send()` waits for the window, `reset()` (reading ends
with it), `end()`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings


class Reset(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"stream reset ({code})")
        self.code = code


class PeerStream:
    def __init__(self, peer: Peer, sid: int) -> None:
        self.peer = peer
        self.id = sid
        self.headers: dict[str, str] = {}
        self.trailers: dict[str, str] = {}
        self.reset_code: int | None = None
        self.read_delay = 0.0
        self.inbox: asyncio.Queue[tuple[bytes, int] | None] = asyncio.Queue()
        self.window = asyncio.Event()
        self.was_reset = asyncio.Event()  # set when the peer reset it (or the connection ended)
        self.response: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    async def read(self) -> bytes | None:
        item = await self.inbox.get()
        if item is None:
            self.inbox.put_nowait(None)
            if self.reset_code is not None:
                raise Reset(self.reset_code)
            return None
        data, n = item
        if self.read_delay:
            await asyncio.sleep(self.read_delay)
        with contextlib.suppress(h2.exceptions.H2Error):
            self.peer.conn.acknowledge_received_data(n, self.id)
        await self.peer.flush()
        return data

    async def send(self, data: bytes, *, end: bool = False) -> None:
        conn = self.peer.conn
        while data:
            if self.reset_code is not None:
                raise Reset(self.reset_code)
            room = min(conn.local_flow_control_window(self.id), conn.max_outbound_frame_size)
            if room <= 0:
                self.window.clear()
                await self.window.wait()
                continue
            conn.send_data(self.id, data[:room])
            data = data[room:]
            await self.peer.flush()
        if end:
            conn.end_stream(self.id)
            await self.peer.flush()

    async def respond(self, status: int, headers: list[tuple[str, str]], *, end: bool = False) -> None:
        self.peer.conn.send_headers(self.id, [(":status", str(status)), *headers], end_stream=end)
        await self.peer.flush()

    async def end(self, trailers: list[tuple[str, str]] | None = None) -> None:
        if trailers:
            self.peer.conn.send_headers(self.id, trailers, end_stream=True)
        else:
            self.peer.conn.end_stream(self.id)
        await self.peer.flush()

    async def reset(self, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        """Resets the stream; this side's reading ends with it (a read then raises Reset(code))."""
        self.peer.conn.reset_stream(self.id, code)
        if self.reset_code is None:
            self.reset_code = code
        self.inbox.put_nowait(None)
        self.window.set()
        await self.peer.flush()


class Peer:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        client_side: bool,
        window: int = 65535,
        max_streams: int = 100,
        on_request: Callable[[PeerStream], Awaitable[None]] | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        config = h2.config.H2Configuration(client_side=client_side, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.local_settings = h2.settings.Settings(
            client=client_side,
            initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams,
            },
        )
        self.on_request = on_request
        self.streams: dict[int, PeerStream] = {}
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.closed = asyncio.Event()
        self.tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        self.conn.initiate_connection()
        await self.flush()

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()

    def write_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def open(self, headers: list[tuple[str, str]], *, end: bool = False) -> PeerStream:
        sid = self.conn.get_next_available_stream_id()
        stream = self.streams[sid] = PeerStream(self, sid)
        self.conn.send_headers(sid, headers, end_stream=end)
        await self.flush()
        return stream

    async def serve(self) -> None:
        try:
            while data := await self.reader.read(65536):
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    await self.flush()
                    break
                for ev in events:
                    self._event(ev)
                await self.flush()
        except (ConnectionError, OSError):
            pass
        finally:
            for s in self.streams.values():
                if s.reset_code is None:
                    s.reset_code = -1  # the connection ended
                s.was_reset.set()
                s.inbox.put_nowait(None)
                s.window.set()
                if not s.response.done():
                    s.response.set_exception(Reset(-1))
                    s.response.exception()  # nobody may be waiting for it
            self.closed.set()
            self.writer.close()

    def _event(self, ev: Any) -> None:
        stream = self.streams.get(getattr(ev, "stream_id", 0) or 0)
        if isinstance(ev, h2.events.RequestReceived):
            stream = self.streams[ev.stream_id] = PeerStream(self, ev.stream_id)
            stream.headers = dict(ev.headers)
            if self.on_request is not None:
                self.tasks.append(asyncio.get_running_loop().create_task(self._handle(stream)))
        elif isinstance(ev, h2.events.ResponseReceived) and stream is not None:
            stream.headers = dict(ev.headers)
            stream.response.set_result(stream.headers)
        elif isinstance(ev, h2.events.DataReceived) and stream is not None:
            stream.inbox.put_nowait((ev.data, ev.flow_controlled_length))
        elif isinstance(ev, h2.events.TrailersReceived) and stream is not None:
            stream.trailers = dict(ev.headers)
        elif isinstance(ev, h2.events.StreamEnded) and stream is not None:
            stream.inbox.put_nowait(None)
        elif isinstance(ev, h2.events.StreamReset) and stream is not None:
            stream.reset_code = ev.error_code
            stream.was_reset.set()
            stream.inbox.put_nowait(None)
            stream.window.set()
            if not stream.response.done():
                stream.response.set_exception(Reset(ev.error_code))
                stream.response.exception()
        elif isinstance(ev, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            for s in self.streams.values():
                s.window.set()
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev

    async def _handle(self, stream: PeerStream) -> None:
        assert self.on_request is not None
        with contextlib.suppress(Reset, h2.exceptions.H2Error, ConnectionError):
            await self.on_request(stream)
