"""The OpenTelemetry SDK as `glider serve` runs it: providers, the OTLP exporters, and what was dropped.

`Export(telemetry)` builds a `TracerProvider` (the resource: `service.name`, Glider's version and the
config's or `OTEL_RESOURCE_ATTRIBUTES`' team/person/project attributes; a parent-based trace-id
ratio sampler, so a trace is kept or dropped whole) whose spans go through the SDK's
`BatchSpanProcessor` (a bounded queue and a thread of its own: nothing is exported on the request
path) to the OTLP exporter of the configured protocol (`http/protobuf` by default, `grpc` where
asked), and a `MeterProvider` whose metrics are exported every `OTEL_METRIC_EXPORT_INTERVAL` (60 s by
default) by the SDK's periodic reader. Headers (`OTEL_EXPORTER_OTLP_HEADERS`) are read by the
exporters themselves from the environment.

What did not reach the collector is counted (`counts()`, shown by `/healthz` and `glider doctor`):
`dropped` spans (the queue was full when one ended — the SDK drops the oldest then — or an export of
them failed: a collector that is down costs these and nothing else), `exported` spans, the failed
exports and the last error. `shutdown()` exports what is queued (bounded by `timeout`) and stops.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased

from glider_cli.config.telemetry import Telemetry


class Counts:
    """Spans handed to the exporter, exported, dropped; failed exports and the last error (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ended = 0  # spans that ended sampled (handed to the batch queue)
        self.handed = 0  # spans the queue handed to the exporter
        self.exported = 0
        self.queue_full = 0  # spans dropped because the queue was full when one ended
        self.failed_spans = 0  # spans in exports that failed
        self.failed_exports = 0
        self.last_error: str | None = None
        self.last_failed = False  # the newest export failed (the collector is down, for now)

    def queued(self) -> int:
        return self.ended - self.handed - self.queue_full

    def span_ended(self, capacity: int) -> None:
        """A sampled span ended and goes to a queue of `capacity` (the oldest dropped when full)."""
        with self._lock:
            if self.queued() >= capacity:
                self.queue_full += 1
            self.ended += 1

    def handing(self, n: int) -> None:
        """The queue hands `n` spans to the exporter."""
        with self._lock:
            self.handed += n

    def exported_spans(self, n: int, error: str | None) -> None:
        """An export of `n` spans ended: done when `error` is None, else failed with it."""
        with self._lock:
            self.last_failed = error is not None
            if error is None:
                self.exported += n
            else:
                self.failed_spans += n
                self.failed_exports += 1
                self.last_error = error

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "exported": self.exported,
                "dropped": self.queue_full + self.failed_spans,
                "dropped_queue_full": self.queue_full,
                "dropped_export_failed": self.failed_spans,
                "failed_exports": self.failed_exports,
                "queued": max(0, self.queued()),
                "last_error": self.last_error,
            }


class _Counted(SpanExporter):
    """The OTLP exporter, with what it exported and failed to export counted."""

    def __init__(self, inner: SpanExporter, counts: Counts) -> None:
        self.inner = inner
        self.counts = counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        n = len(spans)
        self.counts.handing(n)
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter that raises is a failed export, never a crash
            result = SpanExportResult.FAILURE
            error: str | None = f"{type(exc).__name__}: {exc}"
        else:
            error = None if result is SpanExportResult.SUCCESS else "the collector did not take the spans"
        self.counts.exported_spans(n, error)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _Queue(SpanProcessor):
    """The SDK's BatchSpanProcessor, with the spans it drops for a full queue counted: it drops the
    oldest span when one ends while `capacity` wait (the SDK says so only in a log line)."""

    def __init__(self, inner: BatchSpanProcessor, counts: Counts, capacity: int) -> None:
        self.inner = inner
        self.counts = counts
        self.capacity = capacity

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if not (span.context and span.context.trace_flags.sampled):
            return
        self.counts.span_ended(self.capacity)
        self.inner.on_end(span)

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Export:
    """The providers and exporters of one `glider serve` (see the module contract)."""

    def __init__(self, telemetry: Telemetry, *, version: str, views: Sequence[Any] = ()) -> None:
        self.telemetry = telemetry
        self.counts = Counts()
        attributes: dict[str, Any] = {"service.name": telemetry.service_name, "service.version": version}
        attributes.update(telemetry.resource)
        # Resource(...) rather than Resource.create: the environment was read into `telemetry` already
        # (config first, then OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES), so it is not read twice.
        resource = Resource(attributes)
        span_exporter, metric_exporter = _exporters(telemetry)
        self.span_exporter = span_exporter
        # OTEL_TRACES_EXPORTER=none: every span sampled out (nothing built, nothing exported).
        sampler = ParentBased(TraceIdRatioBased(telemetry.sample_ratio)) if telemetry.traces else ALWAYS_OFF
        self.tracer_provider = TracerProvider(resource=resource, sampler=sampler)
        batch = BatchSpanProcessor(
            _Counted(span_exporter, self.counts), max_queue_size=telemetry.max_queue_size
        )
        self.tracer_provider.add_span_processor(_Queue(batch, self.counts, telemetry.max_queue_size))
        self.metric_exporter = metric_exporter
        # OTEL_METRICS_EXPORTER=none: no reader (and the recorder records nothing).
        readers = [PeriodicExportingMetricReader(metric_exporter)] if telemetry.metrics else []
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers, views=views)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Export what is queued, then stop the exporters' threads. With a collector that failed the
        last export, the exporters are stopped first: what is queued is dropped (and counted) at once
        instead of each batch waiting out the exporter's retries, so `glider serve` stops promptly."""
        ms = int(timeout * 1000)
        if self.counts.last_failed:
            self.span_exporter.shutdown()
            self.metric_exporter.shutdown(timeout_millis=0)
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown(timeout_millis=ms)


def _exporters(telemetry: Telemetry) -> tuple[SpanExporter, Any]:
    """The OTLP span and metric exporters of the configured protocol (gRPC imported only when asked)."""
    if telemetry.protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise RuntimeError(
                "telemetry.protocol grpc needs the gRPC exporter: pip install 'glider-cli[telemetry-grpc]'"
            ) from exc
        endpoint = telemetry.traces_endpoint or telemetry.endpoint
        return OTLPSpanExporter(endpoint=endpoint), OTLPMetricExporter(endpoint=telemetry.endpoint)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HTTPMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPSpanExporter

    traces = telemetry.traces_endpoint or f"{telemetry.endpoint}/v1/traces"
    return HTTPSpanExporter(endpoint=traces), HTTPMetricExporter(endpoint=f"{telemetry.endpoint}/v1/metrics")
