"""A fake LLM upstream for tests: a small Starlette app served by uvicorn on 127.0.0.1.

It speaks the real wire formats, written out by hand (deliberately independent of
`glider_cli.protocol`, so that it checks the translation layer instead of mirroring it):

    Anthropic  POST /v1/messages (+ ?beta=true)  JSON, or SSE with the exact event names
               POST /v1/messages/count_tokens     {"input_tokens": N}
    OpenAI     POST /v1/chat/completions          JSON, or SSE chunks ending in `data: [DONE]`
               POST /v1/responses                 JSON, or SSE: `event:` lines, `type`, `sequence_number`
               GET  /v1/models                    Anthropic shape if `anthropic-version` was sent
    Ollama     POST /api/chat                     NDJSON stream (the default) or one JSON object
               GET  /api/tags
               POST /api/show                     only with `FakeUpstream(ollama_show=True)`: without
                                                  it a probe learns no window or tools (404), so a
                                                  too-long body meets the fake's own 400
    Gemini     POST /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse, :countTokens
               (strict: see fake_wire_gemini.py)

Replies: the text is "hello from fake <protocol> <model>" (protocol is anthropic, openai_chat,
openai_responses or ollama) unless `set_reply(text=...)` says otherwise. A tool call is answered when
the request carries tools and its last user message contains `GLIDER_TOOL:<name>`, or when
`set_reply(tool=...)` forces one. `set_reply(thinking=...)` adds a thinking/reasoning block.

Strict like the real services (fake_wire_checks.py): a model the fake does not serve gets the service's
404 (Anthropic `not_found_error`, OpenAI `model_not_found`, Ollama "model 'X' not found"), malformed or
unanswered tool ids get its 400, and a body over `context_window` its context-length 400. The served models
are `FakeUpstream(models=..., ollama_models=..., context_window=...)` (kept across `reset`), or `serve(...)`
until the next `reset`; the module-scoped `fake` fixture of conftest.py reads them from a module's
`pytest.mark.fake_serves(models=[...], ollama_models=[...], context_window=N)`.

Faults (`set_fault`): an error status with the protocol's error body, a delay before the first
byte, and a stream cut after N events (the connection is dropped without a proper end). A refused
connection is simply `closed_port_url()`. Every request is recorded (`.requests`).

Usage:
    with FakeUpstream() as fake:
        httpx.post(fake.url + "/v1/messages", json=...)
        fake.requests[-1].headers["x-api-key"]
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from fake_wire import (
    DEFAULT_USAGE,
    Reply,
    ToolReply,
    anthropic_events,
    anthropic_json,
    chat_events,
    chat_json,
    error_body,
    ollama_events,
    ollama_json,
    plan_reply,
)
from fake_wire_checks import Served, models_body, refusal, show_body, tags_body
from fake_wire_gemini import GeminiError, gemini_events, gemini_json
from fake_wire_gemini import check as check_gemini
from fake_wire_gemini import error_body as gemini_error
from fake_wire_responses import responses_events, responses_json

__all__ = ["FakeUpstream", "RecordedRequest", "ToolReply", "closed_port_url", "fake_upstream"]

# What a fake serves unless told otherwise: cloud-shaped endpoints, and the models Ollama has pulled.
MODELS = ("fake-model", "fake-model-2")
OLLAMA_MODELS = ("fake-model",)


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass
class Fault:
    """One injectable failure. `times=None` keeps it until reset; otherwise it hits that many requests."""

    status: int | None = None
    message: str = "injected fault"
    delay: float = 0.0
    cut_after: int | None = None
    times: int | None = None
    paths: tuple[str, ...] = ()
    stall: float = 0.0
    # What the real service adds to an error answer: its own body (`error.code` ...) and headers.
    body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None


@dataclass
class _State:
    served: Served
    reply: Reply = field(default_factory=Reply)
    headers: dict[str, str] = field(default_factory=dict)
    fault: Fault | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    probes: list[RecordedRequest] = field(default_factory=list)


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def closed_port_url() -> str:
    """A base URL on which nothing listens (connection refused)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


# --------------------------------------------------------------------------- the app


