"""A Cursor-shaped client, built from the fact sheet: it reaches Cursor's hosts only through an HTTP
CONNECT proxy, speaks TLS that trusts only the CA it is given (Glider's for intercepted hosts, the
fake server's for tunnelled ones), and Connect over HTTP/1.1 (h11): unary `application/proto`
requests, a RunSSE stream read envelope by envelope as it arrives, one BidiAppend per client message
(seq 0 sent without waiting for the stream's headers, as Cursor does). Every frame of a RunSSE answer
is decoded as it arrives the way Cursor's client decodes it (protobuf-es, `strict_decoder`): a frame it
rejects fails the request with StrictDecodeError; `Answer.decoded` holds their protobuf-es JSON forms."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import struct
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cursor_wire as wire
import h11
from strict_decoder import StrictDecodeError, StrictDecoder

BASE_HEADERS = {
    "authorization": "Bearer test-token-not-a-secret",
    "x-cursor-checksum": "AbCdEf123_machineid",
    "x-cursor-client-version": "3.1.0",
    "x-cursor-client-type": "ide",
    "x-cursor-streaming": "true",
    "user-agent": "connect-es/1.6.1",
}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    frames: list[tuple[float, int, bytes]] = field(default_factory=list)  # (time, flags, payload)
    decoded: list[Any] = field(default_factory=list)  # each frame as protobuf-es decoded it


class CursorClient:
    def __init__(self, proxy_port: int, ca_file: str, *, alpn: str = "http/1.1") -> None:
        self.proxy_port = proxy_port
        self.ca_file = ca_file
        self.alpn = alpn

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)  # only this CA: no system store
        ctx.set_alpn_protocols([self.alpn])
        return ctx

    async def tunnel(self, host: str, port: int = 443) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.proxy_port)
        writer.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            writer.close()
            raise ConnectionError(f"CONNECT answered {status}")
        await writer.start_tls(self.context(), server_hostname=host)
        return reader, writer

    async def request(
        self,
        host: str,
        path: str,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str = "application/proto",
        frames: bool = False,
        on_frame: Any = None,
    ) -> Answer:
        reader, writer = await self.tunnel(host)
        try:
            conn = h11.Connection(h11.CLIENT)
            hdrs = [("host", host), ("content-type", content_type), ("content-length", str(len(body)))]
            hdrs += list({**BASE_HEADERS, **(headers or {})}.items())
            writer.write(conn.send(h11.Request(method="POST", target=path, headers=hdrs)))
            writer.write(conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            resp = await _next(conn, reader)
            assert isinstance(resp, h11.Response), resp
            out = Answer(resp.status_code, {k.decode(): v.decode() for k, v in resp.headers}, b"")
            buf = b""
            while True:
                ev = await _next(conn, reader)
                if isinstance(ev, h11.Data):
                    out.body += ev.data
                    if frames:
                        buf = take_frames(buf + ev.data, out, on_frame)
                elif isinstance(ev, h11.EndOfMessage):
                    return out
                else:
                    raise ConnectionError(f"unexpected {ev!r}")
        finally:
            writer.close()

    # ---------------------------------------------------------------- Cursor's calls

    async def append(
        self,
        host: str,
        rid: str,
        seq: int,
        message: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        compress: bool = False,
    ) -> Answer:
        body = wire.append_body(rid, seq, message)
        extra = dict(headers or {}, **{"x-request-id": rid})
        if compress:
            body = gzip.compress(body)
            extra["content-encoding"] = "gzip"
        return await self.request(host, "/aiserver.v1.BidiService/BidiAppend", body, headers=extra)

    async def run_sse(self, host: str, rid: str, **kw: Any) -> Answer:
        headers = {"connect-protocol-version": "1", "connect-accept-encoding": "gzip", "x-request-id": rid}
        headers.update(kw.pop("headers", {}) or {})
        return await self.request(
            host,
            "/agent.v1.AgentService/RunSSE",
            wire.run_sse_body(rid),
            headers=headers,
            content_type="application/connect+proto",
            frames=True,
            **kw,
        )

    async def turn(
        self,
        host: str,
        first: bytes,
        *,
        more: list[bytes] | None = None,
        headers: Mapping[str, str] | None = None,
        on_frame: Any = None,
        rid: str | None = None,
    ) -> tuple[Answer, list[Answer], str]:
        """One run: the RunSSE and append 0 at once, then the other messages (heartbeats, acks)."""
        rid = rid or str(uuid.uuid4())
        sse = asyncio.create_task(self.run_sse(host, rid, headers=headers, on_frame=on_frame))
        answers = [await self.append(host, rid, 0, first, headers=headers)]
        for i, m in enumerate(more or (), start=1):
            answers.append(await self.append(host, rid, i, m, headers=headers))
        return await asyncio.wait_for(sse, 60), answers, rid

    async def agent_turn(
        self,
        host: str,
        first: bytes,
        executor: Any,
        *,
        headers: Mapping[str, str] | None = None,
        rid: str | None = None,
    ) -> tuple[Answer, str]:
        """One run whose server may send exec messages: `executor` (cursor_exec.Executor) runs them
        and answers each by appends (seq 1, 2, ... after the run's append 0)."""
        rid = rid or str(uuid.uuid4())
        seq = iter(range(1, 10_000))

        async def send(message: bytes) -> None:
            answer = await self.append(host, rid, next(seq), message, headers=headers)
            assert answer.status == 200, answer

        executor.send = send
        sse = asyncio.create_task(self.run_sse(host, rid, headers=headers, on_frame=executor.on_frame))
        assert (await self.append(host, rid, 0, first, headers=headers)).status == 200
        try:
            return await asyncio.wait_for(sse, 60), rid
        finally:
            await asyncio.gather(*executor.tasks, return_exceptions=True)


def take_frames(buf: bytes, out: Any, on_frame: Any = None) -> bytes:
    """The whole Connect envelopes at the head of `buf` into `out.frames` (with their arrival time) and,
    but the end-stream one, `out.decoded` (protobuf-es: `strict`), each shown to `on_frame(flags,
    payload)`; what is left of `buf` (an envelope not all there yet). Both transports' clients read so."""
    while len(buf) >= 5:
        flags, n = struct.unpack(">BI", buf[:5])
        if len(buf) < 5 + n:
            break
        payload = buf[5 : 5 + n]
        out.frames.append((time.monotonic(), flags, payload))
        if not flags & 2:
            out.decoded.append(strict(payload))
        if on_frame is not None:
            on_frame(flags, payload)
        buf = buf[5 + n :]
    return buf


def strict(payload: bytes) -> Any:
    """One AgentServerMessage as Cursor's client reads it (None: no strict decoder here)."""
    decoder = StrictDecoder.shared()
    if decoder is None:
        return None
    [got] = decoder.decode("glider.cursor.AgentServerMessage", [payload])
    if not got.ok:
        raise StrictDecodeError(f"protobuf-es rejects the frame {payload.hex()}: {got.error}")
    return got.json


async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
            continue
        return ev


def texts(answer: Answer) -> list[str]:
    """The text deltas of a RunSSE answer (AgentServerMessage 1 -> InteractionUpdate 1 -> text 1)."""
    from fake_cursor import _fields

    out = []
    for _, flags, payload in answer.frames:
        if flags & 2:
            continue
        upd = _fields(payload).get(1)
        if isinstance(upd, bytes):
            td = _fields(upd).get(1)
            if isinstance(td, bytes):
                t = _fields(td).get(1)
                if isinstance(t, bytes):
                    out.append(t.decode())
    return out


def all_decoded_strictly(answer: Any) -> bool:
    """Every frame of a run's answer (a RunSSE `Answer` or an HTTP/2 `H2Answer`) but the end-stream
    one was decoded by protobuf-es as it came, none failed, none left undecoded."""
    frames = [f for f in answer.frames if not f[1] & 2]
    return len(answer.decoded) == len(frames) and None not in answer.decoded


def trailer(answer: Answer) -> dict[str, Any] | None:
    import json

    for _, flags, payload in answer.frames:
        if flags & 2:
            return dict(json.loads(payload))
    return None
