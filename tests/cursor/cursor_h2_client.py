"""A Cursor-shaped HTTP/2 client, as `cursor-agent` and the IDE reach the agent hosts: through the HTTP
CONNECT proxy, TLS trusting only the CA it is given, ALPN `h2` only, python-hyper's `h2` (`h2_peer`).
`AgentService/Run` is one full-duplex Connect stream: the client's messages enveloped on the request
body (kept open while the answer streams, as Cursor does), the server's frames read one by one as
they arrive, each with its arrival time, and each AgentServerMessage decoded as it arrives the way
Cursor's client decodes it (protobuf-es, `cursor_client.strict`, as the HTTP/1.1 client decodes a
RunSSE's frames): a frame it rejects fails the run with StrictDecodeError; `H2Answer.decoded` holds
their protobuf-es JSON forms (None each where no strict decoder can run).

`H2CursorClient(proxy_port, ca_file, window=)`: `connect(host)` -> `H2Conn` (one connection, many
streams); `H2Conn.run(first, more=, executor=, ...)`, `H2Conn.unary(path, body)`, `H2Conn.start_run`
(the stream, for tests that reset it), `H2Conn.peer.write_raw` (bytes that are not HTTP/2)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cursor_wire as wire
import h2.exceptions
from cursor_client import BASE_HEADERS, take_frames
from h2_peer import Peer, PeerStream, Reset
from strict_decoder import StrictDecoder

RUN = "/agent.v1.AgentService/Run"


@dataclass
class H2Answer:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    frames: list[tuple[float, int, bytes]] = field(default_factory=list)  # (time, flags, payload)
    decoded: list[Any] = field(default_factory=list)  # each frame but the end, as protobuf-es decoded it
    trailers: dict[str, str] = field(default_factory=dict)
    reset: int | None = None
    rid: str = ""


class H2Conn:
    def __init__(self, peer: Peer, host: str, task: asyncio.Task[None]) -> None:
        self.peer = peer
        self.host = host
        self.task = task

    def headers(self, path: str, ctype: str, extra: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
        base = [(":method", "POST"), (":scheme", "https"), (":authority", self.host), (":path", path)]
        rest = {"content-type": ctype, **BASE_HEADERS, **(extra or {})}
        rest.pop("x-cursor-streaming", None)  # an HTTP/1.1 (SSE) client's header
        return base + list(rest.items())

    async def unary(self, path: str, body: bytes, *, headers: Mapping[str, str] | None = None) -> H2Answer:
        s = await self.peer.open(self.headers(path, "application/proto", headers))
        await s.send(body, end=True)
        hdrs = await asyncio.wait_for(s.response, 30)
        out = H2Answer(int(hdrs[":status"]), hdrs)
        while (chunk := await s.read()) is not None:
            out.body += chunk
        out.trailers = s.trailers
        return out

    async def start_run(
        self, first: bytes, *, rid: str | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[PeerStream, str]:
        rid = rid or str(uuid.uuid4())
        extra = {"connect-protocol-version": "1", "connect-accept-encoding": "gzip", "x-request-id": rid}
        s = await self.peer.open(self.headers(RUN, "application/connect+proto", {**extra, **(headers or {})}))
        await s.send(wire.envelope(first))
        return s, rid

    async def read_run(self, s: PeerStream, on_frame: Any = None, *, rid: str = "") -> H2Answer:
        """The answer of a run's stream, frame by frame; the request body is ended once it is over."""
        try:
            hdrs = await asyncio.wait_for(s.response, 60)
        except Reset as exc:
            return H2Answer(0, {}, reset=exc.code, rid=rid)
        out = H2Answer(int(hdrs[":status"]), hdrs, rid=rid)
        buf = b""
        try:
            while (chunk := await asyncio.wait_for(s.read(), 60)) is not None:
                out.body += chunk
                buf = take_frames(buf + chunk, out, on_frame)
        except Reset as exc:
            out.reset = exc.code
            return out
        out.trailers = s.trailers
        if s.reset_code is None:
            with contextlib.suppress(h2.exceptions.StreamClosedError):
                await s.send(b"", end=True)  # the run is over: the client ends its side too
        return out

    async def run(
        self,
        first: bytes,
        *,
        more: list[bytes] | None = None,
        executor: Any = None,
        on_frame: Any = None,
        rid: str | None = None,
        headers: Mapping[str, str] | None = None,
        pace: float = 0.0,
    ) -> H2Answer:
        """One run: the first message, then `more` (`pace` seconds apart), exec answers by `executor`
        (cursor_exec.Executor) on the same request body."""
        s, rid = await self.start_run(first, rid=rid, headers=headers)
        handler = on_frame
        if executor is not None:

            async def send(message: bytes) -> None:
                await s.send(wire.envelope(message))

            executor.send = send
            handler = executor.on_frame

        async def rest() -> None:
            for m in more or ():
                if pace:
                    await asyncio.sleep(pace)
                await s.send(wire.envelope(m))

        sending = asyncio.get_running_loop().create_task(rest())
        try:
            return await self.read_run(s, handler, rid=rid)
        finally:
            await sending
            if executor is not None:
                await asyncio.gather(*executor.tasks, return_exceptions=True)

    async def close(self) -> None:
        self.peer.conn.close_connection()
        await self.peer.flush()
        self.peer.writer.close()
        await asyncio.gather(self.task, return_exceptions=True)


class H2CursorClient:
    def __init__(self, proxy_port: int, ca_file: str, *, window: int = 65535) -> None:
        self.proxy_port = proxy_port
        self.ca_file = ca_file
        self.window = window
        # The strict decoder (node) started here, not at a run's first frame: its start (or the
        # install of its package) does not stall a connection's event loop mid-run.
        StrictDecoder.shared()

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)  # only this CA: no system store
        ctx.set_alpn_protocols(["h2"])
        return ctx

    async def connect(self, host: str, port: int = 443) -> H2Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.proxy_port)
        writer.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert int(head.split(b" ", 2)[1]) == 200, head
        await writer.start_tls(self.context(), server_hostname=host)
        alpn = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        if alpn != "h2":
            writer.close()
            raise ConnectionError(f"ALPN chose {alpn!r}, not h2")
        peer = Peer(reader, writer, client_side=True, window=self.window)
        await peer.start()
        task = asyncio.get_running_loop().create_task(peer.serve())
        return H2Conn(peer, host, task)
