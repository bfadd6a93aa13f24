"""Dispatch: one attempt per backend, fallback, the reply relayed, its bookkeeping.

    dispatch = Dispatch(turns=, registry=, upstream=, ledger=, local=, breakers=)
    call = dispatch.call(inb, decision, backend)      # the request as that backend gets it
    resp = await dispatch.send(call)                  # UpstreamStatus for a status that falls back
    reply = await dispatch.forward(job, backend)      # send with fallback, relay (whole or a stream)
    dispatch.failed(turn_id, backend, exc, to=, reason=)  # an attempt that failed before its first byte
    dispatch.finish(job, call, status, usage, complete=...)  # a reply's closing events, once it is out
    dispatch.backend(name), dispatch.estimate(backend, tokens), dispatch.bind_cloud(opened),
    dispatch.sent_tokens(job, call)                   # what the strategies ask of the engine besides

`proxy.engine.Engine` (which reads and routes the request) and `proxy.strategies` (member calls, the
ordinary call when every member failed) use it through these methods only; its events go through
the engine's `proxy.ledger.Ledger`. See the contract of `proxy.engine` (points 3 to 6) for what a
request's attempts, fallback and relay do. The fallback
policy: `BackendRegistry.fallback_for` (rule, then backend, then local -> cloud), never from the local
side to the cloud while `routing.local_only` is on (`Turns.local_only`, which a reload updates), nor
for a request an explicit `/local` keeps on the machine unless its rule names that cloud backend as
its `fallback` (`proxy.held_local`: the client's error then says so). A continuation the turn index
takes off local (`StickyPlan.off_local`: its local replies kept stopping at the output-token limit)
starts at the local backend's fallback (`FallbackUsed` with that reason), under the same policy.

A translated reply names the model the client asked for (its UI stays as it is); the one that answered
is in `x-glider-route` (`; model=<name>`). A translated Anthropic stream's `message_start` has this
backend's calibrated input estimate (`x-glider-estimate: message_start`; `message_delta` has the real
counts). A count a translated stream's backend never reported is Glider's estimate, marked in the usage
(`protocol.encoder_base`). A fallback to the other side keeps its own model, not the decision's. A Gemini
passthrough goes to the client's path with the model replaced, the body unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from glider_cli.backends.breaker import Breakers
from glider_cli.backends.client import Upstream, UpstreamResponse
from glider_cli.backends.failure import BufferedResponse, local_fallback_cause, retryable
from glider_cli.backends.headers import response_headers
from glider_cli.backends.registry import Backend, BackendRegistry
from glider_cli.domain import RouteDecision
from glider_cli.errors import (
    BackendError,
    BackendOpen,
    GliderError,
    ReplyUnusable,
    RequestError,
    UpstreamStatus,
)
from glider_cli.protocol.error_bodies import error_bytes, upstream_text
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.calls import (
    JSON_HEADERS,
    Call,
    Inbound,
    Job,
    failure_record,
    fallback_reason,
    reply_route,
    route_header,
)
from glider_cli.proxy.escalate import Escalation
from glider_cli.proxy.failed import all_failed, no_retry
from glider_cli.proxy.held_local import barred_note, cloud_barred
from glider_cli.proxy.ledger import Ledger
from glider_cli.proxy.local_path import LocalPath
from glider_cli.proxy.outgoing import build_call
from glider_cli.proxy.reply import Reply
from glider_cli.proxy.stream_reply import stream_reply
from glider_cli.store.eventlog.events import FALLBACK_USED, UPSTREAM_FAILED
from glider_cli.turns.calibration import estimates_output
from glider_cli.turns.lifecycle import Opened, Served, Turns

# Failures that say nothing new of whether a local server is up (it answered; it was not tried).
_NOT_DOWN = (UpstreamStatus, BackendOpen)


class Dispatch:
    """Attempts, fallback, relay and bookkeeping (see the module contract). One per app."""

    def __init__(
        self,
        *,
        turns: Turns,
        registry: BackendRegistry,
        upstream: Upstream,
        ledger: Ledger,
        local: LocalPath | None = None,
        breakers: Breakers | None = None,
    ) -> None:
        self.turns = turns
        self.registry = registry
        self.upstream = upstream
        # Where its events go (opening ones at once, closing ones with the next drain), and the observer.
        self.ledger = ledger
        self.local = local
        # Skips a backend that keeps failing (`backends.breaker`); the app gives the one set it probes.
        self.breakers = breakers if breakers is not None else Breakers({})
        # Checks a local reply before it goes out and sends an unusable one on (`proxy.escalate`).
        self.escalation = Escalation(turns, ledger)

    def error(self, protocol: str, status: int, message: str, route: str | None = None) -> Reply:
        headers = list(JSON_HEADERS)
        if route:
            headers.append((b"x-glider-route", route.encode("latin-1")))
        return Reply(status, headers, error_bytes(protocol, status, message))

    def _next(self, current: Backend, decision: RouteDecision) -> Backend | None:
        """The fallback after `current`; with `routing.local_only`, never from the local side to the
        cloud, nor for a request an explicit `/local` keeps local (`proxy.held_local`)."""
        nxt = self.registry.fallback_for(current, decision.fallback)
        if nxt is not None and self.turns.local_only and current.side == "local" and nxt.side != "local":
            return None
        if cloud_barred(decision, current, nxt):
            return None
        return nxt

    def call(
        self,
        inb: Inbound,
        decision: RouteDecision,
        backend: Backend,
        *,
        count_tokens: bool = False,
        fallback_from: str | None = None,
        escalated: str | None = None,
    ) -> Call:
        """The request as `backend` gets it (`proxy.outgoing.build_call`: the pack, the model, the wire)."""
        return build_call(
            inb,
            decision,
            backend,
            self.local,
            count_tokens=count_tokens,
            fallback_from=fallback_from,
            escalated=escalated,
        )

    def backend(self, name: str) -> Backend:
        """The configured backend `name` (`BackendRegistry.get`)."""
        return self.registry.get(name)

    def bind_cloud(self, opened: Opened) -> None:
        """Bind `opened`'s family to the cloud (`Turns.bind_cloud`: a strategy with a cloud member)."""
        self.ledger.record(self.turns.bind_cloud(opened))

    def estimate(self, backend: str, estimated: int) -> int:
        """`estimated` tokens as `backend` counts them, by what it has reported so far (`Turns.estimate`)."""
        return self.turns.estimate(backend, estimated)

    def failed(
        self,
        turn_id: str | None,
        backend: Backend,
        exc: BackendError,
        *,
        to: str | None,
        reason: str,
        down: bool,
    ) -> None:
        """An attempt at `backend` that failed before its first byte: `UpstreamFailed`, the local
        backend marked down when `down` (`LocalPath.failed`), and `FallbackUsed` when `to` takes over."""
        if down and self.local is not None:
            self.local.failed(backend.name, exc.message)
        self.ledger.emit(UPSTREAM_FAILED, failure_record(backend, exc, "before_first_byte"), turn_id)
        if to is not None:
            self.ledger.emit(FALLBACK_USED, {"from": backend.name, "to": to, "reason": reason}, turn_id)

    async def send(self, call: Call) -> UpstreamResponse:
        """One attempt, through the backend's circuit breaker (`backends.breaker`): BackendOpen when
        it is skipped, which the callers take as a failed attempt; UpstreamStatus for an answer that
        falls back (`backends.failure`), its body read."""
        backend = call.backend
        trial = self.breakers.admit(backend.name)
        try:
            resp = await self.upstream.send("POST", call.url, call.headers, call.body, backend.timeout)
            status = resp.status
            if status >= 400:  # every status that falls back is one (`backends.failure`)
                resp = await self._fell_back(call, resp)
        except BaseException as exc:
            self.breakers.ended(backend.name, exc, trial=trial)
            raise
        self.breakers.ended(backend.name, None, trial=trial)
        return resp

    @staticmethod
    async def _fell_back(call: Call, resp: UpstreamResponse) -> UpstreamResponse:
        """An error answer: UpstreamStatus when it moves to the fallback, else the answer to relay."""
        status = resp.status
        local_4xx = call.backend.side == "local" and status in (400, 404, 413)
        if retryable(status) or local_4xx:
            try:
                data = await resp.read()
            except BackendError:
                data = b""
            finally:
                await resp.aclose()
            cause = local_fallback_cause(status, data) if local_4xx else None
            if retryable(status) or cause is not None:
                why = f"upstream answered {status}" + (f" ({cause})" if cause else "")
                raise UpstreamStatus(why, status=status, body=data, headers=tuple(resp.raw_headers))
            return BufferedResponse(resp, data)
        return resp

    async def forward(self, job: Job, backend: Backend) -> Reply:
        opened = job.opened
        decision = opened.decision
        rule_fallback = decision.fallback
        tried: set[str] = set()
        current: Backend | None = backend
        off = opened.plan.off_local if backend.side == "local" else None
        if off is not None:  # taken off local: the backend's fallback answers, as after a failure
            nxt = self._next(backend, decision)
            if nxt is not None and nxt.name != backend.name:
                moved = {"from": backend.name, "to": nxt.name, "reason": off}
                self.ledger.emit(FALLBACK_USED, moved, job.turn_id)
                tried.add(backend.name)
                current = nxt
        attempts: list[tuple[Call, BackendError]] = []
        # A client's failure message the turn index sent to the cloud (`turns.sticky`), else the
        # reason a checked local reply could not be used (`proxy.escalate`): on the reply's route.
        escalated: str | None = opened.plan.escalated[0] if opened.plan.escalated else None
        # That request, for the cloud: without the empty turns the failed local answer left.
        sent = self.escalation.cleaned(job.inb) if escalated else job.inb
        while current is not None and current.name not in tried:
            tried.add(current.name)
            try:
                call = build_call(
                    sent if current.side == "cloud" else job.inb,
                    decision,
                    current,
                    self.local,
                    fallback_from=backend.name if current is not backend else None,
                    escalated=escalated if current is not backend or current.side == "cloud" else None,
                )
            except RequestError as exc:  # a body the backend's wire cannot be given
                return self.error(job.inb.protocol, exc.status, exc.message)
            job.calls.append(call)
            try:
                resp = await self.send(call)
                # Only a local reply can be checked (`proxy.escalate`).
                offered = (
                    self.escalation.offered(job, current)
                    if current.side == "local" and resp.status < 400
                    else None
                )
                if offered is not None:  # a local reply is checked before its first byte goes out
                    try:
                        held = await self.escalation.hold(job, call, resp, offered)
                    except BaseException as exc:
                        await resp.aclose()
                        self.breakers.ended(current.name, exc)
                        raise
                    if not held.verdict.ok:
                        nxt = self._next(current, decision)
                        ms = round((time.perf_counter() - call.started) * 1000, 1)
                        call.failed(ReplyUnusable(held.verdict.reason or "unusable"))
                        if nxt is not None and nxt.name not in tried:
                            await resp.aclose()
                            moved = {
                                "from": current.name,
                                "to": nxt.name,
                                "reason": f"escalated: {held.verdict.reason}",
                            }
                            self.ledger.emit(FALLBACK_USED, moved, job.turn_id)
                            self.escalation.record(job, call, held, nxt.name, ms)
                            escalated, current = held.verdict.reason, nxt
                            continue
                        # Nowhere to escalate to (`routing.local_only`, `fallback: none`): once more
                        # here, the reason stated, and that answer is passed on whatever it is.
                        await resp.aclose()
                        self.escalation.record(job, call, held, current.name, ms)
                        call = self.escalation.restated(call, held.verdict, job.inb.protocol)
                        job.calls.append(call)
                        resp = await self.send(call)
                    elif held.it is not None:
                        return self._stream(job, call, resp, held.it, held.data)
                    else:
                        return self._whole(job, call, resp.status, resp.raw_headers, held.data)
                if job.inb.chat.stream and resp.status < 400:
                    it = resp.aiter_bytes().__aiter__()
                    first = b""
                    nxt = self._next(current, decision)
                    if nxt is not None and nxt.name not in tried:
                        # A fallback could still take over: hold the reply until the first body byte.
                        try:
                            first = await it.__anext__()
                        except StopAsyncIteration:
                            pass
                        except BaseException as exc:
                            await resp.aclose()
                            self.breakers.ended(current.name, exc)
                            raise
                    return self._stream(job, call, resp, it, first)
                try:
                    data = await resp.read()
                finally:
                    await resp.aclose()
                return self._whole(job, call, resp.status, resp.raw_headers, data)
            except BackendError as exc:
                attempts.append((call, exc))
                call.failed(exc)
                nxt = self._next(current, decision)
                down = current.side == "local" and not isinstance(exc, _NOT_DOWN)
                to = nxt.name if nxt is not None and nxt.name not in tried else None
                self.failed(job.turn_id, current, exc, to=to, reason=fallback_reason(exc), down=down)
                current = nxt
            except asyncio.CancelledError:
                # The client went away while we waited for the upstream (see server.asgi).
                self.finish(job, call, 0, Usage(), complete=False, disconnected=True, served=None)
                raise
        assert attempts
        route = route_header(decision.target, decision.rule, backend.name)
        last_backend = attempts[-1][0].backend
        ended = rule_fallback if rule_fallback is not None else last_backend.fallback
        stopped = "the rule or backend says `fallback: none`" if ended == "none" else None
        after = self.registry.fallback_for(last_backend, rule_fallback)
        barred = cloud_barred(decision, last_backend, after)
        kept = barred_note(decision) if barred else None
        why = no_retry(attempts, stopped)
        reply = all_failed(job.inb.protocol, attempts, route, rule=decision.rule, no_retry=why, note=kept)
        last = attempts[-1][0]
        ms = round((time.perf_counter() - attempts[0][0].started) * 1000, 1)
        fb = last.backend.name != backend.name
        served = Served(
            last.backend.name,
            last.backend.side,
            last.model,
            reply.status,
            ms=ms,
            complete=False,
            answered=False,
            fallback_from=backend.name if fb else None,
            end="failed",
        )
        # The outcome is recorded like any other (the dashboard shows it failed, with its time).
        self.ledger.close(job.observed(), served, later=False)
        return reply

    def _stream(
        self, job: Job, call: Call, resp: UpstreamResponse, it: AsyncIterator[bytes], first: bytes
    ) -> Reply:
        """A stream relayed chunk by chunk (`proxy.stream_reply`); a translated one reports this
        backend's calibrated input estimate when the backend gives none (Anthropic: in message_start)."""
        estimate = None
        if not call.passthrough:
            # The request as this backend was sent it (a local backend's pack), not the client's.
            sent = self.sent_tokens(job, call)
            sent = job.inb.chat.estimated_tokens if sent is None else sent
            estimate = self.estimate(call.backend.name, sent)
        return stream_reply(self, job, call, resp, it, first, estimate)

    def _whole(
        self,
        job: Job,
        call: Call,
        upstream_status: int,
        raw_headers: Sequence[tuple[bytes, bytes]],
        data: bytes,
    ) -> Reply:
        """A whole reply (`data`, read to the end) relayed: passed through with the upstream's headers, or
        translated; its bookkeeping runs as the Reply's `after`."""
        chat = job.inb.chat
        status = upstream_status
        served: bytes | None = None
        route = reply_route(job, call)
        if call.passthrough:
            headers = response_headers(raw_headers)
            headers.append((b"x-glider-route", route))
            body, served = data, data
        elif status >= 400:
            msg = upstream_text(data, f"upstream answered {status}")
            error = self.error(job.inb.protocol, status, msg, route.decode("latin-1"))
            headers, body = error.headers, error.body
        else:
            from glider_cli.protocol import translate  # a translated call's (see the module notes)

            model = chat.model or call.model or ""
            out = translate.response_bytes_to(
                job.inb.protocol, call.backend.wire, data, model=model, backend=call.backend.name
            )
            status, body = 200, orjson.dumps(out)
            headers = [*JSON_HEADERS, (b"x-glider-route", route)]
            served = body

        def bookkeeping() -> None:
            # After the reply is handed over (server.asgi), before the connection's next request.
            usage = Usage(limit=call.backend.side == "local")
            usage.feed(data)
            self.finish(job, call, upstream_status, usage, complete=upstream_status < 400, served=served)

        return Reply(status, headers, body, after=bookkeeping)

    def sent_tokens(self, job: Job, call: Call) -> int | None:
        """The estimated tokens of the request as `call`'s backend is sent it, when that is not the
        client's request (None): a local backend's pack (its size as the pack measured it), or the body
        as sent (bytes/4) when no pack was made."""
        if call.backend.side != "local":
            return None
        if self.local is not None:
            packed = self.local.pack_tokens(call.backend.name, job.inb.packs)
            if packed is not None:
                return packed
        return max(1, len(call.body) // 4)

    def finish(
        self,
        job: Job,
        call: Call,
        status: int,
        usage: Usage,
        *,
        complete: bool,
        disconnected: bool = False,
        failure: GliderError | None = None,
        served: bytes | None = b"",
        text_bytes: int | None = None,
    ) -> None:
        """A reply's bookkeeping, once it is out (whole replies: `Reply.after`; streams: the loop pass
        after the relay ended): a mid-stream failure, then the core's closing events (usage
        calibration, the outcome, who answered and the calls it issued — the last skipped when
        `served` is None: an error reply in another protocol answered nothing). `text_bytes`: the
        text a translated stream sent (its encoder's count), else the text read in `usage` — read
        only when the outcome's accounting estimates the output from it (`turns.calibration.
        estimates_output`); otherwise it is left None (reading a whole reply's text is a regex over
        all of it)."""
        end = None
        if failure is not None:
            failed = failure_record(call.backend, failure, "mid_stream")
            self.ledger.emit(UPSTREAM_FAILED, failed, job.turn_id, later=True)
            from glider_cli.protocol.openai_chat import CUT

            end = "cut" if CUT in failure.message else "failed"
        if text_bytes is None and status and estimates_output(status, usage.output_tokens, complete):
            text_bytes = usage.text_bytes
        calls: list[Any] = []
        if served is not None and job.tap is not None:
            job.tap.feed(served)
            calls = job.tap.close()
        result = Served(
            call.backend.name,
            call.backend.side,
            call.model,
            status,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            ms=round((time.perf_counter() - call.started) * 1000, 1),
            complete=complete,
            answered=served is not None,
            disconnected=disconnected,
            fallback_from=call.fallback_from,
            calls=calls,
            cache=usage.record(),
            escalated=call.escalated,
            text_bytes=text_bytes,
            sent_tokens=self.sent_tokens(job, call) if call.backend.side == "local" else None,
            end=end,
            at_limit=usage.at_limit,
        )
        self.ledger.close(job.observed(), result)
