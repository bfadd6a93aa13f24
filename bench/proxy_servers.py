"""The servers bench_proxy.py starts, each in a process of its own on 127.0.0.1.

proxy_servers.py fake PORT [PACE]  the fake upstream (tests/fake_upstream.py); PACE seconds between
                                   a stream's events (a model's pace: the translation TTFT figure)
proxy_servers.py floor PORT UP     a raw ASGI app on glider's own server stack (`server.serve` uvicorn
                                   options) and upstream client (`aiohttp_upstream.AiohttpUpstream`)
                                   forwarding to the fake on port UP: no routing, no records
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import uvicorn

HEADERS_OUT = {"content-type": "application/json", "anthropic-version": "2023-06-01"}


def floor_app(up: str) -> Any:
    from glider_cli.backends.aiohttp_upstream import AiohttpUpstream
    from glider_cli.backends.client import Upstream
    from glider_cli.config.settings import Timeout

    timeout = Timeout()
    state: dict[str, Upstream] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                m = await receive()
                if m["type"] == "lifespan.startup":
                    state["up"] = AiohttpUpstream()
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await state["up"].aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        key = next((v for k, v in scope["headers"] if k == b"x-api-key"), b"").decode()
        r = await state["up"].send(
            "POST", up + "/v1/messages", {**HEADERS_OUT, "x-api-key": key}, body, timeout
        )
        ctype = next((v for k, v in r.headers if k.lower() == "content-type"), "application/json").encode()
        if b'"stream":true' in body:
            await send(
                {"type": "http.response.start", "status": r.status, "headers": [(b"content-type", ctype)]}
            )
            async for chunk in r.aiter_bytes():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            await r.aclose()
            return
        data = await r.read()
        await r.aclose()
        headers = [(b"content-type", ctype), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": r.status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return app


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    if kind == "fake":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from fake_upstream import FakeUpstream

        fake = FakeUpstream(models=["claude-bench", "gpt-bench"])
        if len(sys.argv) > 3:
            fake.set_reply(event_delay=float(sys.argv[3]))
        uvicorn.run(
            fake.app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
        )
    elif kind == "floor":
        from glider_cli.server.serve import uvicorn_options

        uvicorn.run(
            floor_app(f"http://127.0.0.1:{sys.argv[3]}"), host="127.0.0.1", port=port, **uvicorn_options()
        )
    else:
        raise SystemExit(f"unknown server {kind!r}")


if __name__ == "__main__":
    main()
