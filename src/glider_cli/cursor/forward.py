"""Forwarding one intercepted HTTP/1.1 request to Cursor's server, its answer relayed as it comes.

`relay(network, request)` sends the request with its headers as the client sent them (hop-by-hop
aside: `x-cursor-checksum`, `authorization` and the rest go on untouched) and its body byte for byte,
and answers with the server's status, headers and body. A streaming answer (a Connect stream:
`application/connect+proto`, `application/grpc-web+proto`, or RunSSE's `text/event-stream`) is
re-framed: each whole envelope goes to the client as soon as its last byte is in, and the bytes of an
unfinished one are forwarded when the stream ends, never dropped. Any other body is relayed chunk
by chunk. A server that cannot be reached is answered 502 with a Connect error (`unavailable`). A
request that came over HTTP/2 (`req.origin`) goes on over HTTP/2 (`origin_h2.OriginH2.exchange`).
`on_end(status, complete)` is called once the answer is over (recording the outcome).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import aiohttp

from glider_cli.cursor.front import HttpRequest, HttpResponse
from glider_cli.cursor.upstream import Network, forward_headers, response_headers
from glider_cli.protocol.cursor.framing import STREAM_TYPES, FrameReader
from glider_cli.protocol.cursor.writers import unary_error

End = Callable[[int, bool, float], None]


def _url(req: HttpRequest) -> str:
    host = f"[{req.host}]" if ":" in req.host else req.host
    return f"https://{host}:{req.port}{req.path}"


def unavailable(message: str, status: int = 502) -> HttpResponse:
    return HttpResponse(status, [(b"content-type", b"application/json")], unary_error("unavailable", message))


async def relay(network: Network, req: HttpRequest, on_end: End | None = None) -> HttpResponse:
    if req.origin is not None:  # it came over HTTP/2: it goes on over HTTP/2
        return await req.origin.exchange(req, on_end)
    started = time.perf_counter()
    session = network.session()
    try:
        resp = await session.request(
            req.method,
            _url(req),
            headers=forward_headers(req.headers),
            data=req.body if req.body or req.method not in ("GET", "HEAD") else None,
            allow_redirects=False,
        )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        if on_end is not None:
            on_end(502, False, (time.perf_counter() - started) * 1000)
        return unavailable(f"glider could not reach {req.host}: {exc.__class__.__name__}")
    ctype = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    framed = ctype in STREAM_TYPES

    async def body() -> AsyncIterator[bytes]:
        complete = False
        reader = FrameReader() if framed else None
        try:
            async for chunk in resp.content.iter_any():
                if reader is None:
                    yield chunk
                    continue
                for env in reader.feed(chunk):
                    yield env.raw
            if reader is not None:
                rest = reader.close()
                if rest:
                    yield rest
            complete = True
        except (TimeoutError, aiohttp.ClientError):
            pass
        finally:
            resp.release()
            if on_end is not None:
                on_end(resp.status, complete, (time.perf_counter() - started) * 1000)

    return HttpResponse(resp.status, response_headers(resp.raw_headers), stream=body())
