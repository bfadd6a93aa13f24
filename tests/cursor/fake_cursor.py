"""A fake Cursor origin on 127.0.0.1 over TLS, as strict as the fact sheet says the real one is.

Serves Cursor's hosts (and `api4.cursor.sh`, a host Glider must only tunnel) with one certificate of
its own CA (trustme), offering `alpn` (`h2` and `http/1.1` by default; `("h2",)`: h2 only, as Cursor's
agent hosts). HTTP/1.1 is read with h11, HTTP/2 with python-hyper's `h2` (`h2_peer`).

- `POST /agent.v1.AgentService/Run` over HTTP/1.1: 464, as Cursor's load balancer answers.
- `POST /aiserver.v1.BidiService/BidiAppend`: must be `application/proto` and a readable
  BidiAppendRequest (else 415 / 400); the request id and seqno are recorded; answered 200, empty.
- `POST /agent.v1.AgentService/RunSSE`: must be a Connect stream; waits up to `append_wait` seconds
  for an append of its request id; none: an end-of-stream error (`failed_precondition`). Else it
  streams: a heartbeat, `text_delta("hello from cursor")`, a token delta, the frames in `execs`
  (exec messages of its own agent loop; the client answers them by appends), then (with `gate` set)
  waits for `release()`, then `text_delta(" (done)")`, `turn_ended` (with the counts in `usage`,
  when set), end of stream.
- `NameAgent`: `NameAgentResponse{name: "Cursor title"}`; `NameTab`: `NameTabResponse{name: "Cursor
  title", reason: "named by Cursor"}`.
- Anything else: 200 `application/proto` with body `b"\\x0a\\x02ok"` and `x-fake-origin: 1`.
Every request is recorded with its headers and body bytes (`requests`).

Over HTTP/2 the unary answers are the same, and `POST /agent.v1.AgentService/Run` is one full-duplex
Connect stream (`h2_runs` records each: the client's envelopes with their arrival times, the frames
sent with their send times): it must be a Connect stream (else 415); it waits up to `append_wait`
seconds for the first client message (a body that ends first, or none: "No exec result" as an
end-of-stream error); then the RunSSE frames above (`ticks` small text frames after the first text),
each its own DATA frame, `pace` seconds apart (with `pace` a RunSSE is sent so too, recorded in
`sse_runs`), with `big` more bytes of text deltas (64 KiB each) before " (done)", waiting
(`exec_wait`) for the client's exec answers on the request body when it sent execs; the response
ends with trailers (`x-fake-trailer: run-done`).
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import cursor_wire as wire
import h11
import trustme
from h2_peer import Peer, PeerStream

HOSTS = ["api2.cursor.sh", "agent.api5.cursor.sh", "agentn.global.api5.cursor.sh", "api4.cursor.sh"]
BIG_CHUNK = 64 * 1024


@dataclass
class H2Run:
    headers: dict[str, str]
    received: list[tuple[float, int, bytes]] = field(default_factory=list)  # (time, flags, payload)
    sent: list[tuple[float, bytes]] = field(default_factory=list)  # (time, frame)
    bytes_sent: int = 0
    ended: bool = False  # the client ended its request body
    reset: bool = False  # the client (Glider) reset the stream


@dataclass
class Rec:
    host: str
    http: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)


class FakeCursor:
    def __init__(self, alpn: tuple[str, ...] = ("h2", "http/1.1")) -> None:
        self.alpn = alpn
        self.pace = 0.0
        self.big = 0
        self.exec_wait = False
        self.h2_runs: list[H2Run] = []
        self.sse_runs: list[H2Run] = []  # RunSSE answers sent paced (`pace`)
        self.ticks = 0  # small text frames ("t") after the first text, each its own frame
        self.h2_connections = 0
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert(*HOSTS)
        self.requests: list[Rec] = []
        self.appends: dict[str, list[int]] = {}
        self.append_wait = 3.0
        self.gate = False
        self.tail = b""  # bytes sent after the end-of-stream frame (a truncated envelope, say)
        self.execs: list[bytes] = []  # frames (exec messages) its agent loop sends after the first text
        self.sent: list[bytes] = []  # each RunSSE body as sent
        self.usage: tuple[int | None, int | None] = (None, None)  # its turn-ended update's counts
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stop: asyncio.Event | None = None

    # ---------------------------------------------------------------- control

    def ca_file(self, tmp: Any) -> str:
        path = tmp / "fake-cursor-ca.pem"
        self.ca.cert_pem.write_to_path(str(path))
        return str(path)

    def release(self) -> None:
        assert self._loop is not None and self._release is not None
        self._loop.call_soon_threadsafe(self._release.set)

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def __enter__(self) -> FakeCursor:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    # ---------------------------------------------------------------- server

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._release = asyncio.Event()
        self._stop = asyncio.Event()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.cert.configure_cert(ctx)
        ctx.set_alpn_protocols(list(self.alpn))
        server = await asyncio.start_server(self._client, "127.0.0.1", 0, ssl=ctx)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ssl_obj = writer.get_extra_info("ssl_object")
        host = ssl_obj.server_hostname if ssl_obj is not None else "?"
        try:
            if ssl_obj is not None and ssl_obj.selected_alpn_protocol() == "h2":
                self.h2_connections += 1

                async def on_request(stream: PeerStream) -> None:
                    await self._h2_request(stream)

                peer = Peer(reader, writer, client_side=False, on_request=on_request)
                await peer.start()
                await peer.serve()
                return
            await self._http1(reader, writer, host or "?")
        except (ConnectionError, h11.ProtocolError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def _http1(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            ev = await self._next(conn, reader)
            if not isinstance(ev, h11.Request):
                return
            body = b""
            while True:
                e = await self._next(conn, reader)
                if isinstance(e, h11.Data):
                    body += e.data
                elif isinstance(e, h11.EndOfMessage):
                    break
                else:
                    return
            headers = {k.decode().lower(): v.decode() for k, v in ev.headers}
            rec = Rec(
                headers.get("host", host).split(":")[0],
                "1.1",
                ev.method.decode(),
                ev.target.decode(),
                headers,
                body,
            )
            self.requests.append(rec)
            await self._answer(conn, writer, rec)
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    @staticmethod
    async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
                continue
            return ev

    async def _send(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, ctype: str, body: bytes
    ) -> None:
        headers = [("content-type", ctype), ("content-length", str(len(body))), ("x-fake-origin", "1")]
        writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
        writer.write(conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        await writer.drain()

    async def _answer(self, conn: h11.Connection, writer: asyncio.StreamWriter, rec: Rec) -> None:
        path = rec.path
        if path == "/agent.v1.AgentService/Run":
            await self._send(conn, writer, 464, "text/plain", b"HTTP/1.1 is not supported on Run")
            return
        if path.endswith("/BidiAppend"):
            if rec.headers.get("content-type") != "application/proto":
                await self._send(conn, writer, 415, "application/json", b'{"code":"invalid_argument"}')
                return
            try:
                rid, seq = _append_id(rec.body)
            except (ValueError, KeyError, IndexError, AssertionError):
                await self._send(conn, writer, 400, "application/json", b'{"code":"invalid_argument"}')
                return
            self.appends.setdefault(rid, []).append(seq)
            await self._send(conn, writer, 200, "application/proto", b"")
            return
        if path == "/agent.v1.AgentService/RunSSE":
            await self._run_sse(conn, writer, rec)
            return
        if path.endswith("/NameAgent"):
            await self._send(conn, writer, 200, "application/proto", wire.ld(1, "Cursor title"))
            return
        if path.endswith("/NameTab"):
            body = wire.ld(1, "Cursor title") + wire.ld(2, "named by Cursor")
            await self._send(conn, writer, 200, "application/proto", body)
            return
        await self._send(conn, writer, 200, "application/proto", b"\x0a\x02ok")

    async def _run_sse(self, conn: h11.Connection, writer: asyncio.StreamWriter, rec: Rec) -> None:
        if rec.headers.get("content-type") not in ("application/connect+proto", "application/grpc-web+proto"):
            await self._send(conn, writer, 415, "application/json", b'{"code":"invalid_argument"}')
            return
        try:
            rid = _run_id(rec.body)
        except (ValueError, KeyError, IndexError, AssertionError, struct.error):
            await self._send(conn, writer, 400, "application/json", b'{"code":"invalid_argument"}')
            return
        headers = [("content-type", "text/event-stream"), ("x-fake-origin", "1")]
        writer.write(conn.send(h11.Response(status_code=200, headers=headers)))
        end = time.monotonic() + self.append_wait
        while rid not in self.appends and time.monotonic() < end:
            await asyncio.sleep(0.02)
        if rid not in self.appends:
            err = {"code": "failed_precondition", "message": "no BidiAppend seen for this run"}
            writer.write(conn.send(h11.Data(data=wire.end_frame(err))) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            return
        if self.pace:
            await self._paced_sse(conn, writer)
            return
        first = wire.heartbeat_frame() + wire.text_frame("hello from cursor") + wire.token_frame(4)
        first += b"".join(self.execs)
        writer.write(conn.send(h11.Data(data=first)))
        await writer.drain()
        if self.gate:
            assert self._release is not None
            await asyncio.wait_for(self._release.wait(), 20)
            self._release.clear()
        rest = wire.text_frame(" (done)") + wire.turn_ended_frame(*self.usage) + wire.end_frame() + self.tail
        self.sent.append(first + rest)
        writer.write(conn.send(h11.Data(data=rest)) + conn.send(h11.EndOfMessage()))
        await writer.drain()

    async def _paced_sse(self, conn: h11.Connection, writer: asyncio.StreamWriter) -> None:
        """A RunSSE answer sent frame by frame, `pace` seconds apart, each send time recorded."""
        run = H2Run({})
        self.sse_runs.append(run)
        frames = [wire.heartbeat_frame(), wire.text_frame("hello from cursor"), wire.token_frame(4)]
        frames += [wire.text_frame("t")] * self.ticks
        frames += [wire.text_frame(" (done)"), wire.turn_ended_frame(*self.usage), wire.end_frame()]
        for frame in frames:
            if run.sent:
                await asyncio.sleep(self.pace)
            run.sent.append((time.monotonic(), frame))
            writer.write(conn.send(h11.Data(data=frame)))
            await writer.drain()
        self.sent.append(b"".join(frames))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    # ---------------------------------------------------------------- HTTP/2

    async def _h2_request(self, s: PeerStream) -> None:
        path = s.headers.get(":path", "")
        host = s.headers.get(":authority", "?").split(":")[0]
        headers = {k: v for k, v in s.headers.items() if not k.startswith(":")}
        if path == "/agent.v1.AgentService/Run" and s.headers.get(":method") == "POST":
            self.requests.append(Rec(host, "2", "POST", path, headers, b""))
            await self._h2_run(s, headers)
            return
        body = b""
        while (chunk := await s.read()) is not None:
            body += chunk
        rec = Rec(host, "2", s.headers.get(":method", ""), path, headers, body)
        self.requests.append(rec)
        if path.endswith("/NameAgent"):
            answer = wire.ld(1, "Cursor title")
        elif path.endswith("/BidiAppend"):
            rid, seq = _append_id(body)
            self.appends.setdefault(rid, []).append(seq)
            answer = b""
        else:
            answer = b"\x0a\x02ok"
        await s.respond(200, [("content-type", "application/proto"), ("x-fake-origin", "1")])
        await s.send(answer, end=True)

    async def _h2_run(self, s: PeerStream, headers: dict[str, str]) -> None:
        if headers.get("content-type") not in ("application/connect+proto", "application/grpc-web+proto"):
            await s.respond(415, [("content-type", "application/json")])
            await s.send(b'{"code":"invalid_argument"}', end=True)
            return
        run = H2Run(headers)
        self.h2_runs.append(run)
        first = asyncio.Event()
        answers = asyncio.Event()

        async def inbound() -> None:
            buf = b""
            try:
                while (chunk := await s.read()) is not None:
                    buf += chunk
                    while len(buf) >= 5:
                        flags, n = struct.unpack(">BI", buf[:5])
                        if len(buf) < 5 + n:
                            break
                        run.received.append((time.monotonic(), flags, buf[5 : 5 + n]))
                        buf = buf[5 + n :]
                        first.set()
                        if sum(1 for _, _, p in run.received if p[:1] == b"\x12") >= len(self.execs):
                            answers.set()
                run.ended = True
                first.set()
                await s.was_reset.wait()  # a stop after the client's body ended
                run.reset = True
            except Exception:
                run.reset = True
            first.set()

        reading = asyncio.get_running_loop().create_task(inbound())
        try:
            await asyncio.wait_for(first.wait(), self.append_wait)
        except TimeoutError:
            pass
        await s.respond(200, [("content-type", "application/connect+proto"), ("x-fake-origin", "1")])

        async def send(frame: bytes) -> None:
            if run.sent and self.pace:
                await asyncio.sleep(self.pace)
            run.sent.append((time.monotonic(), frame))
            await s.send(frame)
            run.bytes_sent += len(frame)

        if not run.received:
            await send(wire.end_frame({"code": "invalid_argument", "message": "No exec result"}))
            await s.end()
            return
        for frame in (wire.heartbeat_frame(), wire.text_frame("hello from cursor"), wire.token_frame(4)):
            await send(frame)
        for _ in range(self.ticks):
            await send(wire.text_frame("t"))
        for frame in self.execs:
            await send(frame)
        if self.execs and self.exec_wait:
            await asyncio.wait_for(answers.wait(), 20)
        if self.gate:
            assert self._release is not None
            await asyncio.wait_for(self._release.wait(), 20)
            self._release.clear()
        left = self.big
        while left > 0:
            n = min(left, BIG_CHUNK)
            await send(wire.text_frame("x" * n))
            left -= n
        for frame in (wire.text_frame(" (done)"), wire.turn_ended_frame(*self.usage), wire.end_frame()):
            await send(frame)
        if self.tail:
            await send(self.tail)
        await s.end([("x-fake-trailer", "run-done")])
        self.sent.append(b"".join(f for _, f in run.sent))
        reading.cancel()


def _fields(data: bytes) -> dict[int, bytes | int]:
    """A flat protobuf reader for the fake's own checks (field number -> last value)."""
    out: dict[int, bytes | int] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            out[num], i = _varint(data, i)
        elif wt == 2:
            n, i = _varint(data, i)
            out[num] = data[i : i + n]
            i += n
        else:
            raise ValueError("unexpected wire type")
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def _append_id(body: bytes) -> tuple[str, int]:
    f = _fields(body)
    rid = _fields(f[2])[1]  # type: ignore[arg-type]
    seq = f.get(3, 0)
    assert isinstance(rid, bytes) and isinstance(seq, int)
    return rid.decode(), seq


def _run_id(body: bytes) -> str:
    _flags, n = struct.unpack(">BI", body[:5])
    rid = _fields(body[5 : 5 + n])[1]
    assert isinstance(rid, bytes)
    return rid.decode()
