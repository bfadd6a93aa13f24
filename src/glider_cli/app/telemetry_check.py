"""What `glider doctor` says of the OTLP export (`telemetry:`): on or off, whether the endpoint
answers, and what a running `glider serve` exported and dropped.

`check(config, environ, serve_url, timeout)` -> `TelemetryReport`. The endpoint is asked the way an
OTLP/HTTP receiver is asked for spans — a POST of an empty export request (no span, nothing of the
user's) to its traces path — and answers when it says 2xx; for gRPC, a TCP connection to its port is
the check. The counts come from the running server's `/healthz` (`telemetry`), when one answers.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from glider_cli.config.model import Config
from glider_cli.config.telemetry import effective
from glider_cli.values import Frozen, init_fields


class TelemetryReport(Frozen):
    enabled: bool
    endpoint: str | None
    protocol: str | None
    answers: bool | None  # None: not asked (telemetry off)
    why: str | None  # why the endpoint does not answer
    served: Mapping[str, Any] | None  # the running server's counts (`/healthz` telemetry)

    def __init__(
        self,
        enabled: bool,
        endpoint: str | None = None,
        protocol: str | None = None,
        answers: bool | None = None,
        why: str | None = None,
        served: Mapping[str, Any] | None = None,
    ) -> None:
        init_fields(self, enabled, endpoint, protocol, answers, why, served)

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "endpoint": self.endpoint,
            "protocol": self.protocol,
            "answers": self.answers,
            "why": self.why,
            "served": dict(self.served) if self.served is not None else None,
        }

    def text(self) -> str:
        """One line for the terminal."""
        if not self.enabled:
            return "telemetry: off"
        where = f"telemetry: {self.protocol} to {self.endpoint}: "
        where += "the endpoint answers" if self.answers else f"the endpoint does not answer ({self.why})"
        s = self.served
        if s is not None and s.get("enabled"):
            where += (
                f"; glider serve exported {s.get('exported', 0)} spans, dropped {s.get('dropped', 0)}"
                f" ({s.get('dropped_queue_full', 0)} queue full,"
                f" {s.get('dropped_export_failed', 0)} failed exports)"
            )
            if s.get("last_error"):
                where += f", last error: {s['last_error']}"
        return where


def check(
    config: Config, environ: Mapping[str, str], serve_url: str | None, timeout: float
) -> TelemetryReport:
    wanted = effective(config.settings.telemetry, environ)
    if not wanted.on:
        return TelemetryReport(False)
    served = _served(serve_url, timeout) if serve_url else None
    if wanted.protocol == "grpc":
        endpoint = wanted.traces_endpoint or wanted.endpoint
        answers, why = _connects(endpoint, timeout)
    else:
        endpoint = wanted.traces_endpoint or f"{wanted.endpoint}/v1/traces"
        answers, why = _takes_spans(endpoint, timeout)
    return TelemetryReport(True, endpoint, wanted.protocol, answers, why, served)


def _takes_spans(url: str, timeout: float) -> tuple[bool, str | None]:
    import httpx

    try:
        resp = httpx.post(
            url,
            content=b"",
            headers={"content-type": "application/x-protobuf"},
            timeout=timeout,
            trust_env=False,
        )
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if resp.status_code < 300:
        return True, None
    return False, f"it answered HTTP {resp.status_code} to an empty export"


def _connects(url: str, timeout: float) -> tuple[bool, str | None]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or "localhost"
    try:
        port = parts.port or 4317
    except ValueError:
        return False, "no port in the endpoint"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, None
    except OSError as exc:
        return False, exc.strerror or str(exc)


def _served(serve_url: str, timeout: float) -> Mapping[str, Any] | None:
    import httpx

    try:
        data = httpx.get(serve_url + "/healthz", timeout=timeout, trust_env=False).json()
    except (httpx.HTTPError, ValueError):
        return None
    tel = data.get("telemetry") if isinstance(data, dict) else None
    return tel if isinstance(tel, dict) else None