class FakeUpstream:
    """The fake upstream server, run in a thread. Use as a context manager (or `start()`/`stop()`)."""

    def __init__(
        self,
        *,
        models: Iterable[str] = MODELS,
        ollama_models: Iterable[str] = OLLAMA_MODELS,
        context_window: int | None = None,
        ollama_show: bool = False,
    ) -> None:
        self._served = Served.of(models, ollama_models, context_window)
        self._ollama_show = ollama_show
        self._state = _State(self._served)
        self._lock = threading.Lock()
        self._stopping = False
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = self._build_app()

    # ---- control
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.requests)

    @property
    def probes(self) -> list[RecordedRequest]:
        """The requests of Glider's capability probe (not in `requests`)."""
        with self._lock:
            return list(self._state.probes)

    def set_reply(
        self,
        *,
        text: str | None = None,
        tool: ToolReply | str | None = None,
        thinking: str | None = None,
        usage: tuple[int, int] = DEFAULT_USAGE,
        event_delay: float = 0.0,
        count_tokens: int = 42,
        headers: dict[str, str] | None = None,
        at_limit: bool = False,
        stream_usage: bool = True,
    ) -> None:
        """Configure the replies (until `reset`). `tool` may be a name (arguments derived from its schema);
        `headers` are added to every model reply; `at_limit`: every reply without a tool call says it
        stopped at the output-token limit, whole or streamed, as each service does (Anthropic
        `stop_reason: max_tokens`, Chat `finish_reason: length`, Ollama `done_reason: length`,
        Responses `status: incomplete` with `incomplete_details.reason: max_output_tokens` and a
        `response.incomplete` event, Gemini `finishReason: MAX_TOKENS`); `stream_usage=False`: a Chat
        stream carries no usage even when `stream_options.include_usage` asks (llama-cpp-python)."""
        if isinstance(tool, str):
            tool = ToolReply(tool)
        with self._lock:
            self._state.reply = Reply(
                text, tool, thinking, usage, event_delay, count_tokens, at_limit, stream_usage
            )
            self._state.headers = dict(headers or {})

    def set_fault(
        self,
        *,
        status: int | None = None,
        message: str = "injected fault",
        delay: float = 0.0,
        cut_after: int | None = None,
        times: int | None = None,
        paths: tuple[str, ...] = (),
        stall: float = 0.0,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Inject a failure: `status` (error body in the protocol's shape), `delay` seconds before the
        first byte, `stall` seconds between a stream's headers and its first event, or `cut_after` N
        stream events then drop the connection. `times` limits it to the next N requests; `paths` to
        requests whose path is one of these."""
        with self._lock:
            self._state.fault = Fault(status, message, delay, cut_after, times, paths, stall, body, headers)

    def serve(
        self,
        *,
        models: Iterable[str] | None = None,
        ollama_models: Iterable[str] | None = None,
        context_window: int | None = None,
    ) -> None:
        """Change what the fake serves until the next `reset` (None keeps that part as it is)."""
        with self._lock:
            now = self._state.served
            self._state.served = Served.of(
                now.models if models is None else models,
                now.ollama_models if ollama_models is None else ollama_models,
                context_window if context_window is not None else now.context_window,
            )

    @property
    def served(self) -> Served:
        with self._lock:
            return self._state.served

    def reset(self) -> None:
        """Back to the served models it was made with, the default reply, no fault, no requests."""
        with self._lock:
            self._state = _State(self._served)

    # ---- lifecycle
    def start(self) -> FakeUpstream:
        sock = _free_socket()
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._stopping = False
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- internals
    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            fault = self._state.fault
            if fault is None or (fault.paths and path not in fault.paths):
                return None
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._state.fault = None
            return fault

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopping and time.monotonic() < end:
            await asyncio.sleep(min(0.05, max(0.0, end - time.monotonic())))

    async def _record(self, request: Request) -> tuple[RecordedRequest, Fault | None, Reply]:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest(
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            raw=raw,
        )
        with self._lock:
            # Glider's capability probe (its user agent says so) is kept apart from the requests
            # a test sends through Glider.
            probe = "capability probe" in rec.headers.get("user-agent", "")
            (self._state.probes if probe else self._state.requests).append(rec)
            reply = self._state.reply
        fault = self._take_fault(rec.path)
        if fault is not None and fault.delay:
            await self._sleep(fault.delay)
        return rec, fault, reply

    def _stream(
        self,
        events: list[bytes],
        fault: Fault | None,
        delay: float,
        media: str,
        extra: dict[str, str] | None = None,
    ) -> Response:
        cut = fault.cut_after if fault is not None else None
        stall = fault.stall if fault is not None else 0.0

        async def gen() -> AsyncIterator[bytes]:
            if stall:
                await self._sleep(stall)  # the headers are out already (Starlette sends them first)
            for n, event in enumerate(events):
                if cut is not None and n >= cut:
                    # Dropping the connection mid-body: uvicorn closes it without the chunked terminator.
                    raise ConnectionAbortedError("fake upstream: stream cut")
                if delay and n:
                    await self._sleep(delay)
                yield event

        headers = {"cache-control": "no-cache", **(extra or {})}
        return StreamingResponse(gen(), media_type=media, headers=headers)

    async def _handle(self, request: Request, protocol: str) -> Response:
        rec, fault, reply = await self._record(request)
        if fault is not None and fault.status is not None:
            err = fault.body if fault.body is not None else error_body(protocol, fault.status, fault.message)
            return JSONResponse(err, status_code=fault.status, headers=fault.headers)
        body = rec.body if isinstance(rec.body, dict) else None
        if body is None:
            return JSONResponse(error_body(protocol, 400, "body is not a JSON object"), status_code=400)
        refused = refusal(protocol, body, len(rec.raw), self.served)
        if refused is not None:
            return JSONResponse(refused[1], status_code=refused[0])
        plan = plan_reply(protocol, body, reply)
        with self._lock:
            extra = dict(self._state.headers)
        if protocol == "ollama":
            if body.get("stream", True) is False:
                return JSONResponse(ollama_json(plan), headers=extra)
            return self._stream(ollama_events(plan), fault, plan.event_delay, "application/x-ndjson", extra)
        if not body.get("stream"):
            builder = {
                "anthropic": anthropic_json,
                "openai_chat": chat_json,
                "openai_responses": responses_json,
            }
            return JSONResponse(builder[protocol](plan), headers=extra)
        if protocol == "anthropic":
            events = anthropic_events(plan)
        elif protocol == "openai_chat":
            asked = bool((body.get("stream_options") or {}).get("include_usage"))
            include = asked and reply.stream_usage
            events = chat_events(plan, include)
        else:
            events = responses_events(plan)
        return self._stream(events, fault, plan.event_delay, "text/event-stream", extra)

    def _build_app(self) -> Starlette:
        async def messages(request: Request) -> Response:
            return await self._handle(request, "anthropic")

        async def count_tokens(request: Request) -> Response:
            rec, fault, reply = await self._record(request)
            if fault is not None and fault.status is not None:
                return JSONResponse(error_body("anthropic", fault.status, fault.message), fault.status)
            body = rec.body if isinstance(rec.body, dict) else {}
            refused = refusal("anthropic", body, len(rec.raw), self.served, context=False)
            if refused is not None:
                return JSONResponse(refused[1], status_code=refused[0])
            return JSONResponse({"input_tokens": reply.count_tokens})

        async def chat(request: Request) -> Response:
            return await self._handle(request, "openai_chat")

        async def responses(request: Request) -> Response:
            return await self._handle(request, "openai_responses")

        async def ollama_chat(request: Request) -> Response:
            return await self._handle(request, "ollama")

        async def models(request: Request) -> Response:
            await self._record(request)
            return JSONResponse(models_body(self.served, anthropic="anthropic-version" in request.headers))

        async def tags(request: Request) -> Response:
            await self._record(request)
            return JSONResponse(tags_body(self.served))

        async def show(request: Request) -> Response:
            rec, _fault, _reply = await self._record(request)
            status, body = show_body(self.served, rec.body)
            return JSONResponse(body, status_code=status)

        async def gemini(request: Request) -> Response:
            rec, fault, reply = await self._record(request)
            if fault is not None and fault.status is not None:
                return JSONResponse(gemini_error(fault.status, fault.message), status_code=fault.status)
            model, _, method = request.path_params["target"].partition(":")
            try:
                check_gemini(model, rec.body, rec.headers, rec.query)
            except GeminiError as exc:
                return JSONResponse(exc.body(), status_code=exc.code)
            if method == "countTokens":
                return JSONResponse({"totalTokens": reply.count_tokens})
            if method == "generateContent":
                return JSONResponse(
                    gemini_json(model, rec.body, reply.text, reply.usage, at_limit=reply.at_limit)
                )
            if method != "streamGenerateContent":
                return JSONResponse(gemini_error(404, f"no method {method}"), status_code=404)
            events = gemini_events(model, rec.body, reply.text, reply.usage, at_limit=reply.at_limit)
            if rec.query.get("alt") != "sse":
                array = b"[" + b",\r\n".join(e[len(b"data: ") : -4] for e in events) + b"]"
                return self._stream([array], fault, 0.0, "application/json")
            return self._stream(events, fault, reply.event_delay, "text/event-stream")

        return Starlette(
            routes=[
                Route("/v1beta/models/{target}", gemini, methods=["POST"]),
                Route("/v1/messages", messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/responses", responses, methods=["POST"]),
                Route("/v1/models", models, methods=["GET"]),
                Route("/api/chat", ollama_chat, methods=["POST"]),
                Route("/api/tags", tags, methods=["GET"]),
                *([Route("/api/show", show, methods=["POST"])] if self._ollama_show else []),
            ]
        )


@pytest.fixture
def fake_upstream() -> Iterator[FakeUpstream]:
    """A fresh fake upstream per test. Use via `pytest_plugins = ["fake_upstream"]` or by importing it."""
    with FakeUpstream() as fake:
        yield fake
