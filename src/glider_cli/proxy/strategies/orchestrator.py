"""The orchestrator: a Plan executed for one request, the chosen answer as the client's reply.

    turns = Turns(..., planner=planner(registry, orchestration))   # Turns.open makes the plan
    orch = Orchestrator(dispatch, orchestration)
    plan = opened.strategy                   # None: serve the request the ordinary way
    reply = await orch.run(job, plan, backend)   # its RouteDecided record carries the plan (`plan`)

Contract:
- Members run as `proxy.strategies.members.call_member` calls (whole replies), at most `max_parallel` at
  once, each within `member_timeout`, all within `deadline` (members still running then are cancelled
  and left out, as failed ones are). `fan_out` / `ensemble`: the judge picks among the complete
  candidates — `first` (the first complete answer; the others are cancelled), `longest_agreement`
  (`judge.agreement`), `model` (a judge call given the candidates, asked for an index; an answer
  without a usable index falls back to agreement). `pipeline`: stages in order, each stage's answer
  the next one's input; a stage that answers with tool calls ends the pipeline (the client runs the
  tool; its result returns to that stage's backend and model, by the turn family's record); a later
  stage that fails leaves the answer so far.
- When no candidate is complete, the request is served the ordinary way (`Dispatch.forward`, with its
  fallback), so "all members failed" is never worse than a single call.
- The reply is in the client's protocol: whole, or streamed — the stream starts at once (Anthropic's
  `message_start`), carries keep-alives while the members run (Anthropic `event: ping`, OpenAI SSE
  comments `: keep-alive`) every `KEEPALIVE` seconds, then the chosen answer's events.
- Records: one `StrategyMember` per member call, one `StrategyChosen` (index, backend, model, judge,
  why, the candidates' scores) and the ordinary closing events for the chosen member (`Served` names
  its backend and model and the tool calls it issued, so a tool result goes back to it).
  A plan with a cloud member binds the family to the cloud as a cloud decision does.
- A request whose family forces it home (a tool result returning to the member that called the tool)
  is never orchestrated (`plan` is None): it goes to that member's backend and model only.
- Gemini clients are served the ordinary way (their streaming is in the path, not the body).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import orjson

from glider_cli.config.orchestration_settings import OrchestrationSettings
from glider_cli.protocol import ir, translate
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.reply import Reply
from glider_cli.proxy.strategies.judge import agreement, judge_index, judge_prompt, plain_body, stage_followup
from glider_cli.proxy.strategies.members import Candidate, call_member
from glider_cli.router.plan import Plan, Planner
from glider_cli.store.eventlog.events import STRATEGY_CHOSEN

if TYPE_CHECKING:
    from glider_cli.backends.registry import Backend, BackendRegistry
    from glider_cli.proxy.calls import Job
    from glider_cli.proxy.dispatch import Dispatch

__all__ = ["KEEPALIVE", "Orchestrator", "planner"]

KEEPALIVE = 5.0
_PING = {"anthropic": b'event: ping\ndata: {"type": "ping"}\n\n'}
_COMMENT = b": keep-alive\n\n"


def planner(registry: BackendRegistry, orchestration: OrchestrationSettings) -> Planner:
    """The planner `Turns.open` asks (`router.plan.Planner`), over the app's backends."""
    sides = {name: registry.get(name).side for name in registry.names()}
    defaults = {
        s: (b.name if (b := registry.default_for(s)) is not None else None) for s in ("local", "cloud")
    }
    return Planner(orchestration, sides, defaults)


