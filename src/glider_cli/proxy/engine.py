"""The request engine of `glider serve`: read, parse, route, forward (with fallback), relay, record.

Contract, per model request (`POST /v1/messages`, `/v1/chat/completions`, `/v1/responses`):
1. The body is read up to `server.max_body_bytes` (413 beyond), parsed as JSON (400 when it is not a
   JSON object) and turned into a ChatRequest by the protocol parser; a RequestError keeps its status.
   Unknown fields are never an error here.
2. The core is called twice per request (`turns.lifecycle.Turns`): `open` places the request in its
   turn family, decides and binds, and its events (`TurnOpened` for a new user turn, `RouteDecided`,
   `StickyBound`) are emitted at once; `close`, once the reply is out, gives the closing events (the
   outcome, who answered and the tool calls it issued, read from the reply as it is relayed, so a
   tool result returns to the side that issued the call). A title request that quotes a prompt no
   family has opened with yet (Claude Code sends both at once) is held up to
   `routing.sticky.title_wait_seconds` for that prompt's request to be opened (`server.title_wait`),
   so it joins the prompt's family and goes where its turn goes; past the bound it is opened as is.
   A request that arrives while the first probe of the local backends is in flight (the server
   listens before it is over) waits for it (`LocalPath.ready`), so that its capability gate is built
   from what the probe found; after that, the check is one attribute test.
3. The backend is the decision's, else the first configured for the decided side. When the client's
   protocol is the backend's (always for `origin`) the body goes through unchanged apart from
   `model` (the decision's or the backend's model; a vLLM `adapter` is the model name) and auth;
   otherwise it is translated (`protocol.translate`, `protocol.translate_stream`).
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
7. Delegation (`proxy.delegation`): every new user turn is recorded in its workspace's continuity
   record off the request path; a turn carrying `/claude` `/cursor-agent` `/agy` (the router's
   `delegate`) runs that agent CLI and answers with its reply as an ordinary assistant message,
   streamed when the client streams.
8. Strategies: a decision whose strategy is `fan_out`, `pipeline` or `ensemble`, with that strategy's
   `orchestration.<strategy>.enabled`, gets its plan from `Turns.open` (the planner the app gave Turns;
   the plan is in the `RouteDecided` record) and is served by `proxy.strategies.orchestrator.Orchestrator`;
   every other request as above.
9. count_tokens (`count_tokens(protocol, scope, raw)`, Anthropic's `/v1/messages/count_tokens` and
   Gemini's `:countTokens`): routed like a request (placed, decided, never opened); a backend that can
   count in the client's protocol is asked, any other (or one that fails) gets the bytes/4 estimate
   corrected by the input usage that backend has reported (`x-glider-estimate: 1`).
No header value, key or Authorization is ever put into an event.

10. A door that parses its own requests (the Cursor door, `cursor.adapter`) drives the same turn
   through `open` (its events recorded, the door's own fields in its `RouteDecided` record), `local_chat`
   (one call of an OpenAI Chat body to a local backend, read through the one stream loop,
   `proxy.stream_reply.ReplyChunks`), `failed` and `close` (the closing events, the observer told).

`Engine(...)` is given everything it uses (turns, parser, registry, sinks, upstream client, breakers,
local path, delegation, orchestration settings, observers) and builds its `proxy.ledger.Ledger` (where
a request's events are recorded, the observers told) and its `proxy.dispatch.Dispatch` (attempts,
fallback, relay, bookkeeping), which it and the strategies use through Dispatch's public methods.
Nothing here imports Starlette or uvicorn: `server/` reads the body and sends the `proxy.reply.Reply`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from glider_cli.backends.breaker import Breakers
from glider_cli.backends.client import Upstream
from glider_cli.backends.registry import Backend, BackendRegistry, model_for
from glider_cli.config.orchestration_settings import OrchestrationSettings
from glider_cli.domain import ChatRequest, EventSink
from glider_cli.errors import BackendError, GateRefused, GliderError, RequestError
from glider_cli.protocol import gemini_request
from glider_cli.protocol.reply_tap import ReplyTap
from glider_cli.protocol.structured import asks_for_schema
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.calls import JSON_HEADERS, Headers, Inbound, Job, Observed, route_header
from glider_cli.proxy.delegate_reply import Running
from glider_cli.proxy.delegation import Delegation
from glider_cli.proxy.dispatch import Dispatch
from glider_cli.proxy.failed import do_not_retry
from glider_cli.proxy.ledger import Ledger, Observer, RefusedObserver
from glider_cli.proxy.local_path import LocalPath
from glider_cli.proxy.reply import Reply, Scope
from glider_cli.proxy.stream_reply import ReplyChunks
from glider_cli.proxy.title_wait import PromptWaits
from glider_cli.router.decide import Gate
from glider_cli.store.eventlog.events import BACKEND_CLOSED, BACKEND_OPENED
from glider_cli.turns.lifecycle import Decider, Opened, Served, Turns
from glider_cli.turns.pack import PACKABLE
from glider_cli.values import replace

if TYPE_CHECKING:
    from glider_cli.proxy.strategies.orchestrator import Orchestrator

__all__ = ["Decider", "Engine", "Parser", "app_breakers"]

# (protocol, body, headers as a dict with lower-case names) -> ChatRequest
Parser = Callable[[str, dict[str, Any], dict[str, str]], ChatRequest]


def app_breakers(registry: BackendRegistry, sink: EventSink) -> Breakers:
    """The circuit breakers of the app's backends (`backends.breaker`), their changes recorded to `sink`:
    built where the app is assembled and given to the engine and to the local path, whose probes that
    answer close an open one (`LocalPath(reached=breakers.probed)`)."""
    return Breakers(
        {b.name: b.breaker for b in registry.backends()},
        on_change=lambda state, data: sink.emit(BACKEND_OPENED if state == "open" else BACKEND_CLOSED, data),
    )


class Engine:
    """The engine. One per app; everything it uses is given here (see the module contract)."""

    def __init__(
        self,
        *,
        turns: Turns,
        parse: Parser,
        registry: BackendRegistry,
        sink: EventSink,
        max_body_bytes: int,
        upstream: Upstream,
        delegation: Delegation | None = None,
        closing_sink: EventSink | None = None,
        breakers: Breakers | None = None,
        local: LocalPath | None = None,
        orchestration: OrchestrationSettings | None = None,
        observer: Observer | None = None,
        refused_observer: RefusedObserver | None = None,
    ) -> None:
        self.local = local
        self.delegation = delegation
        self.turns = turns
        self.parse = parse
        self.registry = registry
        # Skips a backend that keeps failing (`backends.breaker`; `app_breakers`: the app's, which its
        # local path's probes can close too).
        self.breakers = breakers if breakers is not None else app_breakers(registry, sink)
        # Where a request's events are recorded and the observers told (the one place: `proxy.ledger`).
        self.ledger = Ledger(
            turns, sink, later=closing_sink, observer=observer, refused_observer=refused_observer
        )
        self.max_body_bytes = max_body_bytes
        self.upstream = upstream
        self.waits = PromptWaits()  # titles held for the prompt they quote
        self.dispatch = Dispatch(
            turns=turns,
            registry=registry,
            upstream=upstream,
            ledger=self.ledger,
            local=local,
            breakers=self.breakers,
        )
        self.error = self.dispatch.error
        # Header names as received -> lower-case str: clients send the same few dozen names every time.
        self._header_names: dict[bytes, str] = {}
        self._orchestration = orchestration
        self._orchestrator: Orchestrator | None = None

    @property
    def orchestrator(self) -> Orchestrator | None:
        """What serves a strategy's plan (`proxy.strategies.orchestrator`): imported and built on first use,
        so a start without a strategy in play does not load it (issue 29)."""
        if self._orchestrator is None and self._orchestration is not None:
            from glider_cli.proxy.strategies.orchestrator import Orchestrator

            self._orchestrator = Orchestrator(self.dispatch, self._orchestration)
        return self._orchestrator

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
        query = scope["query_string"].decode("latin-1")
        if protocol == "gemini":  # Gemini names the model and the method in the path, not in the body
            obj = gemini_request.frame_request(obj, scope.get("path", ""), query)
        chat = self.parse(protocol, obj, dict(headers))
        return Inbound(protocol, raw, obj, headers, query, chat, scope.get("path", ""))

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
        wait = self.turns.title_wait
        if wait > 0:
            awaited = self.turns.awaited_prompt(chat, inb.body)
            if awaited is not None:
                await self.waits.wait(awaited, wait)
        local = self.local
        if local is not None and local.probing:  # the first probe of the local backends is in flight
            await local.ready()
        try:
            gate = self._gate(inb) if local is not None and local.gates else None
            opened = self.turns.open(chat, inb.body, gate=gate)
            decision = opened.decision
            backend = self.registry.choose(decision.target, decision.backend)
        except GateRefused as exc:
            return self._refused(inb, exc)
        except GliderError as exc:
            return self.error(protocol, 500, f"routing failed: {exc.message}")
        new_turn = opened.new_turn
        if new_turn and self.waits.waiting:
            self.waits.arrived(self.turns.prompt_key(opened))
        # A strategy that operates (`orchestration.<strategy>.enabled`): Turns' planner made its plan.
        plan = opened.strategy
        self.ledger.record(opened.events)
        if self.delegation is not None:
            if new_turn:
                # Continuity bookkeeping: on the next loop pass, once the request is on its way.
                asyncio.get_running_loop().call_soon(self.delegation.record, chat)
            if decision.delegate:
                return await self._delegate(inb, decision.delegate, opened.turn_id)
            answered = self.delegation.answer(chat, opened.turn_id) if new_turn else None
            if answered is not None:  # `/allow <token>` or `/deny <token>` (delegate.permissions)
                route = route_header("delegate", "permission", answered[0]).encode("latin-1")
                return self._answer(inb, answered[1], route)
        # Only a request that offers tools can get tool calls back: no tap (no reply parsing) otherwise.
        tap = ReplyTap(protocol, chat.stream, request=chat) if chat.has_tools else None
        if plan is not None and self.orchestrator is not None:
            return await self.orchestrator.run(Job(inb, opened, tap), plan, backend)
        return await self.dispatch.forward(Job(inb, opened, tap), backend)

    def _refused(self, inb: Inbound, exc: GateRefused) -> Reply:
        """A request the capability gate refused: recorded like any other (`turns.lifecycle`), printed,
        and answered with Glider's own 400 that names the gate and tells the client not to retry."""
        self.ledger.refused(inb, exc)
        said = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
        message = f"Glider (the router, not the model provider) refused this request: {said}"
        route = route_header("refused", exc.rule or "gate", exc.backend or "-")
        status, extra = do_not_retry(inb.protocol, 400)
        reply = self.error(inb.protocol, status, message, route)
        reply.headers.extend(extra)
        return reply

    def _gate(self, inb: Inbound) -> Gate | None:
        """The capability gate for this request, sized by the pack each local backend would get."""
        local = self.local
        if local is None or not local.gates:  # no local backend has a limit the gate checks
            return None

        def size(name: str) -> int:
            assert local is not None
            packed = local.packed(inb.protocol, inb.body, inb.chat, name, inb.packs)
            return packed.report.tokens_after if packed is not None else inb.chat.estimated_tokens

        packing = local.settings.transform.local_context and inb.protocol in PACKABLE
        structured = asks_for_schema(inb.protocol, inb.body)
        return local.gate(inb.chat, size if packing else None, structured=structured)

    async def _delegate(self, inb: Inbound, flag: str, turn_id: str | None) -> Reply:
        """A `/claude` `/cursor-agent` `/agy` turn: the delegate's answer as an ordinary assistant reply,
        its head sent at once and kept alive while the run goes on (`proxy.delegate_reply`)."""
        from glider_cli.proxy.delegate_reply import reply

        assert self.delegation is not None
        running = self.delegation.begin(inb.chat, flag, turn_id)
        route = route_header("delegate", "delegate", flag.lstrip("/")).encode("latin-1")
        return reply(inb.protocol, inb.chat, inb.body, running, [(b"x-glider-route", route)])

    def _answer(self, inb: Inbound, running: Running, route: bytes) -> Reply:
        from glider_cli.proxy.delegate_reply import reply

        return reply(inb.protocol, inb.chat, inb.body, running, [(b"x-glider-route", route)])

    # ------------------------------------------------------------------------------ a door's own turn

    def open(
        self,
        chat: ChatRequest,
        body: Mapping[str, Any] | None = None,
        *,
        gate: Gate | None = None,
        decided: Mapping[str, Any] | None = None,
    ) -> Opened:
        """Open a turn for a request a door parsed: placed in its family, decided, bound, its events
        recorded at once (`decided`: the door's own fields for its `RouteDecided` record). Raises
        GateRefused or GliderError, recording nothing."""
        return self.ledger.open(chat, body, gate=gate, decided=decided)

    def close(self, opened: Opened, served: Served, *, client: str) -> None:
        """Close a door's turn with what was served: its closing events recorded (with the next drain),
        then the observer told (`Observed(client, opened)`)."""
        self.ledger.close(Observed(client, opened), served)

    def failed(self, opened: Opened, backend: Backend, exc: BackendError, *, to: str | None) -> None:
        """A local backend that failed before its first byte (`UpstreamFailed`, marked down), and
        `FallbackUsed` when `to` (the door's own upstream) takes over."""
        self.dispatch.failed(opened.turn_id, backend, exc, to=to, reason=exc.message, down=True)

    def emit(self, kind: str, data: Mapping[str, Any], turn_id: str | None) -> None:
        """One event of a door's own about a turn (the Cursor door's `ToolStepDecided`)."""
        self.ledger.emit(kind, data, turn_id)

    def choose(self, side: str, name: str | None = None) -> Backend:
        """The backend for `side` (`name`, else the side's default: `BackendRegistry.choose`)."""
        return self.registry.choose(side, name)

    def backends(self) -> tuple[Backend, ...]:
        """Every configured backend."""
        return self.registry.backends()

    @property
    def local_only(self) -> bool:
        """`routing.local_only` as the server runs it now (a reload updates it)."""
        return self.turns.local_only

    @property
    def tool_lists(self) -> tuple[frozenset[str], frozenset[str]]:
        """`routing.tool_followup` as the server runs it now (a reload swaps it): allow, deny."""
        return self.turns.tool_lists

    def can_call_tools(self, backend: Backend) -> bool:
        """Unknown counts as yes (as the capability gate has it); `tools: false` or a probe's no: no."""
        return self.local is None or self.local.calls_tools(backend.name)

    def model_of(self, opened: Opened, backend: Backend) -> str | None:
        """The model `backend` is asked for on `opened`'s decision when the request names none (the
        decision's model or adapter, else the backend's: `proxy.outgoing`'s choice)."""
        d = opened.decision
        return model_for(backend, d.backend, d.model, d.adapter, "") or None

    async def local_chat(
        self,
        opened: Opened,
        backend: Backend,
        body: dict[str, Any],
        usage: Usage,
        *,
        tools: tuple[str, ...] = (),
        tap: ReplyTap | None = None,
    ) -> AsyncIterator[bytes]:
        """One call of a streamed OpenAI Chat `body` a door built to the local `backend` (a local agent
        loop's step when `tools` names the tools it offers: packed with exactly those, the episodes
        and a short system part; else packed as a client's request is): the request built as every
        call is (`Dispatch.call`: model, pack, translation), its reply's chunks in OpenAI Chat SSE as
        they stream, read through the one stream loop (`ReplyChunks`: `usage` and `tap` fed).
        BackendError when the backend fails before answering, answers an error or says it failed."""
        packed = self.local.step_pack(opened.chat, body, tools) if tools and self.local is not None else None
        sent = packed if packed is not None else body
        chat = replace(opened.chat, model="")
        inb = Inbound(
            "openai_chat", orjson.dumps(sent), sent, [], "", chat, "/v1/chat/completions", pack=not tools
        )
        call = self.dispatch.call(inb, opened.decision, backend)
        resp = await self.dispatch.send(call)
        if resp.status >= 400:
            data = await resp.read()
            await resp.aclose()
            raise BackendError(f"local backend {backend.name} answered {resp.status}: {data[:200]!r}")
        it = resp.aiter_bytes().__aiter__()
        model = call.model or ""
        reader = ReplyChunks(
            call, it, b"", protocol="openai_chat", model=model, body=sent, usage=usage, tap=tap
        )
        try:
            async with contextlib.aclosing(reader.chunks()) as chunks:
                async for out in chunks:
                    yield out
            if reader.failure is not None:
                raise BackendError(f"local backend {backend.name} failed: {reader.failure}")
        finally:
            await resp.aclose()
        if self.local is not None:
            self.local.answered(backend.name)

    # ------------------------------------------------------------------------------ count_tokens

    async def count_tokens(self, protocol: str, scope: Scope, raw: bytes) -> Reply:
        """Routed like a request (placed, decided, never opened). Asked of the routed backend when it
        can count in the client's protocol (`COUNTS_IN`), else estimated from bytes/4 corrected by the
        input usage this backend has reported so far; the count in the protocol's shape (`_COUNT`)."""
        try:
            inb = self.inbound(protocol, scope, raw)
            opened = self.turns.open(inb.chat, inb.body, count_tokens=True)
            decision = opened.decision
            backend = self.registry.choose(decision.target, decision.backend)
        except RequestError as exc:
            return self.error(protocol, exc.status, exc.message)
        except GliderError as exc:
            return self.error(protocol, 500, exc.message)
        route = (b"x-glider-route", route_header(backend.side, decision.rule, backend.name).encode("latin-1"))
        if backend.kind in COUNTS_IN.get(protocol, ()):
            call = self.dispatch.call(inb, decision, backend, count_tokens=True)
            try:
                resp = await self.dispatch.send(call)
                try:
                    data = await resp.read()
                finally:
                    await resp.aclose()
            except BackendError:
                pass  # the upstream could not count: estimate below, as for backends that cannot
            else:
                if resp.status < 400:
                    counted = _counted(protocol, data)
                    served = Served(backend.name, backend.side, call.model, resp.status, input_tokens=counted)
                    self.turns.close(opened, served)
                    return Reply(resp.status, [*JSON_HEADERS, route], data)
        n = self.turns.estimate(backend.name, inb.chat.estimated_tokens)
        headers = [*JSON_HEADERS, route, (b"x-glider-estimate", b"1")]
        return Reply(200, headers, orjson.dumps({_COUNT[protocol]: n}))


# The backend kinds that count tokens in the client's protocol; the estimate's key in its reply.
COUNTS_IN = {"anthropic": ("anthropic", "origin"), "gemini": ("origin",)}
_COUNT = {"anthropic": "input_tokens", "gemini": "totalTokens"}


def _counted(protocol: str, data: bytes) -> int | None:
    """The input tokens a backend's count_tokens answer reports."""
    if protocol == "anthropic":
        usage = Usage()
        usage.feed(data)
        return usage.input_tokens
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    n = obj.get("totalTokens") if isinstance(obj, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None
