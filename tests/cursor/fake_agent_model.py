"""A strict local model that issues tool calls, OpenAI-compatible (`POST /v1/chat/completions`,
`GET /v1/models`), on 127.0.0.1 in a thread: the local side of a Cursor turn Glider runs as the agent.

It answers by a script: each model request takes the next step, a function of the request body
returning `{"tool": name, "args": {...}}` (a tool call, with an id the real service would issue),
`{"text": ...}`, and optionally `"delay"` seconds before the answer (a slow model: keep-alive
comments are written meanwhile, so a caller that goes away is seen at once and counted in
`cancelled`). Past the script's end it answers "done.".

As strict as the real service where Glider can get it wrong (`fake_wire_checks.refusal`): a model it
does not serve gets 404 `model_not_found`; a `tool` message that answers no call of the assistant
message before it, a call left unanswered, a call id over 40 characters, a tool without a name get
400. Also (a real model is only given calls it can make): a step whose tool the request did not
offer is refused 400 unless the step says `"offered": False` (a model calling a tool it invented).
Every request body is recorded (`requests`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from fake_wire_checks import Served, refusal

Step = Callable[[dict[str, Any]], dict[str, Any]]
MODEL = "agent-model"


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def last_tool_result(body: dict[str, Any]) -> str:
    tools = [m for m in body["messages"] if m.get("role") == "tool"]
    return str(tools[-1]["content"]) if tools else ""


class FakeAgentModel:
    def __init__(self, models: tuple[str, ...] = (MODEL,)) -> None:
        self.served = Served.of(models, ())
        self.script: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.cancelled = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeAgentModel:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "owned_by": "fake"} for m in sorted(self.served.models)]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            return web.json_response({"error": {"message": "not JSON"}}, status=400)
        self.requests.append(body)
        refused = refusal("openai_chat", body, len(raw), self.served)
        if refused is not None:
            return web.json_response(refused[1], status=refused[0])
        n = len(self.requests) - 1
        step = self.script[n](body) if n < len(self.script) else {"text": "done."}
        tool = step.get("tool")
        if tool is not None and step.get("offered", True) and tool not in offered(body):
            err = {"message": f"tool {tool!r} was not offered", "type": "invalid_request_error"}
            return web.json_response({"error": err}, status=400)
        resp = web.StreamResponse(headers={"content-type": "text/event-stream", "cache-control": "no-cache"})
        await resp.prepare(request)
        finished = False
        try:  # a write to a caller that went away fails: counted in `cancelled`
            end = time.monotonic() + float(step.get("delay", 0))
            while time.monotonic() < end:
                await resp.write(b": keep-alive\n\n")
                await asyncio.sleep(0.05)
            for chunk in _chunks(body["model"], step):
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
            finished = True
        except ConnectionError:
            pass
        finally:
            if not finished:
                self.cancelled += 1
        return resp


def _chunks(model: str, step: dict[str, Any]) -> list[dict[str, Any]]:
    cid = "chatcmpl-" + uuid.uuid4().hex[:12]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    text = step.get("text")
    if text:
        out += [chunk({"content": p}) for p in _words(text)]
    tool = step.get("tool")
    if tool is not None:
        args = json.dumps(step.get("args", {}))
        call = {"index": 0, "id": "call_" + uuid.uuid4().hex[:20], "type": "function"}
        out.append(chunk({"tool_calls": [{**call, "function": {"name": tool, "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}))
    out.append(chunk({}, "tool_calls" if tool else "stop"))
    final = chunk({})
    final["choices"] = []
    final["usage"] = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    out.append(final)
    return out


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]
