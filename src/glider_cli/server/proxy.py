"""The request pipeline of `glider serve`: read, parse, route, forward (with fallback), relay, record.

Contract, per model request (`POST /v1/messages`, `/v1/chat/completions`, `/v1/responses`):
1. The body is read up to `server.max_body_bytes` (413 beyond), parsed as JSON (400 when it is not a
   JSON object) and turned into a ChatRequest by the protocol parser; a RequestError keeps its status.
   Unknown fields are never an error here.
2. The turn index (`turns.sticky.Stickiness`) places the request in its turn family and gives the
   router a StickyView; the router decides; `RouteDecided` (the decision's `to_dict()`, with the
   `family` placement) is emitted, preceded by `TurnOpened` only when the request opens a family (a
   new real user message) and followed by `StickyBound` when the family gets bound. The reply's tool
   calls are read as it is relayed, so a tool result returns to the side that issued the call.
3. The backend is the decision's, else the first configured for the decided side. When the client's
   protocol is the backend's (always for `origin`) the body goes through unchanged apart from
   `model` (the decision's or the backend's model; a vLLM `adapter` is the model name) and auth;
   otherwise it is translated (`server.translation`).
4. A refused connection, a timeout before the first byte, or a 408/409/429/5xx answer moves to the
   fallback backend (`BackendRegistry.fallback_for`: rule, then backend, then local -> cloud),
   recording `UpstreamFailed` and `FallbackUsed`. With no fallback the client gets its protocol's
   error with a faithful status (the upstream's, 502 for a refused connection, 504 for a timeout).
   A stream's reply starts when the upstream's does (its status and headers), as any streaming
   proxy's; only while a fallback could still take over does Glider hold it until the upstream's
   first body byte, so that an upstream that stalls or drops between its headers and its first
   event (a local server crashing in prefill) is still replaced by the fallback.
5. A whole reply's bookkeeping (usage calibration, the outcome event, who answered) runs as its
   `Reply.after`, once the reply is handed to the server. Streams are relayed chunk by chunk (no
   Content-Length). A failure after the first byte ends the stream with the protocol's error event
   and records `UpstreamFailed`; a client disconnect cancels the upstream request. The outcome
   event (`FulfilledLocal` for the local side, `OriginPassthrough` for the cloud side) is made in
   the relay's `finally`, so disconnects are recorded too, on the loop pass after it: the stream's
   last chunk goes out first. Closing events (outcome, who answered, a mid-stream failure) go to
   `closing_sink` (the server's `LoopSink.later`: written with the next drain, never on a wait).
6. Every reply carries `x-glider-route: <side>; rule=<rule>; backend=<name>`, plus
   `; fallback-from=<name>` when a fallback served it. Rule names are percent-encoded outside
   printable ASCII. A delegated turn says `delegate; rule=delegate; backend=<vendor>`.
7. Delegation (`server.delegation`): every new user turn is recorded in its workspace's continuity
   record off the request path; a turn carrying `/claude` `/cursor-agent` `/agy` (the router's
   `delegate`) runs that agent CLI and answers with its reply as an ordinary assistant message,
   streamed when the client streams.
No header value, key or Authorization is ever put into an event.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import orjson
from starlette.types import Scope

from glider_cli.backends.client import Upstream, UpstreamResponse
from glider_cli.backends.headers import response_headers, upstream_headers
from glider_cli.backends.registry import Backend, BackendRegistry, model_for
from glider_cli.domain import ChatRequest, EventSink, RouteDecision
from glider_cli.errors import BackendError, BackendTimeout, GliderError, RequestError, UpstreamStatus
from glider_cli.server import translation
from glider_cli.server.asgi import Reply
from glider_cli.server.delegation import Delegation
from glider_cli.server.replies import error_body, stream_error, upstream_message
from glider_cli.server.state import Deferred, Usage, UsageCalibrator
from glider_cli.turns.sticky import ReplyTap, Stickiness, StickyPlan

RETRY_STATUSES = frozenset({408, 409, 429})
_JSON_HEADERS = [(b"content-type", b"application/json")]
_CLIENT_PATH = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}


class Decider(Protocol):
    def decide(self, request: ChatRequest, *, sticky: Any = None) -> RouteDecision: ...


Headers = list[tuple[str, str]]  # names lower-case
# (protocol, body, headers as a dict with lower-case names) -> ChatRequest
Parser = Callable[[str, dict[str, Any], dict[str, str]], ChatRequest]


def retryable(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


@functools.lru_cache(maxsize=1024)  # a handful of (side, rule, backend) values repeat on every reply
def route_header(side: str, rule: str, backend: str, fallback_from: str | None = None) -> str:
    value = f"{side}; rule={quote(rule, safe=' !#$&()*+,-./:<=>?@[]^_`{|}~')}; backend={backend}"
    if fallback_from:
        value += f"; fallback-from={fallback_from}"
    return value


@dataclass
class Inbound:
    """One client request as read: its raw bytes are kept so passthrough can send them unchanged."""

    protocol: str
    raw: bytes
    body: dict[str, Any]
    headers: Headers
    query: str
    chat: ChatRequest


@dataclass
class _Job:
    inb: Inbound
    decision: RouteDecision
    turn_id: str | None
    plan: StickyPlan | None = None
    tap: ReplyTap | None = None


@dataclass
class _Call:
    """One attempt at one backend."""

    backend: Backend
    passthrough: bool
    url: str
    headers: dict[str, str]
    body: bytes
    model: str | None
    fallback_from: str | None = None
    started: float = field(default_factory=time.perf_counter)


class Proxy:
    """The pipeline. One per app; `upstream` is set by the lifespan before the first request."""

    def __init__(
        self,
        *,
        router: Decider,
        parse: Parser,
        registry: BackendRegistry,
        sink: EventSink,
        max_body_bytes: int,
        new_id: Callable[[], str],
        upstream: Upstream | None = None,
        sticky: Stickiness | None = None,
        delegation: Delegation | None = None,
        closing_sink: EventSink | None = None,
    ) -> None:
        self.delegation = delegation
        self.closing = closing_sink if closing_sink is not None else sink
        self.router = router
        self.parse = parse
        self.registry = registry
        self.sink = sink
        self.max_body_bytes = max_body_bytes
        self.upstream: Upstream | None = upstream
        if sticky is None:
            from glider_cli.config.settings import StickySettings, ToolFollowupSettings

            sticky = Stickiness(StickySettings(), ToolFollowupSettings(), clock=time.time, new_id=new_id)
        self.sticky = sticky
        self.usage = UsageCalibrator()
        # Header names as received -> lower-case str: clients send the same few dozen names every time.
        self._header_names: dict[bytes, str] = {}

    # ------------------------------------------------------------------------------ inbound

    def inbound(self, protocol: str, scope: Scope, raw: bytes) -> Inbound:
        """Parse one request (RequestError on a body that is not a JSON object or is malformed)."""
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise RequestError(f"request body is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise RequestError("request body must be a JSON object")
        names = self._header_names
        headers: Headers = [
            (names.get(k) or self._header_name(k), v.decode("latin-1")) for k, v in scope["headers"]
        ]
        chat = self.parse(protocol, obj, dict(headers))
        return Inbound(protocol, raw, obj, headers, scope["query_string"].decode("latin-1"), chat)

    def _header_name(self, raw: bytes) -> str:
        name = raw.decode("latin-1").lower()
        if len(self._header_names) < 512:
            self._header_names[raw] = name
        return name

    async def handle(self, protocol: str, scope: Scope, raw: bytes) -> Reply:
        try:
            inb = self.inbound(protocol, scope, raw)
        except RequestError as exc:
            return self.error(protocol, exc.status, exc.message)
        chat = inb.chat
        # The turn index places the request in its family; a bound family refuses local (turns.sticky).
        plan = self.sticky.place(chat, body=inb.body)
        try:
            decision, bound = self.sticky.settle(plan, self.router.decide(chat, sticky=plan.view))
            backend = self.registry.choose(decision.target, decision.backend)
        except GliderError as exc:
            return self.error(protocol, 500, f"routing failed: {exc.message}")
        turn_id = plan.turn_id
        if plan.placement.new_turn:
            opened: dict[str, Any] = {"ask": chat.last_user_text, "session_id": chat.session_id}
            opened.update(client=protocol, messages=len(chat.messages))
            self.sink.emit("TurnOpened", opened, turn_id=turn_id)
        # The record is built when it is written (off this request's path); a decision is immutable.
        self.sink.emit("RouteDecided", Deferred(decision.to_dict), turn_id=turn_id)
        for kind, data, tid in bound:
            self.sink.emit(kind, data, turn_id=tid)
        if self.delegation is not None:
            if plan.placement.new_turn:
                # Continuity bookkeeping: on the next loop pass, once the request is on its way.
                asyncio.get_running_loop().call_soon(self.delegation.record, chat)
            if decision.delegate:
                return await self._delegate(inb, decision.delegate, turn_id)
        # Only a request that offers tools can get tool calls back: no tap (no reply parsing) otherwise.
        tap = ReplyTap(protocol, chat.stream) if chat.has_tools else None
        job = _Job(inb, decision, turn_id, plan, tap)
        return await self._forward(job, backend)

    async def _delegate(self, inb: Inbound, flag: str, turn_id: str | None) -> Reply:
        """A `/claude` `/cursor-agent` `/agy` turn: the delegate's answer as an ordinary assistant reply."""
        from glider_cli.protocol.translate import text_reply

        assert self.delegation is not None
        text = await self.delegation.run(inb.chat, flag, turn_id)
        opts = inb.body.get("stream_options")
        usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
        model = inb.chat.model or "glider"
        out = text_reply(inb.protocol, text, model=model, stream=inb.chat.stream, include_usage=usage)
        route = route_header("delegate", "delegate", flag.lstrip("/")).encode("latin-1")
        if isinstance(out, dict):
            return Reply(200, [*_JSON_HEADERS, (b"x-glider-route", route)], orjson.dumps(out))

        async def events() -> AsyncGenerator[bytes, None]:
            for event in out:
                yield event

        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        return Reply(200, [*headers, (b"x-glider-route", route)], stream=events())

    def error(self, protocol: str, status: int, message: str, route: str | None = None) -> Reply:
        headers = list(_JSON_HEADERS)
        if route:
            headers.append((b"x-glider-route", route.encode("latin-1")))
        return Reply(status, headers, error_body(protocol, status, message))

    # ------------------------------------------------------------------------------ outbound

    def _call(
        self, inb: Inbound, decision: RouteDecision, backend: Backend, *, count_tokens: bool = False
    ) -> _Call:
        model = model_for(backend, decision.backend, decision.model, decision.adapter, inb.chat.model)
        protocol, body = inb.protocol, inb.body
        if backend.kind == "origin" or backend.wire == protocol:
            raw = inb.raw
            if model and body.get("model") != model:
                raw = orjson.dumps({**body, "model": model})
            path = _CLIENT_PATH[protocol] + ("/count_tokens" if count_tokens else "")
            url = backend.url(protocol, path) + (f"?{inb.query}" if inb.query else "")
            headers = upstream_headers(inb.headers, backend, passthrough=True, lowered=True)
            return _Call(backend, True, url, headers, raw, model or body.get("model"))
        tb = translation.request_body(protocol, body, inb.chat, backend, model)
        url = backend.url(protocol, translation.upstream_path(backend))
        headers = upstream_headers(inb.headers, backend, passthrough=False, lowered=True)
        return _Call(backend, False, url, headers, orjson.dumps(tb), tb.get("model"))

    async def _send(self, call: _Call) -> UpstreamResponse:
        assert self.upstream is not None, "the lifespan sets the upstream client"
        resp = await self.upstream.send("POST", call.url, call.headers, call.body, call.backend.timeout)
        if retryable(resp.status):
            try:
                data = await resp.read()
            except BackendError:
                data = b""
            finally:
                await resp.aclose()
            raise UpstreamStatus(f"upstream answered {resp.status}", status=resp.status, body=data)
        return resp

    async def _forward(self, job: _Job, backend: Backend) -> Reply:
        fb = job.decision.extra.get("fallback")
        rule_fallback = fb if isinstance(fb, str) else None
        tried: set[str] = set()
        current: Backend | None = backend
        last_error: GliderError | None = None
        while current is not None and current.name not in tried:
            tried.add(current.name)
            call = self._call(job.inb, job.decision, current)
            if current is not backend:
                call.fallback_from = backend.name
            try:
                resp = await self._send(call)
                if job.inb.chat.stream and resp.status < 400:
                    it = resp.aiter_bytes().__aiter__()
                    first = b""
                    nxt = self.registry.fallback_for(current, rule_fallback)
                    if nxt is not None and nxt.name not in tried:
                        # A fallback could still take over: hold the reply until the first body byte.
                        try:
                            first = await it.__anext__()
                        except StopAsyncIteration:
                            pass
                        except BaseException:
                            await resp.aclose()
                            raise
                    return self._relay(job, call, resp, it, first)
                return await self._whole(job, call, resp)
            except BackendError as exc:
                last_error = exc
                failed = _failure(current, exc, "before_first_byte")
                self.sink.emit("UpstreamFailed", failed, turn_id=job.turn_id)
                nxt = self.registry.fallback_for(current, rule_fallback)
                if nxt is not None and nxt.name not in tried:
                    reason = {"from": current.name, "to": nxt.name, "reason": _reason(exc)}
                    self.sink.emit("FallbackUsed", reason, turn_id=job.turn_id)
                current = nxt
            except asyncio.CancelledError:
                # The client went away while we waited for the upstream (see server.asgi).
                self._outcome(job, call, 0, Usage(), complete=False, disconnected=True)
                raise
        assert last_error is not None
        route = route_header(job.decision.target, job.decision.rule, backend.name)
        if isinstance(last_error, UpstreamStatus):
            status, message = last_error.status, upstream_message(last_error.body, last_error.message)
        else:
            status, message = (504 if isinstance(last_error, BackendTimeout) else 502), last_error.message
        return self.error(job.inb.protocol, status, message, route)

    async def _whole(self, job: _Job, call: _Call, resp: UpstreamResponse) -> Reply:
        try:
            data = await resp.read()
        finally:
            await resp.aclose()
        chat = job.inb.chat
        status = resp.status
        served: bytes | None = None
        route = route_header(call.backend.side, job.decision.rule, call.backend.name, call.fallback_from)
        if call.passthrough:
            headers = response_headers(resp.raw_headers)
            headers.append((b"x-glider-route", route.encode("latin-1")))
            reply = Reply(status, headers, data)
            served = data
        elif status >= 400:
            msg = upstream_message(data, f"upstream answered {status}")
            reply = self.error(job.inb.protocol, status, msg, route)
        else:
            out = translation.response_body(job.inb.protocol, call.backend, data, call.model or chat.model)
            body = orjson.dumps(out)
            reply = Reply(200, [*_JSON_HEADERS, (b"x-glider-route", route.encode("latin-1"))], body)
            served = body

        def bookkeeping() -> None:
            # After the reply is handed over (server.asgi), before the connection's next request.
            usage = Usage()
            usage.feed(data)
            self._closed(job, call, status, usage, complete=status < 400, served=served)

        reply.after = bookkeeping
        return reply

    def _relay(
        self, job: _Job, call: _Call, resp: UpstreamResponse, it: AsyncIterator[bytes], first: bytes
    ) -> Reply:
        inb = job.inb
        usage = Usage()
        model = call.model or inb.chat.model
        convert = (
            None
            if call.passthrough
            else translation.stream_converter(inb.protocol, call.backend, model, inb.body)
        )

        ended = False  # the upstream response closed and the bookkeeping scheduled, exactly once

        def end(failure: GliderError | None, complete: bool) -> None:
            nonlocal ended
            ended = True
            gone = failure is None and not complete

            def closed() -> None:
                status = resp.status
                self._closed(job, call, status, usage, complete=complete, disconnected=gone, failure=failure)

            asyncio.get_running_loop().call_soon(closed)

        async def gen() -> AsyncGenerator[bytes, None]:
            complete = False
            failure: GliderError | None = None
            try:
                chunk = first
                while True:
                    out = chunk if convert is None else convert.feed(chunk)
                    if out:
                        try:
                            yield out  # the client first; usage and tool calls are read once it is out
                        finally:
                            usage.feed(chunk)
                            if job.tap is not None:
                                job.tap.feed(out)
                    else:
                        usage.feed(chunk)
                    try:
                        chunk = await it.__anext__()
                    except StopAsyncIteration:
                        break
                if convert is not None:
                    tail = convert.close()
                    if tail:
                        if job.tap is not None:
                            job.tap.feed(tail)
                        yield tail
                complete = True
            except BackendError as exc:
                failure = exc
                message = f"upstream {call.backend.name} failed mid-stream: {exc.message}"
                yield stream_error(inb.protocol, message) if convert is None else convert.error(message)
            finally:
                # Runs on completion, on upstream failure and when the client went away (the stream
                # is closed or its task cancelled): closing the upstream response cancels its work.
                if not ended:
                    await resp.aclose()
                    end(failure, complete)

        async def close() -> None:
            # A generator that never started runs no `finally`: when the reply failed before its
            # first chunk (the client left while its headers were sent), close the upstream here.
            if not ended:
                await resp.aclose()
                end(None, False)

        route = route_header(call.backend.side, job.decision.rule, call.backend.name, call.fallback_from)
        if call.passthrough:
            headers = response_headers(resp.raw_headers)
        else:
            headers = [(b"content-type", translation.stream_media_type(inb.protocol).encode())]
        names = {k for k, _ in headers}
        if b"content-type" not in names:
            headers.append((b"content-type", b"text/event-stream"))
        if b"cache-control" not in names:  # an upstream's own (Anthropic sends no-cache) is kept, once
            headers.append((b"cache-control", b"no-cache"))
        headers.append((b"x-glider-route", route.encode("latin-1")))
        return Reply(resp.status, headers, stream=gen(), close=close)

    def _closed(
        self,
        job: _Job,
        call: _Call,
        status: int,
        usage: Usage,
        *,
        complete: bool,
        disconnected: bool = False,
        failure: GliderError | None = None,
        served: bytes | None = b"",
    ) -> None:
        """A reply's bookkeeping, once it is out (whole replies: `Reply.after`; streams: the loop pass
        after the relay ended): a mid-stream failure, usage calibration, the outcome, who answered
        (skipped when `served` is None: an error reply in another protocol answered nothing)."""
        if failure is not None:
            failed = _failure(call.backend, failure, "mid_stream")
            self.closing.emit("UpstreamFailed", failed, turn_id=job.turn_id)
        self.usage.record(call.backend.name, job.inb.chat.estimated_tokens, usage.input_tokens)
        self._outcome(job, call, status, usage, complete=complete, disconnected=disconnected)
        if served is not None:
            self._served(job, call, served, complete=complete)

    def _outcome(
        self, job: _Job, call: _Call, status: int, usage: Usage, *, complete: bool, disconnected: bool = False
    ) -> None:
        data: dict[str, Any] = {
            "backend": call.backend.name,
            "model": call.model,
            "status": status,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "ms": round((time.perf_counter() - call.started) * 1000, 1),
            "complete": complete,
        }
        if call.fallback_from:
            data["fallback_from"] = call.fallback_from
        if disconnected:
            data["client_disconnected"] = True
        kind = "FulfilledLocal" if call.backend.side == "local" else "OriginPassthrough"
        self.closing.emit(kind, data, turn_id=job.turn_id)

    def _served(self, job: _Job, call: _Call, data: bytes, *, complete: bool) -> None:
        """Tell the turn index who answered and which tool calls the reply issued (turns.sticky)."""
        if job.plan is None:
            return
        calls = []
        if job.tap is not None:
            job.tap.feed(data)
            calls = job.tap.close()
        side, name = call.backend.side, call.backend.name
        for kind, ev, tid in self.sticky.served(job.plan, side, name, call.model, calls, complete=complete):
            self.closing.emit(kind, ev, turn_id=tid)

    # ------------------------------------------------------------------------------ count_tokens

    async def count_tokens(self, scope: Scope, raw: bytes) -> Reply:
        """Asked of the routed backend when it speaks Anthropic (anthropic, origin), else estimated
        from bytes/4 corrected by the input usage this backend has reported so far."""
        protocol = "anthropic"
        try:
            inb = self.inbound(protocol, scope, raw)
            plan = self.sticky.place(inb.chat, body=inb.body, count_tokens=True)
            decision = self.router.decide(inb.chat, sticky=plan.view)
            backend = self.registry.choose(decision.target, decision.backend)
        except RequestError as exc:
            return self.error(protocol, exc.status, exc.message)
        except GliderError as exc:
            return self.error(protocol, 500, exc.message)
        route = route_header(backend.side, decision.rule, backend.name).encode("latin-1")
        if backend.kind in ("anthropic", "origin"):
            call = self._call(inb, decision, backend, count_tokens=True)
            try:
                resp = await self._send(call)
                try:
                    data = await resp.read()
                finally:
                    await resp.aclose()
                if resp.status < 400:
                    usage = Usage()
                    usage.feed(data)
                    self.usage.record(backend.name, inb.chat.estimated_tokens, usage.input_tokens)
                    return Reply(resp.status, [*_JSON_HEADERS, (b"x-glider-route", route)], data)
            except BackendError:
                pass  # the upstream could not count: estimate below, as for backends that cannot
        n = self.usage.estimate(backend.name, inb.chat.estimated_tokens)
        headers = [*_JSON_HEADERS, (b"x-glider-route", route), (b"x-glider-estimate", b"1")]
        return Reply(200, headers, orjson.dumps({"input_tokens": n}))


def _failure(backend: Backend, exc: GliderError, stage: str) -> dict[str, Any]:
    return {
        "backend": backend.name,
        "side": backend.side,
        "status": exc.status if isinstance(exc, UpstreamStatus) else None,
        "error": exc.message,
        "stage": stage,
    }


def _reason(exc: GliderError) -> str:
    if isinstance(exc, UpstreamStatus):
        return f"status {exc.status}"
    if isinstance(exc, BackendTimeout):
        return "timeout"
    return "unreachable"
