"""One HTTP/2 connection on asyncio: python-hyper's `h2` state machine (framing, HPACK, flow control,
settings) driven over a socket, as a server (toward Cursor's client) or as a client (toward Cursor's
origin). Nothing of HTTP/2 is written by hand here: this module moves bytes and events.

- `H2Link(reader, writer, client_side=, on_request=)`: `serve()` reads the socket until it closes;
  on the server side each new request stream is handed to `on_request(stream)` (a task of its own).
  `open(headers)` (client side) starts a request stream. `close(code)` sends GOAWAY and ends it.
  Settings: at most `MAX_STREAMS` concurrent streams, a header list of at most `MAX_HEADER_LIST`
  bytes, a per-stream receive window of `STREAM_WINDOW` and a connection window that holds every
  stream's (so a stream whose reader is slow never stalls another). A peer that breaks the protocol
  (a malformed frame, too many streams, an oversized header block) gets GOAWAY and the connection
  ends; every open stream sees `Gone`.
- `Stream`: `headers` (the request's, or the response's once `response()` returns), `read()` (the
  next body chunk as it came, None at the end; what is read is given back to the peer's window, so a
  reader that does not read holds the peer at one window), `trailers`, `respond(status, headers)`,
  `send(data)` (waits for the peer's window: per stream), `end(trailers)`, `reset(code)`,
  `wait_gone()` (returns once the stream is reset or its connection ended).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

READ = 65536
MAX_STREAMS = 128
MAX_HEADER_LIST = 64 * 1024
STREAM_WINDOW = 256 * 1024
Headers = list[tuple[str, str]]


class Gone(Exception):
    """The stream was reset, or its connection ended, before this could happen."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


