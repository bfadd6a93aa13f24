"""One served request as an OpenTelemetry trace, named and attributed as the GenAI conventions say.

`Recorder(tracer, meter, telemetry, prices)` is told of each request once its reply is out
(`observe(observed, served)`, the engine's observer), of each request the capability gate refused
(`refused(inb, exc)`) and of each `LocalRegret` event (`regret(turn_id, data)`); it never raises.

The trace of a request — one span per attempt at a backend (kind CLIENT), named
`{gen_ai.operation.name} {gen_ai.request.model}`:
- one attempt (the common case): that one span, with both the call's and the request's attributes;
- a fallback: a span for the logical operation (named for the client's model, from the first attempt
  to the answer, as the conventions ask of retries) with a span per attempt under it — two for one
  fallback, the failed one with `error.type` and an error status; the tokens are on the attempt that
  answered.
The call's attributes: `gen_ai.operation.name` (`chat`), the provider (`gen_ai.system`, or
`gen_ai.provider.name` with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`),
`gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.request.max_tokens`,
`gen_ai.usage.input_tokens` / `output_tokens` / `cache_read.input_tokens` /
`cache_creation.input_tokens`, `gen_ai.response.finish_reasons`, the time to the first chunk of a
stream (`gen_ai.response.time_to_first_chunk` in the newer conventions, `glider.time_to_first_chunk`
in both), `server.address` / `server.port` of the real upstream, `error.type`. The request's, Glider's
own: `glider.side`, `glider.rule`, `glider.decision.source` (command, sticky, classifier, complexity,
script, rule), `glider.turn_id` (the turn family), `glider.sticky`, `glider.client`, `glider.backend`,
`glider.fallback_from`, `glider.requested_model`, and the estimates `glider.cost.estimated_usd` and (a
local answer) `glider.savings.estimated_usd` — what the client's model would have cost in the cloud
(estimates from the price table, and so named).
Times come from the proxy's clock readings (each attempt's start, its failure, its first chunk), so
the spans are built after the reply is out, never while the client waits.

Metrics (the conventions' instruments, with `glider.side` and `glider.rule` beside theirs):
`gen_ai.client.token.usage` (`gen_ai.token.type` input/output) and
`gen_ai.client.operation.duration`, and in the newer conventions
`gen_ai.client.operation.time_to_first_chunk`.

A regret recorded later (`turns.regret`) becomes a span `glider.regret` in the regretted turn's
trace, linked to that turn's last span, with a span event `glider.regret` carrying the kind and
evidence. Content (the request's messages, a whole reply, the tool calls a reply made) is attached
only with `telemetry.capture_content`, after the store's redaction (`store.eventlog.redact`);
header values and keys never.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from glider_cli.config.pricing import PriceTable, cost
from glider_cli.config.telemetry import Telemetry
from glider_cli.errors import (
    BackendOpen,
    BackendTimeout,
    GateRefused,
    GliderError,
    ReplyUnusable,
    UpstreamStatus,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Histogram, Meter
    from opentelemetry.trace import Span, SpanContext, Tracer

    from glider_cli.domain import ChatRequest
    from glider_cli.proxy import Call, Inbound, Observed, Served

# The provider names of the conventions (`gen_ai.provider.name` / `gen_ai.system`), by backend kind;
# an `origin` backend is the client's own provider, by the client's protocol.
_PROVIDER = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openrouter": "openrouter",
    "ollama": "ollama",
    "vllm": "vllm",
    "llamacpp": "llama.cpp",
    "llama_cpp": "llama.cpp",
    "gemini": "gcp.gemini",
}
_ORIGIN_PROVIDER = {
    "anthropic": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
    "gemini": "gcp.gemini",
}
_DEFAULT_PORT = {"http": 80, "https": 443}
# Token usage histogram buckets the conventions ask for.
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_MAX_TURNS = 4096  # turns whose last span a later regret can link to


def latest_conventions(environ: Mapping[str, str]) -> bool:
    """`OTEL_SEMCONV_STABILITY_OPT_IN` names `gen_ai_latest_experimental`: the newer GenAI names."""
    opted = environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "")
    return "gen_ai_latest_experimental" in {v.strip() for v in opted.split(",")}


def token_buckets() -> tuple[int, ...]:
    return _TOKEN_BUCKETS


def duration_buckets() -> tuple[float, ...]:
    return _DURATION_BUCKETS


class Recorder:
    """Requests, refusals and regrets as spans and metrics (see the module contract)."""

    def __init__(
        self, tracer: Tracer, meter: Meter | None, telemetry: Telemetry, prices: PriceTable, *, latest: bool
    ) -> None:
        self.tracer = tracer
        self.telemetry = telemetry
        self.prices = prices
        self.latest = latest
        self.provider_key = "gen_ai.provider.name" if latest else "gen_ai.system"
        self.tokens: Histogram | None = None
        self.duration: Histogram | None = None
        self.first_chunk: Histogram | None = None
        if meter is not None:  # None: OTEL_METRICS_EXPORTER=none
            self.tokens = meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used",
            )
            self.duration = meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
            )
            if latest:
                self.first_chunk = meter.create_histogram(
                    "gen_ai.client.operation.time_to_first_chunk",
                    unit="s",
                    description="Time to receive the first chunk of a streamed reply",
                )
        # turn id -> the context of the last span of that turn (what a later regret links to)
        self._turns: OrderedDict[str, SpanContext] = OrderedDict()
        self.errors = 0  # spans that could not be built (counted; never raised into a request)

    # ------------------------------------------------------------------------------ requests

    def observe(self, observed: Observed, served: Served) -> None:
        try:
            self._request(observed, served)
        except Exception:
            self.errors += 1

    def _request(self, observed: Observed, served: Served) -> None:
        now_ns, now = time.time_ns(), time.perf_counter()

        def at(reading: float) -> int:
            return now_ns - int((now - reading) * 1e9)

        calls = observed.calls
        failed = [c for c in calls if c.error is not None]
        answered = next((c for c in calls if c.error is None), None)
        if not failed:
            # One attempt (the common case): one span, the request's and the call's attributes together.
            started = answered.started if answered is not None else now - served.ms / 1000
            span = self._attempt(observed, answered, served, at(started), None, whole=True)
            if span.is_recording() and self.telemetry.capture_content:
                self._capture_request(span, observed.chat)
            span.end(end_time=at(started + served.ms / 1000) if served.ms else now_ns)
            self._remember(observed.turn_id, span)
            self._metrics(observed, answered, served, None, served.ms / 1000)
            return
        # A fallback: the logical operation (from the first attempt to the answer) with a span per
        # attempt under it, as the conventions say of retries; the usage is on the attempt that answered.
        model = observed.chat.model
        root = self.tracer.start_span(
            _span_name(model), kind=SpanKind.CLIENT, start_time=at(calls[0].started)
        )
        if root.is_recording():
            root.set_attributes(self._root_attributes(observed, served))
            root.set_attribute("gen_ai.operation.name", "chat")
            if self.telemetry.capture_content:
                self._capture_request(root, observed.chat)
        context = trace.set_span_in_context(root)
        for call in failed:
            assert call.error is not None
            span = self._attempt(observed, call, None, at(call.started), context)
            if span.is_recording():
                span.set_attribute("error.type", _error_type(call.error))
                span.set_status(Status(StatusCode.ERROR, call.error.message))
            span.end(end_time=at(call.ended) if call.ended is not None else now_ns)
            self._metrics(observed, call, None, call.error, (call.ended or now) - call.started)
        if answered is not None:
            span = self._attempt(observed, answered, served, at(answered.started), context)
            span.end(end_time=at(answered.started + served.ms / 1000) if served.ms else now_ns)
            self._metrics(observed, answered, served, None, served.ms / 1000)
        if served.status >= 400 or served.end == "failed":
            root.set_status(Status(StatusCode.ERROR))
            root.set_attribute("error.type", str(served.status) if served.status else "failed")
        root.end(end_time=now_ns)
        self._remember(observed.turn_id, root)

    def _attempt(
        self,
        observed: Observed,
        call: Call | None,
        served: Served | None,
        start: int,
        context: Context | None,
        *,
        whole: bool = False,
    ) -> Span:
        """The span of one attempt at a backend (`served`: what it answered, None for a failed one);
        `whole`: the request's only attempt, so the span carries the request's attributes too."""
        model = (call.model if call is not None else None) or (served.model if served is not None else None)
        span = self.tracer.start_span(
            _span_name(model), context=context, kind=SpanKind.CLIENT, start_time=start
        )
        if not span.is_recording():
            return span
        attrs = self._attempt_attributes(observed, call, served)
        if whole and served is not None:
            attrs.update(self._root_attributes(observed, served))
        span.set_attributes(attrs)
        if served is None:
            return span
        if call is not None and call.first_chunk is not None:
            ttfc = round(call.first_chunk - call.started, 6)
            span.set_attribute("glider.time_to_first_chunk", ttfc)
            if self.latest:
                span.set_attribute("gen_ai.response.time_to_first_chunk", ttfc)
        if served.status >= 400 or served.end == "failed":
            span.set_attribute("error.type", str(served.status) if served.status else "failed")
            span.set_status(Status(StatusCode.ERROR))
        elif served.end == "cut":
            span.set_attribute("error.type", "cut")
        if self.telemetry.capture_content and served.calls:
            made = [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in served.calls]
            _capture(span, "glider.output.tool_calls", made)
        return span

    def _root_attributes(self, observed: Observed, served: Served) -> dict[str, Any]:
        decision, opened = observed.decision, observed.opened
        attrs: dict[str, Any] = {
            "glider.client": observed.protocol,
            "glider.side": served.side,
            "glider.rule": decision.rule,
            "glider.decision.source": _source(observed),
            "glider.sticky": bool(opened.plan.view.bound or opened.plan.forced is not None),
            # The client's model, not as `gen_ai.request.model`: the root is not an inference call
            # (receivers that count calls by the GenAI attributes would count the request twice).
            "glider.requested_model": observed.chat.model or "",
        }
        if observed.turn_id is not None:
            attrs["glider.turn_id"] = observed.turn_id
        if served.backend is not None:
            attrs["glider.backend"] = served.backend
        if served.fallback_from:
            attrs["glider.fallback_from"] = served.fallback_from
        if served.disconnected:
            attrs["glider.client_disconnected"] = True
        spent, saved = self._estimates(observed, served)
        attrs["glider.cost.estimated_usd"] = spent
        if served.side == "local":
            attrs["glider.savings.estimated_usd"] = saved
        return attrs

    def _call_attributes(
        self, observed: Observed, call: Call | None, served: Served | None
    ) -> dict[str, Any]:
        """What a call's span and its metrics both say: the operation, the provider, the model asked
        for, the side and rule, and the real upstream's address."""
        backend = call.backend if call is not None else None
        model = (call.model if call is not None else None) or (served.model if served is not None else None)
        kind = backend.kind if backend is not None else ""
        origin = kind == "origin"
        provider = (
            _ORIGIN_PROVIDER.get(observed.protocol, "anthropic") if origin else _PROVIDER.get(kind, kind)
        )
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            self.provider_key: provider or "unknown",
            "gen_ai.request.model": model or "",
            "glider.side": backend.side if backend is not None else (served.side if served else ""),
            "glider.rule": observed.decision.rule,
        }
        if call is not None:
            host, port = _server(call.url)
            if host:
                attrs["server.address"] = host
                attrs["server.port"] = port
        return attrs

    def _attempt_attributes(
        self, observed: Observed, call: Call | None, served: Served | None
    ) -> dict[str, Any]:
        chat = observed.chat
        attrs = self._call_attributes(observed, call, served)
        model = attrs["gen_ai.request.model"]
        attrs["glider.backend"] = (
            call.backend.name if call is not None else (served.backend if served else "")
        )
        if chat.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = chat.max_tokens
        if self.latest and chat.session_id:
            attrs["gen_ai.conversation.id"] = chat.session_id
        if served is not None:
            attrs["gen_ai.response.model"] = served.model or model or ""
            if served.input_tokens is not None:
                attrs["gen_ai.usage.input_tokens"] = served.input_tokens
            if served.output_tokens is not None:
                attrs["gen_ai.usage.output_tokens"] = served.output_tokens
            read = served.cache.get("cache_read_tokens")
            if isinstance(read, int):
                attrs["gen_ai.usage.cache_read.input_tokens"] = read
            write = served.cache.get("cache_write_tokens")
            if isinstance(write, int):
                attrs["gen_ai.usage.cache_creation.input_tokens"] = write
            attrs["gen_ai.response.finish_reasons"] = _finish_reasons(served)
        return attrs

    def _metrics(
        self,
        observed: Observed,
        call: Call | None,
        served: Served | None,
        error: GliderError | None,
        seconds: float,
    ) -> None:
        if self.duration is None or self.tokens is None:
            return
        attrs = self._call_attributes(observed, call, served)
        if error is not None:
            attrs["error.type"] = _error_type(error)
        elif served is not None and (served.status >= 400 or served.end == "failed"):
            attrs["error.type"] = str(served.status) if served.status else "failed"
        self.duration.record(seconds, attrs)
        if served is None or served.status >= 400:
            return
        if served.model:
            attrs["gen_ai.response.model"] = served.model
        if served.input_tokens is not None:
            self.tokens.record(served.input_tokens, {**attrs, "gen_ai.token.type": "input"})
        if served.output_tokens is not None:
            self.tokens.record(served.output_tokens, {**attrs, "gen_ai.token.type": "output"})
        if self.first_chunk is not None and call is not None and call.first_chunk is not None:
            self.first_chunk.record(call.first_chunk - call.started, attrs)

    def _estimates(self, observed: Observed, served: Served) -> tuple[float, float]:
        """What this answer cost and, for a local one, what the client's model would have cost."""
        if served.status >= 400 or served.status == 0:
            return 0.0, 0.0
        inp, out = served.input_tokens or 0, served.output_tokens or 0
        read = served.cache.get("cache_read_tokens") or 0
        write = served.cache.get("cache_write_tokens") or 0
        if served.cache.get("cache_in_input"):
            inp = max(0, inp - read)
        spent = cost(self.prices.price(served.model, served.side), inp, out, read, write)
        saved = 0.0
        if served.side == "local":
            saved = cost(self.prices.price(observed.chat.model, "cloud"), inp, out, read, write)
        return round(spent, 8), round(saved, 8)

    def _capture_request(self, span: Span, chat: ChatRequest) -> None:
        messages = [{"role": m.role, "content": m.content} for m in chat.messages]
        _capture(span, "gen_ai.input.messages", messages)

    # ------------------------------------------------------------------------------ refusals, regrets

    def refused(self, inb: Inbound, exc: GateRefused) -> None:
        try:
            span = self.tracer.start_span(f"glider {inb.protocol}", kind=SpanKind.SERVER)
            if span.is_recording():
                span.set_attributes(
                    {
                        "glider.client": inb.protocol,
                        "glider.side": "local",
                        "glider.rule": exc.rule or "gate",
                        "glider.decision.source": "gate",
                        "glider.status": 400,
                        "glider.refused": exc.message,
                        "error.type": "gate_refused",
                        "glider.requested_model": inb.chat.model or "",
                    }
                )
                if exc.backend:
                    span.set_attribute("glider.backend", exc.backend)
                span.set_status(Status(StatusCode.ERROR, exc.message))
            span.end()
        except Exception:
            self.errors += 1

    def regret(self, turn_id: str | None, data: Mapping[str, Any]) -> None:
        """A `LocalRegret`: a span in the regretted turn's trace, linked to its last span, with the
        signal as a span event."""
        try:
            linked = self._turns.get(turn_id) if turn_id is not None else None
            context = (
                trace.set_span_in_context(trace.NonRecordingSpan(linked)) if linked is not None else None
            )
            attrs = {
                "glider.regret.kind": str(data.get("kind", "")),
                "glider.regret.evidence": str(data.get("evidence", ""))[:200],
                "glider.rule": str(data.get("rule") or ""),
                "glider.backend": str(data.get("backend") or ""),
            }
            if turn_id is not None:
                attrs["glider.turn_id"] = turn_id
            links = [Link(linked, {"glider.link": "regretted turn"})] if linked is not None else None
            span = self.tracer.start_span(
                "glider.regret", context=context, kind=SpanKind.INTERNAL, links=links
            )
            if span.is_recording():
                span.set_attributes(attrs)
                span.add_event("glider.regret", attrs)
            span.end()
        except Exception:
            self.errors += 1

    def _remember(self, turn: str | None, span: Span) -> None:
        ctx = span.get_span_context()
        if turn is None or not ctx.is_valid or not ctx.trace_flags.sampled:
            return
        turns = self._turns
        turns[turn] = ctx
        turns.move_to_end(turn)
        if len(turns) > _MAX_TURNS:
            turns.popitem(last=False)


