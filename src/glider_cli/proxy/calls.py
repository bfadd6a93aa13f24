"""The values of one proxied request: the request as read (`Inbound`), the job the core opened for it
(`Job`), one attempt at one backend (`Call`), what the observers are told once its reply is out
(`Observed`), and the `x-glider-route` header and failure records the attempts produce.

`Inbound`, `Job` and `Call` are plain `@dataclass`es, mutable by design (a request's packs are cached
on it, a job gathers its attempts, a call notes its own first byte and failure through its methods):
the one value idiom is in `values` (immutable values are `values.Frozen`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from glider_cli.backends.registry import Backend
from glider_cli.domain import ChatRequest, RouteDecision
from glider_cli.errors import BackendOpen, BackendTimeout, GliderError, UpstreamStatus
from glider_cli.protocol.reply_tap import ReplyTap
from glider_cli.turns.lifecycle import Opened
from glider_cli.turns.pack import Packed
from glider_cli.values import Frozen

JSON_HEADERS = [(b"content-type", b"application/json")]
_SAFE = " !#$&()*+,-./:<=>?@[]^_`{|}~"
CLIENT_PATH = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
Headers = list[tuple[str, str]]  # names lower-case


@functools.lru_cache(maxsize=1024)  # a handful of (side, rule, backend) values repeat on every reply
def route_header(
    side: str,
    rule: str,
    backend: str,
    fallback_from: str | None = None,
    model: str | None = None,
    escalated: str | None = None,
) -> str:
    value = f"{side}; rule={quote(rule, safe=_SAFE)}; backend={backend}"
    if model:
        value += f"; model={quote(model, safe=_SAFE)}"
    if fallback_from:
        value += f"; fallback-from={fallback_from}"
    if escalated:
        value += f"; escalated={escalated}"
    return value


def reply_route(job: Job, call: Call) -> bytes:
    """The `x-glider-route` value (its bytes) of the reply `call` gives to `job` (`; escalated=<reason>`
    when it replaced a local reply that could not be used, `proxy.escalate`)."""
    backend = call.backend
    return _route_bytes(
        backend.side, job.opened.decision.rule, backend.name, call.fallback_from, call.model, call.escalated
    )


@functools.lru_cache(maxsize=1024)
def _route_bytes(
    side: str,
    rule: str,
    backend: str,
    fallback_from: str | None,
    model: str | None,
    escalated: str | None,
) -> bytes:
    return route_header(side, rule, backend, fallback_from, model, escalated).encode("latin-1")


@dataclass
class Inbound:
    """One client request as read: its raw bytes are kept so passthrough can send them unchanged."""

    protocol: str
    raw: bytes
    body: dict[str, Any]
    headers: Headers
    query: str
    chat: ChatRequest
    path: str = ""
    # The packs made for this request's local backends, by whether the backend takes tools.
    packs: dict[bool, Packed] = field(default_factory=dict)
    # False for Glider's own requests built on top of the client's (a judge's question, a pipeline's
    # next stage): they are sent as built, never packed again.
    pack: bool = True


@dataclass
class Job:
    inb: Inbound
    opened: Opened
    tap: ReplyTap | None = None
    # Every attempt made for this request, in order (`Dispatch.forward` adds them; a failed one says
    # why in its `error`): what the observer reads for a fallback's trace.
    calls: list[Call] = field(default_factory=list)

    @property
    def decision(self) -> RouteDecision:
        return self.opened.decision

    @property
    def turn_id(self) -> str | None:
        return self.opened.turn_id

    def observed(self) -> Observed:
        return Observed(self.inb.protocol, self.opened, self.calls)


class Observed(Frozen):
    """What the observers (`glider serve`'s line, the telemetry's spans) are told of a request once its
    reply is out: the client's protocol (`cursor` for the Cursor door), the turn opened for it (its
    decision, its request) and every attempt made, in order (a failed one says why in `error`)."""

    protocol: str
    opened: Opened
    calls: Sequence[Call]

    def __init__(self, protocol: str, opened: Opened, calls: Sequence[Call] = ()) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.protocol = protocol
        s.opened = opened
        s.calls = calls

    @property
    def chat(self) -> ChatRequest:
        return self.opened.chat

    @property
    def decision(self) -> RouteDecision:
        return self.opened.decision

    @property
    def turn_id(self) -> str | None:
        return self.opened.turn_id


@dataclass
class Call:
    """One attempt at one backend."""

    backend: Backend
    passthrough: bool
    url: str
    headers: dict[str, str]
    body: bytes
    model: str | None
    fallback_from: str | None = None
    started: float = field(default_factory=time.perf_counter)
    # Why the reply of the local backend it falls back from could not be used (`proxy.escalate`).
    escalated: str | None = None
    # When the reply's first body chunk came (a stream's: `first_byte`), on the `started` clock.
    first_chunk: float | None = None
    # Why and when the attempt failed before its reply began (None: it did not): `failed`.
    error: GliderError | None = None
    ended: float | None = None

    def first_byte(self) -> None:
        """The reply's first body chunk came now (kept once)."""
        if self.first_chunk is None:
            self.first_chunk = time.perf_counter()

    def failed(self, exc: GliderError) -> None:
        """The attempt failed now, before its reply began, for `exc`."""
        self.error, self.ended = exc, time.perf_counter()


def failure_record(backend: Backend, exc: GliderError, stage: str) -> dict[str, Any]:
    """An `UpstreamFailed` event's data; a backend skipped by its open breaker: stage `breaker_open`."""
    return {
        "backend": backend.name,
        "side": backend.side,
        "status": exc.status if isinstance(exc, UpstreamStatus) else None,
        "error": exc.message,
        "stage": "breaker_open" if isinstance(exc, BackendOpen) else stage,
    }


def fallback_reason(exc: GliderError) -> str:
    if isinstance(exc, BackendOpen):
        return "breaker open"
    if isinstance(exc, UpstreamStatus):
        return f"status {exc.status}"
    if isinstance(exc, BackendTimeout):
        return "timeout"
    return "unreachable"
