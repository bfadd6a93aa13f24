"""The front door's HTTP/2 side: a decrypted client connection that chose `h2` in ALPN, served with
python-hyper's `h2` (`h2link.H2Link`, server side), its streams independent of one another.

`H2Front(handler, run, network).serve(reader, writer, host, port)` per connection (`run`: the
`run_h2.RunH2` its `Run` streams go to); per stream:
- `POST /agent.v1.AgentService/Run`: `run_h2.RunH2` (routed turn by turn, as RunSSE is);
- the requests the HTTP/1.1 path reads (`BidiAppend`, `RunSSE`, `NameAgent`): their body read whole
  (at most `front.MAX_BODY`, else 413) and handed to the same `Handler` as on HTTP/1.1, its answer
  written as it comes (what it relays goes to Cursor over HTTP/2: `HttpRequest.origin`);
- anything else (the unary services, streams Glider does not route): relayed to Cursor over HTTP/2
  frame by frame in both directions (`origin_h2.pipe`).
One HTTP/2 connection to Cursor per client connection (`origin_h2.OriginH2`), closed with it. A
client that breaks the protocol loses its connection (GOAWAY); its open runs end and are recorded.
`close()` ends every connection (GOAWAY) when the proxy stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from glider_cli.cursor.front import MAX_BODY, Handler, HttpRequest, HttpResponse
from glider_cli.cursor.h2link import Gone, H2Link, Stream
from glider_cli.cursor.origin_h2 import OriginH2, pipe
from glider_cli.cursor.run_h2 import RunH2
from glider_cli.cursor.upstream import HOP_BY_HOP, Network
from glider_cli.protocol.cursor.classify import rpc
from glider_cli.protocol.cursor.writers import unary_error

log = logging.getLogger(__name__)
_READ_WHOLE = frozenset({"append", "run_sse", "name_agent"})


class H2Front:
    def __init__(self, handler: Handler, run: RunH2, network: Network) -> None:
        self.handler = handler
        self.run = run
        self.network = network
        self._links: set[H2Link] = set()

    async def serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        origin = OriginH2(self.network, host, port)
        authority = host if port == 443 else f"{host}:{port}"

        async def on_request(stream: Stream) -> None:
            await self._stream(stream, origin, authority, host, port)

        link = H2Link(reader, writer, client_side=False, on_request=on_request)
        self._links.add(link)
        try:
            await link.start()
            await link.serve()
        except Gone:  # the client left before the connection's settings went out
            pass
        finally:
            self._links.discard(link)
            await origin.close()

    async def close(self) -> None:
        for link in list(self._links):
            with contextlib.suppress(Exception):
                await link.close()

    async def _stream(self, stream: Stream, origin: OriginH2, authority: str, host: str, port: int) -> None:
        method = stream.header(":method") or ""
        path = stream.header(":path") or ""
        kind = rpc(path)
        if method == "POST" and kind == "run":
            await self.run.serve(stream, origin, authority, host, port)
        elif method == "POST" and kind in _READ_WHOLE:
            await self._whole(stream, origin, host, port, method, path)
        else:
            await pipe(stream, origin, authority)

    async def _whole(
        self, stream: Stream, origin: OriginH2, host: str, port: int, method: str, path: str
    ) -> None:
        body = bytearray()
        while (chunk := await stream.read()) is not None:
            if len(body) + len(chunk) > MAX_BODY:
                await stream.respond(413, [("content-type", "application/json")])
                await stream.send(unary_error("resource_exhausted", "request body too large"))
                await stream.end()
                return
            body += chunk
        headers = [(k, v) for k, v in stream.headers if not k.startswith(":")]
        req = HttpRequest(host, port, method, path, headers, bytes(body), origin)
        try:
            resp = await self.handler.handle(req)
        except Exception as exc:  # a bug here must not leave the stream unanswered
            log.exception("cursor proxy: %s %s failed (HTTP/2)", method, path)
            msg = unary_error("internal", f"glider: {exc.__class__.__name__}")
            resp = HttpResponse(502, [(b"content-type", b"application/json")], msg)
        await _write(stream, resp)


async def _write(stream: Stream, resp: HttpResponse) -> None:
    try:
        headers = [
            (k.decode("latin-1").lower(), v.decode("latin-1"))
            for k, v in resp.headers
            if k.decode("latin-1").lower() not in HOP_BY_HOP
        ]
        await stream.respond(resp.status, headers)
        if resp.stream is None:
            if resp.body:
                await stream.send(resp.body)
        else:
            async for chunk in resp.stream:
                if chunk:
                    await stream.send(chunk)
        await stream.end()
    except Gone:
        pass
    finally:
        if resp.stream is not None:
            with contextlib.suppress(Exception):
                await resp.stream.aclose()  # type: ignore[attr-defined]
        if resp.close is not None:
            await resp.close()