def _span_name(model: str | None) -> str:
    return f"chat {model}" if model else "chat"


def _server(url: str) -> tuple[str | None, int]:
    parts = urlsplit(url)
    host = parts.hostname
    try:
        port = parts.port
    except ValueError:
        port = None
    return host, port or _DEFAULT_PORT.get(parts.scheme, 0)


def _error_type(exc: GliderError) -> str:
    if isinstance(exc, UpstreamStatus):
        return str(exc.status)
    if isinstance(exc, BackendTimeout):
        return "timeout"
    if isinstance(exc, BackendOpen):
        return "breaker_open"
    if isinstance(exc, ReplyUnusable):  # escalated: the reply came, but could not be used
        return f"escalated:{exc.reason}"
    return "unreachable"


def _finish_reasons(served: Served) -> list[str]:
    if served.at_limit:
        return ["length"]
    if served.calls:
        return ["tool_calls"]
    if served.end in ("cut", "failed") or not served.complete:
        return ["error"] if served.end else ["incomplete"]
    return ["stop"]


def _source(observed: Observed) -> str:
    """Which part of the router had control: an explicit command, the family (sticky), the task
    classifier, the complexity rule, a Starlark script, or an ordinary rule."""
    decision = observed.decision
    if decision.command:
        return "command"
    if observed.opened.plan.forced is not None:
        return "sticky"
    rule = decision.rule
    if rule.startswith("task_classifier"):
        return "classifier"
    if rule.startswith("complexity"):
        return "complexity"
    if decision.where and decision.where.endswith(".star"):
        return "script"
    return "rule"


def _capture(span: Span, key: str, value: Any) -> None:
    """Content on a span, redacted as the store redacts what it writes (never a key or a header)."""
    from glider_cli.store.eventlog.redact import redact

    span.set_attribute(key, orjson.dumps(redact(value)).decode())
