"""The `telemetry:` section: every routed request as OpenTelemetry (OTLP), for a team's own stack.

    telemetry:
      enabled: true                   # off by default; OTEL_EXPORTER_OTLP_ENDPOINT also turns it on
      endpoint: http://127.0.0.1:6006 # the collector's base URL (OTLP/HTTP adds /v1/traces, /v1/metrics)
      protocol: http/protobuf         # or grpc (needs opentelemetry-exporter-otlp-proto-grpc)
      service_name: glider            # OTEL_SERVICE_NAME wins over it
      resource: {team: payments, project: checkout, person: ana}   # OTEL_RESOURCE_ATTRIBUTES wins
      sample_ratio: 1.0               # whole traces kept or dropped (0.0-1.0)
      capture_content: false          # prompts and replies, redacted, only when true
      max_queue_size: 2048            # spans waiting for export; beyond it they are dropped, counted

What the standard variables say (the OpenTelemetry SDK's own names) fills what the section leaves out
and, where a person's environment is more specific than a shared profile, wins: the endpoint
(`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), the protocol
(`OTEL_EXPORTER_OTLP_PROTOCOL`), headers (`OTEL_EXPORTER_OTLP_HEADERS`: read by the exporter itself,
so an API key never sits in a config file), `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
`OTEL_TRACES_SAMPLER_ARG` (the ratio), `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` (no
spans, or no metrics: every request costs the metrics' records, a sampled-out one nothing else) and
`OTEL_SDK_DISABLED=true` (off, whatever the config says).
With no `telemetry:` section, an endpoint in the environment turns export on; `enabled: false` keeps
it off. `effective(settings, environ)` is what `glider serve` runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from glider_cli.config.located import Checker, LDict, or_default
from glider_cli.values import Frozen, init_fields

TELEMETRY_KEYS = (
    "enabled",
    "endpoint",
    "protocol",
    "service_name",
    "resource",
    "sample_ratio",
    "capture_content",
    "max_queue_size",
)
PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_ENDPOINT = {"http/protobuf": "http://localhost:4318", "grpc": "http://localhost:4317"}
_EMPTY: Mapping[str, str] = MappingProxyType({})


class TelemetrySettings(Frozen):
    """The section as written (None: not said there); `effective` adds the environment."""

    enabled: bool | None
    endpoint: str | None
    protocol: str | None
    service_name: str | None
    resource: Mapping[str, str]
    sample_ratio: float | None
    capture_content: bool
    max_queue_size: int

    def __init__(
        self,
        enabled: bool | None = None,
        endpoint: str | None = None,
        protocol: str | None = None,
        service_name: str | None = None,
        resource: Mapping[str, str] = _EMPTY,
        sample_ratio: float | None = None,
        capture_content: bool = False,
        max_queue_size: int = 2048,
    ) -> None:
        init_fields(
            self,
            enabled,
            endpoint,
            protocol,
            service_name,
            resource,
            sample_ratio,
            capture_content,
            max_queue_size,
        )


class Telemetry(Frozen):
    """What `glider serve` exports with: on or off, and where, after the environment had its say."""

    on: bool
    endpoint: str
    traces_endpoint: str | None  # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the whole URL, used as is
    protocol: str
    service_name: str
    resource: Mapping[str, str]
    sample_ratio: float
    capture_content: bool
    max_queue_size: int
    traces: bool  # OTEL_TRACES_EXPORTER=none: no spans
    metrics: bool  # OTEL_METRICS_EXPORTER=none: no metrics

    def __init__(
        self,
        on: bool,
        endpoint: str,
        traces_endpoint: str | None,
        protocol: str,
        service_name: str,
        resource: Mapping[str, str],
        sample_ratio: float,
        capture_content: bool,
        max_queue_size: int,
        traces: bool = True,
        metrics: bool = True,
    ) -> None:
        init_fields(
            self,
            on,
            endpoint,
            traces_endpoint,
            protocol,
            service_name,
            resource,
            sample_ratio,
            capture_content,
            max_queue_size,
            traces,
            metrics,
        )

    def to_dict(self) -> dict[str, object]:
        """What `/healthz` and `glider doctor` show (no header values: those stay in the environment)."""
        return {
            "enabled": self.on,
            "endpoint": self.traces_endpoint or self.endpoint,
            "protocol": self.protocol,
            "service_name": self.service_name,
            "sample_ratio": self.sample_ratio,
            "capture_content": self.capture_content,
            "traces": self.traces,
            "metrics": self.metrics,
        }


def read_telemetry(ck: Checker, top: LDict) -> TelemetrySettings:
    sec = ck.section(top, "telemetry", TELEMETRY_KEYS, path="telemetry")
    if sec is None:
        return TelemetrySettings()
    d = TelemetrySettings()
    endpoint = ck.string(sec, "endpoint", path="telemetry")
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        ck.error(
            f"must be an http:// or https:// URL, got {endpoint!r}",
            sec.where("endpoint"),
            key="telemetry.endpoint",
            hint="the collector's base URL, e.g. http://127.0.0.1:4318",
        )
        endpoint = None
    resource = ck.str_map(sec, "resource", path="telemetry")
    return TelemetrySettings(
        enabled=ck.boolean(sec, "enabled", path="telemetry"),
        endpoint=endpoint,
        protocol=ck.string(sec, "protocol", path="telemetry", choices=PROTOCOLS),
        service_name=ck.string(sec, "service_name", path="telemetry"),
        resource=MappingProxyType(resource) if resource else d.resource,
        sample_ratio=ck.number(sec, "sample_ratio", path="telemetry", between=(0.0, 1.0)),
        capture_content=or_default(ck.boolean(sec, "capture_content", path="telemetry"), d.capture_content),
        max_queue_size=or_default(
            ck.integer(sec, "max_queue_size", path="telemetry", minimum=1, maximum=1_000_000),
            d.max_queue_size,
        ),
    )


def effective(settings: TelemetrySettings, environ: Mapping[str, str]) -> Telemetry:
    """The section with the standard OpenTelemetry variables applied (see the module notes)."""
    env_endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None
    traces_endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or None
    # Said in the config, or (no `telemetry:` section, or no `enabled:` in it) an endpoint in the env.
    on = bool(env_endpoint or traces_endpoint) if settings.enabled is None else settings.enabled
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        on = False
    protocol = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or settings.protocol or "http/protobuf"
    if protocol not in PROTOCOLS:
        protocol = "http/protobuf"
    endpoint = env_endpoint or settings.endpoint or DEFAULT_ENDPOINT[protocol]
    service = environ.get("OTEL_SERVICE_NAME") or settings.service_name or "glider"
    resource = dict(settings.resource)
    resource.update(_resource_attributes(environ.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    ratio = settings.sample_ratio
    arg = environ.get("OTEL_TRACES_SAMPLER_ARG")
    if arg:
        try:
            ratio = min(1.0, max(0.0, float(arg)))
        except ValueError:
            pass
    return Telemetry(
        on,
        endpoint.rstrip("/"),
        traces_endpoint,
        protocol,
        service,
        MappingProxyType(resource),
        1.0 if ratio is None else ratio,
        settings.capture_content,
        settings.max_queue_size,
        environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "none",
        environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() != "none",
    )


def _resource_attributes(raw: str) -> dict[str, str]:
    """`OTEL_RESOURCE_ATTRIBUTES` (`k=v,k2=v2`, values percent-encoded) as a dict; bad pairs are skipped."""
    from urllib.parse import unquote

    out: dict[str, str] = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            out[key.strip()] = unquote(value.strip())
    return out
