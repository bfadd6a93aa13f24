"""Every routed request as OpenTelemetry, for a team's own observability stack (`telemetry:`).

Imported only when telemetry is on (`config.telemetry.effective(...).on`): with it off, `glider serve`
imports nothing of OpenTelemetry and its requests pay nothing. The app (`server.app`) uses:

    tel = Telemetry.start(effective, prices, environ)   # the SDK's providers and OTLP exporters
    observer = tel.observer(observer)                    # the proxy's observer, with spans added
    refused = tel.refused_observer(refused)              # a gate refusal as a span too
    sink = tel.tap(sink)                                 # LocalRegret events become linked spans
    tel.health()                                         # what /healthz and `glider doctor` show
    tel.shutdown()                                       # export what is queued, stop

Spans and metrics are built by `telemetry.spans.Recorder` once a reply is out, and handed to the
SDK's batch processor (`telemetry.export`): exporting happens on its thread, never on a request's.
Nothing of a prompt, a reply or a header leaves the machine unless `telemetry.capture_content` is on,
and then only redacted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from glider_cli.config.pricing import PriceTable
from glider_cli.config.telemetry import Telemetry as TelemetryConfig
from glider_cli.domain import EventSink
from glider_cli.errors import GateRefused
from glider_cli.store.eventlog.events import LOCAL_REGRET
from glider_cli.telemetry.export import Export
from glider_cli.telemetry.spans import Recorder, duration_buckets, latest_conventions, token_buckets

if TYPE_CHECKING:
    from glider_cli.proxy import Inbound, Observed, Served

__all__ = ["Telemetry"]

Observer = Callable[["Observed", "Served"], None]
RefusedObserver = Callable[["Inbound", GateRefused], None]

# The SDK's exporters log every failed export; a collector that is down is counted and shown
# (`/healthz`, `glider doctor`) instead of filling `glider serve`'s terminal.
_QUIET = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.metrics")


class Telemetry:
    """The export of one `glider serve` (see the module contract)."""

    def __init__(self, config: TelemetryConfig, export: Export, recorder: Recorder) -> None:
        self.config = config
        self.export = export
        self.recorder = recorder

    @classmethod
    def start(cls, config: TelemetryConfig, prices: PriceTable, environ: Mapping[str, str]) -> Telemetry:
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

        from glider_cli import __version__

        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        views = [
            View(
                instrument_name="gen_ai.client.token.usage",
                aggregation=ExplicitBucketHistogramAggregation(token_buckets()),
            ),
            View(
                instrument_name="gen_ai.client.operation.*",
                aggregation=ExplicitBucketHistogramAggregation(duration_buckets()),
            ),
        ]
        export = Export(config, version=__version__, views=views)
        tracer = export.tracer_provider.get_tracer("glider_cli", __version__)
        meter = export.meter_provider.get_meter("glider_cli", __version__) if config.metrics else None
        recorder = Recorder(tracer, meter, config, prices, latest=latest_conventions(environ))
        return cls(config, export, recorder)

    def observer(self, then: Observer | None) -> Observer:
        """The engine's observer: spans for the request, then `then` (the terminal's line)."""
        record = self.recorder.observe
        if then is None:
            return record

        def both(observed: Observed, served: Served) -> None:
            record(observed, served)
            then(observed, served)

        return both

    def refused_observer(self, then: RefusedObserver | None) -> RefusedObserver:
        record = self.recorder.refused
        if then is None:
            return record

        def both(inb: Inbound, exc: GateRefused) -> None:
            record(inb, exc)
            then(inb, exc)

        return both

    def tap(self, sink: EventSink) -> EventSink:
        """`sink`, with each `LocalRegret` also given to the recorder."""
        return _RegretTap(sink, self.recorder)

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.config.to_dict())
        out.update(self.export.counts.to_dict())
        out["span_errors"] = self.recorder.errors
        return out

    def shutdown(self, timeout: float = 5.0) -> None:
        self.export.shutdown(timeout)


class _RegretTap:
    """An EventSink that passes every event on and shows each LocalRegret to the recorder."""

    def __init__(self, sink: EventSink, recorder: Recorder) -> None:
        self.sink = sink
        self.recorder = recorder

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        self.sink.emit(type, data, turn_id=turn_id)
        if type == LOCAL_REGRET:
            self.recorder.regret(turn_id, data)
