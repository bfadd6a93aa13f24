"""One member call of a plan: the request as that member gets it, sent whole, its reply read whole.

    await call_member(out, job, member, index, body=None, followup=(), timeout=...) -> Candidate

The member's request is the client's (`judge.member_body`: not streamed, the member's temperature, a
pipeline stage's follow-up messages) built for the member's backend by `Dispatch.call` (the same
translation and headers as an ordinary call) and sent by `Dispatch.send` (the same upstream client
and error mapping). The reply is parsed in the wire it came in (the client's for a passthrough, else
the backend's) into an `ir.Response`. Any failure (refused, a timeout, an error status, a body that
is no reply) is a Candidate with `error` set; the caller leaves it out. One `StrategyMember` event per
call: strategy, index, role, backend, side, model, temperature, outcome (ok | error | timeout |
cancelled), status, input/output tokens, ms, and the error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from glider_cli.errors import BackendError, BackendTimeout, GliderError, UpstreamStatus
from glider_cli.protocol import ir, translate
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.strategies.judge import candidate_text, member_body
from glider_cli.router.plan import Member
from glider_cli.store.eventlog.events import STRATEGY_MEMBER
from glider_cli.turns.calibration import output_estimate
from glider_cli.values import replace

if TYPE_CHECKING:
    from glider_cli.proxy.calls import Call, Job
    from glider_cli.proxy.dispatch import Dispatch

__all__ = ["Candidate", "call_member"]


@dataclass
class Candidate:
    index: int
    member: Member
    call: Call | None = None
    data: bytes = b""
    wire: str = ""
    response: ir.Response | None = None
    text: str = ""
    status: int = 0
    ms: float = 0.0
    error: str | None = None
    outcome: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.response is not None

    @property
    def tool_calls(self) -> bool:
        return self.response is not None and any(isinstance(p, ir.ToolCall) for p in self.response.parts)

    def body(self) -> dict[str, Any]:
        value = orjson.loads(self.data)
        assert isinstance(value, dict)
        return value

    def sent(self, call: Call) -> None:
        """The member's request was built as `call`."""
        self.call = call

    def answered(self, status: int, data: bytes) -> None:
        """The member's backend answered `status` with `data`, read whole."""
        self.status, self.data = status, data

    def parse(self, wire: str) -> None:
        """Read the reply in `wire` (the client's for a passthrough, else the backend's); what
        `translate.parse_response` raises when it is no reply in that wire."""
        self.wire = wire
        self.response = translate.parse_response(wire, self.body())
        self.text = candidate_text(self.response)

    def failed(self, error: str, outcome: str) -> None:
        """The call failed (`outcome`: error | timeout | cancelled), for `error`."""
        self.error, self.outcome = error, outcome

    def took(self, ms: float) -> None:
        self.ms = ms


async def call_member(
    out: Dispatch,
    job: Job,
    member: Member,
    index: int,
    *,
    strategy: str,
    timeout: float,
    body: dict[str, Any] | None = None,
    followup: Sequence[tuple[str, str]] = (),
) -> Candidate:
    from glider_cli.proxy.calls import Inbound

    inb = job.inb
    cand = Candidate(index, member)
    started = time.perf_counter()
    try:
        sent = member_body(
            inb.protocol,
            body if body is not None else inb.body,
            temperature=member.temperature,
            followup=followup,
        )
        # A plain member gets the client's request as packed for the local side; a judge's question
        # or a later pipeline stage is Glider's own request and is sent as built.
        packed = body is None and not followup
        raw = orjson.dumps(sent)
        minb = Inbound(inb.protocol, raw, sent, inb.headers, inb.query, inb.chat, inb.path, pack=packed)
        adapter = job.decision.adapter if member.backend == job.decision.backend else None
        decision = replace(
            job.decision, target=member.side, backend=member.backend, model=member.model, adapter=adapter
        )
        backend = out.backend(member.backend)
        call = out.call(minb, decision, backend)
        cand.sent(call)
        await asyncio.wait_for(_fetch(out, call, cand), timeout)
        cand.parse(inb.protocol if call.passthrough else backend.wire)
    except TimeoutError:
        cand.failed(f"no answer within {timeout:g} s", "timeout")
    except asyncio.CancelledError:
        cand.failed("cancelled", "cancelled")
        _record(out, job, cand, strategy, started)
        raise
    except BackendTimeout as exc:
        cand.failed(exc.message, "timeout")
    except GliderError as exc:
        cand.failed(exc.message, "error")
    except (ValueError, AssertionError, KeyError, TypeError) as exc:
        cand.failed(f"the reply is not a {cand.wire} reply: {exc}", "error")
    _record(out, job, cand, strategy, started)
    return cand


async def _fetch(out: Dispatch, call: Call, cand: Candidate) -> None:
    resp = await out.send(call)
    try:
        data = b""
        data = await resp.read()
    finally:
        cand.answered(resp.status, data)
        await resp.aclose()
    if resp.status >= 400:
        raise UpstreamStatus(f"upstream answered {resp.status}", status=resp.status, body=cand.data)
    if not cand.data:
        raise BackendError("upstream sent an empty reply")


def member_usage(usage: ir.Usage, answered: bool, request_tokens: int, text_bytes: int) -> dict[str, Any]:
    """A member call's cache counts, and estimates (named in `estimated`, as `turns.calibration.accounting`
    makes them) when its reply reported no usage at all: the input from the estimate of the request
    the member was sent, the output from the bytes of the reply's text (4 a token, never its JSON's
    framing). A member that got no reply records no usage."""
    if not answered:
        return {}
    out: dict[str, Any] = {
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }
    if not (usage.input_tokens or usage.output_tokens or usage.cache_read_tokens):
        out["input_tokens"] = max(1, request_tokens)
        out["output_tokens"] = output_estimate(text_bytes)
        out["estimated"] = ["input_tokens", "output_tokens"]
    return out


def _record(out: Dispatch, job: Job, cand: Candidate, strategy: str, started: float) -> None:
    cand.took(round((time.perf_counter() - started) * 1000, 1))
    usage = cand.response.usage if cand.response is not None else ir.Usage()
    m = cand.member
    data: dict[str, Any] = {
        "strategy": strategy,
        "index": cand.index,
        "role": m.role,
        "backend": m.backend,
        "side": m.side,
        "model": cand.call.model if cand.call is not None else m.model,
        "temperature": m.temperature,
        "outcome": cand.outcome,
        "status": cand.status or None,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "ms": cand.ms,
        "tool_calls": cand.tool_calls,
        "requested_model": job.inb.chat.model or None,
    }
    answered = cand.response is not None
    sent = out.sent_tokens(job, cand.call) if cand.call is not None else None
    text = Usage()
    text.feed(cand.data or b"")
    asked = job.inb.chat.estimated_tokens if sent is None else sent
    data.update(member_usage(usage, answered, asked, text.text_bytes))
    if cand.error is not None:
        data["error"] = cand.error
    out.ledger.emit(STRATEGY_MEMBER, data, job.turn_id)
