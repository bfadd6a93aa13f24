"""A local reply that cannot be used is not passed on while nothing has reached the client (issue 42).

    esc = Escalation(turns, ledger)
    offered = esc.offered(job, backend)            # None: this attempt's reply is not checked
    held = await esc.hold(job, call, resp, offered) # read until the reply is decided (`Held`)
    call = esc.restated(call, held.verdict)         # the same local call, the reason stated (pure-local)
    esc.record(job, call, held, to=backend_name)    # the `Escalated` event (the local attempt's cost)

Which replies are checked (`offered`): a local backend's, for a turn a rule sent local —
never one the person's explicit `/local` (or its family's local binding) sent there
(`Turns.explicit_local`), never a delegate's — while `routing.escalate.on_invalid_reply` is on.
The check itself is `turns.reply_check`, on the reply as the client would get it (a translated
reply is translated for it by a converter of its own: the relay translates the same bytes again).

`cleaned` is the request a client's failure message sends to the cloud (`turns.sticky`), without the
empty model turns the client kept of the local answer (`turns.empty_turns`: a cloud refuses them).

`hold` reads a whole reply, or a stream until it is decided: as soon as visible text arrives (held
bytes are then relayed as they are: text streams as before), or, for a reply that opens with a tool
call, once that call is complete; a stream that ends first is checked as it stands. Each read is
bounded by the backend's read timeout (a stall is the transport failure it always was: the fallback
takes over). `Dispatch.forward` then sends an unusable reply's request to the local backend's
fallback (`FallbackUsed` with reason `escalated: <reason>`, then `Escalated`), or, when there is
none (`routing.local_only`, `fallback: none`), asks the same local backend once more with the reason
stated to the model (`restated`) and passes that answer on whatever it is.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import orjson

from glider_cli.backends.client import UpstreamResponse
from glider_cli.backends.registry import Backend
from glider_cli.protocol.token_counts import Usage
from glider_cli.proxy.calls import Call, Inbound, Job
from glider_cli.proxy.ledger import Ledger
from glider_cli.store.eventlog.events import ESCALATED
from glider_cli.turns.empty_turns import without_empty_turns
from glider_cli.turns.lifecycle import Turns
from glider_cli.turns.reply_check import (
    USABLE,
    Offered,
    StreamCheck,
    Verdict,
    offered_tools,
    whole_verdict,
)

_CHECKED = ("anthropic", "openai_chat", "openai_responses", "gemini")
_RETRY_NOTE = (
    "Your previous reply could not be used: {detail}. Reply again: either answer in text, or call "
    "one of the tools offered, by its exact name, with its arguments as a JSON object holding every "
    "required property."
)


@dataclass
class Held:
    """A reply read until it was decided: the verdict, the bytes read (a stream's raw chunks joined,
    a whole body), the stream's iterator to go on from, and the usage those bytes reported."""

    verdict: Verdict
    data: bytes
    it: AsyncIterator[bytes] | None
    usage: Usage