class Stream:
    def __init__(
        self, link: H2Link, sid: int, *, headers: Headers | None = None, ended: bool = False
    ) -> None:
        """`headers`: a received request's (server side); `ended`: the opening HEADERS ended our side."""
        self.link = link
        self.id = sid
        self.headers: Headers = [] if headers is None else headers
        self.trailers: Headers = []
        self.gone: Gone | None = None
        self._inbox: asyncio.Queue[tuple[bytes, int] | None] = asyncio.Queue()
        self._window = asyncio.Event()
        self._gone = asyncio.Event()
        self._response: asyncio.Future[Headers] = asyncio.get_running_loop().create_future()
        self._ended = ended  # our side sent END_STREAM (or a reset)

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    # ---------------------------------------------------------------- reading

    async def read(self) -> bytes | None:
        """The next body chunk as the peer sent it; None at its end. Raises Gone on a reset."""
        item = await self._inbox.get()
        if item is None:
            self._inbox.put_nowait(None)  # later reads see the end too
            if self.gone is not None:
                raise self.gone
            return None
        data, counted = item
        self.link.consumed(self.id, counted)
        return data

    async def wait_gone(self) -> Gone:
        """Returns once the stream is reset (either side) or its connection ended."""
        await self._gone.wait()
        assert self.gone is not None
        return self.gone

    async def response(self) -> Headers:
        """(client side) The response's headers, once they came."""
        self.headers = await self._response
        return self.headers

    @property
    def status(self) -> int:
        return int(self.header(":status") or 0)

    # ---------------------------------------------------------------- writing

    async def respond(self, status: int, headers: Headers, *, end: bool = False) -> None:
        self._check()
        with self._closed_is_gone():
            self.link.conn.send_headers(self.id, [(":status", str(status)), *headers], end_stream=end)
        self._ended = end
        await self.link.flush()

    async def send(self, data: bytes) -> None:
        """`data` on this stream, as much at a time as the peer's windows and frame size allow."""
        view = memoryview(data)
        while view:
            self._check()
            conn = self.link.conn
            room = min(conn.local_flow_control_window(self.id), conn.max_outbound_frame_size)
            if room <= 0:
                self._window.clear()
                await self._window.wait()
                continue
            with self._closed_is_gone():
                conn.send_data(self.id, bytes(view[:room]))
            view = view[room:]
            await self.link.flush()

    async def end(self, trailers: Headers | None = None) -> None:
        self._check()
        with self._closed_is_gone():
            if trailers:
                self.link.conn.send_headers(self.id, trailers, end_stream=True)
            else:
                self.link.conn.end_stream(self.id)
        self._ended = True
        self.link._forget(self.id)
        await self.link.flush()

    def reset(self, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        if self.gone is not None:
            return
        if not self.link.closed:
            with contextlib.suppress(h2.exceptions.H2Error):
                self.link.conn.reset_stream(self.id, code)
            self.link.flush_soon()
        self._ended = True
        self._fail(Gone(code, "reset here"))
        self.link.streams.pop(self.id, None)
        self.link._room.set()

    def _check(self) -> None:
        if self.gone is not None:
            raise self.gone

    @contextlib.contextmanager
    def _closed_is_gone(self) -> Iterator[None]:
        """h2 refusing to send on a stream it has closed (a reset not yet seen here) is a `Gone`."""
        try:
            yield
        except h2.exceptions.StreamClosedError as exc:
            gone = Gone(h2.errors.ErrorCodes.STREAM_CLOSED, "the stream is closed")
            self._fail(gone)
            raise gone from exc

    # ---------------------------------------------------------------- events (from the link)

    def _trailers_received(self, trailers: Headers) -> None:
        self.trailers = trailers

    def _fail(self, gone: Gone) -> None:
        if self.gone is None:
            self.gone = gone
        self._gone.set()
        self._inbox.put_nowait(None)
        self._window.set()
        if not self._response.done():
            self._response.set_exception(gone)
            self._response.exception()  # retrieved: nobody may be waiting for it


class H2Link:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        client_side: bool,
        on_request: Callable[[Stream], Awaitable[None]] | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.client_side = client_side
        self.on_request = on_request
        # Headers stay bytes inside h2 (`_decoded` reads them as latin-1): a byte that is not UTF-8
        # in a header value is the peer's business, not a reason to end the connection.
        config = h2.config.H2Configuration(client_side=client_side, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.local_settings = h2.settings.Settings(
            client=client_side,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
            },
        )
        self.streams: dict[int, Stream] = {}
        self.closed = False
        self.error: str | None = None  # why the connection ended, when it was not a clean close
        self.goaway = False  # the peer said it takes no new streams
        self._tasks: set[asyncio.Task[None]] = set()
        self._room = asyncio.Event()  # a stream closed (client side: room for another)
        self._flushing = False

    # ---------------------------------------------------------------- life

    async def start(self) -> None:
        self.conn.initiate_connection()
        # The connection window holds every stream's: a stalled stream cannot starve the others.
        self.conn.increment_flow_control_window(MAX_STREAMS * STREAM_WINDOW - 65535)
        await self.flush()

    async def serve(self) -> None:
        """Reads the socket until the connection ends; then every open stream sees `Gone`."""
        try:
            while not self.closed:
                data = await self.reader.read(READ)
                if not data:
                    self._end(Gone(h2.errors.ErrorCodes.CANCEL, "connection lost"), "connection lost")
                    break
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError as exc:  # h2 queued its GOAWAY
                    with contextlib.suppress(Gone):
                        await self.flush()
                    code = getattr(exc, "error_code", h2.errors.ErrorCodes.PROTOCOL_ERROR)
                    self._end(Gone(code, f"protocol error: {exc}"), f"protocol error: {exc}")
                    break
                for event in events:
                    self._event(event)
                # Only after the whole batch: h2's state already holds its later frames (an end of
                # stream then a reset, read at once, must still reach the stream as a reset).
                for event in events:
                    if isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                        self._forget(event.stream_id)
                await self.flush()
        except (ConnectionError, OSError, asyncio.IncompleteReadError, Gone) as exc:
            self._end(Gone(h2.errors.ErrorCodes.CANCEL, "connection lost"), f"connection lost: {exc}")
        finally:
            if not self.closed:
                self._end(Gone(h2.errors.ErrorCodes.CANCEL, "connection closed"), None)
            await self._finish()

    async def close(self, code: int = h2.errors.ErrorCodes.NO_ERROR) -> None:
        if self.closed:
            return
        with contextlib.suppress(h2.exceptions.H2Error):
            self.conn.close_connection(code)
        with contextlib.suppress(Gone):
            await self.flush()
        self._end(Gone(code, "connection closed here"), None)
        await self._finish()

    async def _finish(self) -> None:
        pending = [t for t in self._tasks if not t.done()]
        if pending:  # each stream's handler saw Gone: let it record its run's outcome
            await asyncio.wait(pending, timeout=5)
        with contextlib.suppress(Exception):
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 2)

    def _end(self, gone: Gone, why: str | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.error = why
        for s in list(self.streams.values()):
            s._fail(gone)
        self._room.set()

    # ---------------------------------------------------------------- writing

    async def flush(self) -> None:
        """Writes what h2 has queued; a socket that is gone raises `Gone` (as a reset stream does)."""
        data = self.conn.data_to_send()
        try:
            if data:
                self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            raise Gone(h2.errors.ErrorCodes.CANCEL, f"connection lost: {exc}") from exc

    def flush_soon(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def consumed(self, sid: int, n: int) -> None:
        """`n` flow-controlled bytes of stream `sid` were read: the peer may send as many again."""
        if n <= 0 or self.closed:
            return
        with contextlib.suppress(h2.exceptions.H2Error):
            self.conn.acknowledge_received_data(n, sid)
        self.flush_soon()

    # ---------------------------------------------------------------- client side

    async def open(self, headers: Headers, *, end: bool = False) -> Stream:
        """A new request stream (client side), waiting while the peer's stream limit is reached."""
        while True:
            if self.closed or self.goaway:
                raise Gone(h2.errors.ErrorCodes.REFUSED_STREAM, self.error or "the connection is closing")
            if self.conn.open_outbound_streams < self.conn.remote_settings.max_concurrent_streams:
                break
            self._room.clear()
            await self._room.wait()
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, headers, end_stream=end)
        stream = self.streams[sid] = Stream(self, sid, ended=end)
        await self.flush()
        return stream

    # ---------------------------------------------------------------- events

    def _event(self, event: h2.events.Event) -> None:
        sid = getattr(event, "stream_id", None)
        stream = self.streams.get(sid) if sid else None
        if isinstance(event, h2.events.RequestReceived):
            stream = self.streams[event.stream_id] = Stream(
                self, event.stream_id, headers=_decoded(event.headers)
            )
            if self.on_request is not None:
                task = asyncio.get_running_loop().create_task(self._handle(stream))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        elif isinstance(event, h2.events.ResponseReceived):
            if stream is not None and not stream._response.done():
                stream._response.set_result(_decoded(event.headers))
        elif isinstance(event, h2.events.DataReceived):
            if stream is None:
                self.consumed(event.stream_id, event.flow_controlled_length)
            else:
                stream._inbox.put_nowait((event.data, event.flow_controlled_length))
        elif isinstance(event, h2.events.TrailersReceived):
            if stream is not None:
                stream._trailers_received(_decoded(event.headers))
        elif isinstance(event, h2.events.StreamEnded):
            if stream is not None:
                stream._inbox.put_nowait(None)
        elif isinstance(event, h2.events.StreamReset):
            if stream is not None:
                stream._fail(Gone(event.error_code, "reset by the peer"))
        elif isinstance(event, h2.events.WindowUpdated):
            targets = self.streams.values() if not event.stream_id else [stream] if stream else []
            for s in targets:
                s._window.set()
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for s in self.streams.values():
                s._window.set()
            self._room.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = True
            last = event.last_stream_id or 0
            for s in list(self.streams.values()):
                # Streams the peer never processed, or every stream when it ended in an error.
                if event.error_code or (self.client_side and s.id > last):
                    s._fail(Gone(event.error_code or h2.errors.ErrorCodes.REFUSED_STREAM, "GOAWAY"))
            self._room.set()

    def _forget(self, sid: int) -> None:
        """Drops a stream h2 has closed both ways (its reader may still drain its inbox)."""
        with contextlib.suppress(h2.exceptions.H2Error, KeyError):
            if self.conn.streams.get(sid) is None or self.conn.streams[sid].closed:
                self.streams.pop(sid, None)
                self._room.set()

    async def _handle(self, stream: Stream) -> None:
        assert self.on_request is not None
        try:
            await self.on_request(stream)
        except Gone:
            pass
        finally:
            if not stream._ended and stream.gone is None and not self.closed:
                stream.reset(h2.errors.ErrorCodes.INTERNAL_ERROR)
            self.streams.pop(stream.id, None)
            self._room.set()


def _decoded(headers: object) -> Headers:
    out: Headers = []
    for k, v in headers:  # type: ignore[attr-defined]
        name = k.decode("latin-1") if isinstance(k, bytes) else k
        value = v.decode("latin-1") if isinstance(v, bytes) else v
        out.append((name.lower(), value))
    return out