class Orchestrator:
    def __init__(self, dispatch: Dispatch, orchestration: OrchestrationSettings) -> None:
        self.out = dispatch
        self.settings = orchestration
        self.keepalive = KEEPALIVE

    async def run(self, job: Job, plan: Plan, backend: Backend) -> Reply:
        if plan.clouds and job.decision.target != "cloud":
            self.out.bind_cloud(job.opened)
        work = asyncio.ensure_future(self._choose(job, plan))
        if not job.inb.chat.stream:
            try:
                chosen = await work
            except asyncio.CancelledError:
                work.cancel()
                raise
            if chosen is None:
                return await self.out.forward(job, backend)
            return self._whole(job, plan, chosen)
        return self._stream(job, plan, backend, work)

    # ---------------------------------------------------------------------------------- choosing

    async def _choose(self, job: Job, plan: Plan) -> Candidate | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + plan.deadline
        if plan.sequential:
            chosen = await self._pipeline(job, plan, end)
            why = "the last stage that answered"
            if chosen is not None and chosen.tool_calls:
                why = "a stage answered with tool calls: the pipeline ends there"
            return self._chosen(job, plan, chosen, [chosen] if chosen else [], why, None)
        sem = asyncio.Semaphore(plan.max_parallel)

        async def one(i: int) -> Candidate:
            async with sem:
                return await call_member(
                    self.out, job, plan.members[i], i, strategy=plan.strategy, timeout=plan.member_timeout
                )

        tasks = [asyncio.ensure_future(one(i)) for i in range(len(plan.members))]
        done: list[Candidate] = []
        try:
            pending = set(tasks)
            while pending:
                left = end - loop.time()
                if left <= 0:
                    break
                finished, pending = await asyncio.wait(pending, timeout=left, return_when="FIRST_COMPLETED")
                done += [c for t in finished if (c := t.result()).ok]
                if plan.judge == "first" and done:
                    break
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if plan.judge != "first":
            done.sort(key=lambda c: c.index)  # the judge sees the members in the plan's order
        return await self._judge(job, plan, done)

    async def _pipeline(self, job: Job, plan: Plan, end: float) -> Candidate | None:
        loop = asyncio.get_running_loop()
        answer: Candidate | None = None
        for i, member in enumerate(plan.members):
            left = min(plan.member_timeout, end - loop.time())
            if left <= 0:
                break
            followup = stage_followup(member.role, answer.text if answer is not None else None)
            cand = await call_member(
                self.out, job, member, i, strategy=plan.strategy, timeout=left, followup=followup
            )
            if not cand.ok:
                if answer is None:
                    return None  # the first stage failed: nothing to build on
                continue
            answer = cand
            if cand.tool_calls:
                break
        return answer

    async def _judge(self, job: Job, plan: Plan, done: list[Candidate]) -> Candidate | None:
        if not done:
            return self._chosen(job, plan, None, done, "every member failed", None)
        if len(done) == 1 or plan.judge == "first":
            why = "the first complete answer" if plan.judge == "first" else "the only complete answer"
            return self._chosen(job, plan, done[0], done, why, None)
        best, scores = agreement([c.text for c in done])
        why = "closest to the other answers (token_set_ratio summed)"
        if plan.judge == "model" and plan.judge_member is not None:
            prompt = judge_prompt(job.inb.chat.last_user_text or "", [c.text for c in done])
            body = plain_body(job.inb.protocol, prompt, max_tokens=16)
            verdict = await call_member(
                self.out,
                job,
                plan.judge_member,
                len(plan.members),
                strategy=plan.strategy,
                timeout=plan.member_timeout,
                body=body,
            )
            picked = judge_index(verdict.text, len(done)) if verdict.ok else None
            if picked is not None:
                best, why = picked, f"the judge model answered {verdict.text.strip()[:40]!r}"
            else:
                why = f"the judge gave no usable index ({verdict.error or verdict.text[:40]!r}); " + why
        return self._chosen(job, plan, done[best], done, why, scores)

    def _chosen(
        self,
        job: Job,
        plan: Plan,
        chosen: Candidate | None,
        done: list[Candidate],
        why: str,
        scores: list[float] | None,
    ) -> Candidate | None:
        data: dict[str, Any] = {
            "strategy": plan.strategy,
            "judge": plan.judge,
            "members": len(plan.members),
            "complete": [c.index for c in done],
            "index": chosen.index if chosen is not None else None,
            "backend": chosen.member.backend if chosen is not None else None,
            "model": chosen.call.model if chosen is not None and chosen.call is not None else None,
            "why": why if chosen is not None else "every member failed: the ordinary fallback serves it",
        }
        if scores is not None:
            data["scores"] = scores
        self.out.ledger.emit(STRATEGY_CHOSEN, data, job.turn_id)
        return chosen

    # ---------------------------------------------------------------------------------- replying

    def _headers(self, job: Job, plan: Plan, chosen: Candidate) -> list[tuple[bytes, bytes]]:
        from glider_cli.proxy.calls import route_header

        assert chosen.call is not None
        b = chosen.call.backend
        route = route_header(b.side, job.decision.rule, b.name, None, chosen.call.model)
        strategy = f"{plan.strategy}; members={len(plan.members)}; chosen={chosen.index}"
        return [(b"x-glider-route", route.encode("latin-1")), (b"x-glider-strategy", strategy.encode())]

    def _whole(self, job: Job, plan: Plan, chosen: Candidate) -> Reply:
        model = job.inb.chat.model or (chosen.call.model if chosen.call else None) or ""
        body = orjson.dumps(translate.response_to(job.inb.protocol, chosen.wire, chosen.body(), model=model))
        headers = [(b"content-type", b"application/json"), *self._headers(job, plan, chosen)]
        return Reply(200, headers, body, after=lambda: self._done(job, chosen, body))

    def _done(self, job: Job, chosen: Candidate, served: bytes, *, complete: bool = True) -> None:
        assert chosen.call is not None
        usage = Usage()
        usage.feed(chosen.data)
        self.out.finish(job, chosen.call, 200, usage, complete=complete, served=served)

    def _stream(
        self, job: Job, plan: Plan, backend: Backend, work: asyncio.Future[Candidate | None]
    ) -> Reply:
        from glider_cli.proxy.calls import route_header

        inb = job.inb
        opts = inb.body.get("stream_options")
        usage = bool(isinstance(opts, dict) and opts.get("include_usage"))
        model = inb.chat.model or ""
        estimate = self.out.estimate(backend.name, inb.chat.estimated_tokens)
        encoder = translate.encoder_for(inb.protocol, model, usage, input_estimate=estimate)
        ping = _PING.get(inb.protocol, _COMMENT)

        async def gen() -> AsyncGenerator[bytes, None]:
            sent: list[bytes] = []
            chosen: Candidate | None = None
            try:
                if inb.protocol == "anthropic":
                    first = b"".join(encoder.encode(ir.Start("", model, None)))
                    sent.append(first)
                    yield first
                else:
                    yield _COMMENT
                while True:
                    try:
                        chosen = await asyncio.wait_for(asyncio.shield(work), self.keepalive)
                        break
                    except TimeoutError:
                        yield ping
                if chosen is None:
                    async for chunk in self._fallback(job, backend, encoder, bool(sent)):
                        yield chunk
                    return
                assert chosen.response is not None
                for ev in translate.events_of(chosen.response)[1:]:
                    for chunk in encoder.encode(ev):
                        sent.append(chunk)
                        yield chunk
            finally:
                if not work.done():
                    work.cancel()
                if chosen is not None:
                    served = b"".join(sent)
                    asyncio.get_running_loop().call_soon(lambda: self._done(job, chosen, served))

        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        route = route_header(job.decision.target, job.decision.rule, backend.name)
        strategy = f"{plan.strategy}; members={len(plan.members)}"
        headers += [(b"x-glider-route", route.encode("latin-1")), (b"x-glider-strategy", strategy.encode())]
        return Reply(200, headers, stream=gen())

    async def _fallback(
        self, job: Job, backend: Backend, encoder: translate.Encoder, started: bool
    ) -> AsyncGenerator[bytes, None]:
        """Every member failed while the client's stream was already open: relay the ordinary call."""
        reply = await self.out.forward(job, backend)
        if reply.stream is not None and reply.status < 400:
            # The client already has a message_start: the fallback's own is dropped.
            buf = b"" if started else None
            async for chunk in reply.stream:
                if buf is None:
                    yield chunk
                    continue
                buf += chunk
                at = buf.find(b"event: message_start")
                end = buf.find(b"\n\n", at) if at >= 0 else -1
                if end >= 0:
                    rest, buf = buf[:at] + buf[end + 2 :], None
                    if rest:
                        yield rest
            if buf:
                yield buf
            return
        if reply.after is not None:
            reply.after()
        message = _error_message(reply.body)
        for chunk in encoder.error(message):
            yield chunk


def _error_message(body: bytes) -> str:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "every member failed, and so did the fallback"
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])
    return "every member failed, and so did the fallback"