class Escalation:
    """See the module contract. One per Dispatch; its settings are the Turns' (a reload swaps them)."""

    def __init__(self, turns: Turns, ledger: Ledger) -> None:
        self.turns = turns
        self.ledger = ledger

    def offered(self, job: Job, backend: Backend) -> Offered | None:
        """The tools the client offered, when this attempt's reply is to be checked; else None."""
        inb = job.inb
        if backend.side != "local" or not self.turns.escalate.on_invalid_reply:
            return None
        if job.decision.delegate or inb.protocol not in _CHECKED:
            return None
        if inb.chat.stream and inb.protocol == "gemini" and inb.body.get("alt") == "json":
            return None  # a streamed JSON array, not SSE: passed on as today
        if self.turns.explicit_local(job.opened):
            return None
        return offered_tools(inb.protocol, inb.body)

    async def hold(self, job: Job, call: Call, resp: UpstreamResponse, offered: Offered) -> Held:
        """Read the reply until it is decided (see the module contract). Raises what the read raises."""
        inb = job.inb
        usage = Usage(limit=True)
        if not inb.chat.stream:
            try:
                data = await resp.read()
            finally:
                await resp.aclose()
            usage.feed(data)
            return Held(self._whole(job, call, data, offered), data, None, usage)
        it = resp.aiter_bytes().__aiter__()
        convert = None
        if not call.passthrough:
            from glider_cli.protocol.translate_stream import stream_converter

            model = inb.chat.model or call.model or ""
            convert = stream_converter(inb.protocol, call.backend.wire, model=model, body=inb.body)
        check = StreamCheck(inb.protocol, offered)
        raw: list[bytes] = []
        verdict: Verdict | None = None
        while verdict is None:
            try:
                chunk = await it.__anext__()
            except StopAsyncIteration:
                if convert is not None:
                    check.feed(convert.close())
                verdict = check.close()
                break
            raw.append(chunk)
            usage.feed(chunk)
            out = chunk if convert is None else convert.feed(chunk)
            if out:
                verdict = check.feed(out)
            if convert is not None and convert.failure is not None:
                verdict = USABLE  # the upstream said it failed: the relay reports it as it always did
        return Held(verdict, b"".join(raw), it, usage)

    def _whole(self, job: Job, call: Call, data: bytes, offered: Offered) -> Verdict:
        protocol = job.inb.protocol
        try:
            if call.passthrough:
                body: Any = orjson.loads(data)
            else:
                from glider_cli.protocol import translate

                model = job.inb.chat.model or call.model or ""
                body = translate.response_bytes_to(
                    protocol, call.backend.wire, data, model=model, backend=call.backend.name
                )
        except Exception:  # a body that does not parse is relayed (and reported) as it always was
            return USABLE
        return whole_verdict(protocol, body, offered)

    def cleaned(self, inb: Inbound) -> Inbound:
        """`inb` for the cloud when the client's failure message escalated its turn: without the empty
        model turns its history keeps (`turns.empty_turns`), which a cloud service refuses."""
        try:
            raw = orjson.loads(inb.raw)
        except orjson.JSONDecodeError:
            return inb
        cleaned = without_empty_turns(inb.protocol, raw) if isinstance(raw, dict) else None
        if cleaned is None:
            return inb
        body = without_empty_turns(inb.protocol, inb.body) or inb.body
        return replace(inb, raw=orjson.dumps(cleaned), body=body, packs={})

    def restated(self, call: Call, verdict: Verdict, protocol: str) -> Call:
        """`call` once more, with the reason its reply could not be used stated to the model as a last
        user message (in the backend's own wire); `call` itself when its body cannot take one."""
        try:
            body = orjson.loads(call.body)
        except orjson.JSONDecodeError:
            return call
        note = _RETRY_NOTE.format(detail=verdict.detail or verdict.reason)
        wire: str = protocol if call.passthrough else call.backend.wire
        if wire == "openai_responses" and isinstance(body.get("input"), list):
            body["input"].append({"role": "user", "content": note})
        elif wire == "gemini" and isinstance(body.get("contents"), list):
            body["contents"].append({"role": "user", "parts": [{"text": note}]})
        elif isinstance(body.get("messages"), list):
            body["messages"].append({"role": "user", "content": note})
        else:
            return call
        return replace(call, body=orjson.dumps(body), started=time.perf_counter())

    def record(self, job: Job, call: Call, held: Held, to: str | None, ms: float) -> None:
        """The `Escalated` event of a checked local reply that could not be used (its tokens spent)."""
        spent_in, spent_out = held.usage.input_tokens, held.usage.output_tokens
        estimated = []
        if spent_in is None:  # a stream left before its usage (it comes last): Glider's estimates
            estimated.append("input_tokens")
            spent_in = self.turns.estimate(call.backend.name, job.inb.chat.estimated_tokens)
        if spent_out is None:  # a local server streams about one token per event
            estimated.append("output_tokens")
            spent_out = max(1, held.data.count(b"data:") or held.data.count(b"\n"))
        data: dict[str, Any] = {
            "reason": held.verdict.reason,
            "detail": held.verdict.detail,
            "from": call.backend.name,
            "to": to,
            "rule": job.decision.rule,
            "model": call.model,
            "input_tokens": spent_in,
            "output_tokens": spent_out,
            "ms": ms,
        }
        if estimated:
            data["estimated"] = estimated
        self.ledger.emit(ESCALATED, data, job.turn_id)
        reason = held.verdict.reason or ""
        self.ledger.record(self.turns.escalated(job.opened, call.backend.name, call.model, reason))
