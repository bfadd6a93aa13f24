"""`glider doctor`: probe every backend and say which rule would use which model; exit 1 when a
backend the config routes to is unusable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for, json_option


def main(
    ctx: typer.Context,
    profile: str | None = PROFILE,
    config: str | None = CONFIG,
    json_out: bool = json_option("Print the report as JSON."),
    timeout: float = typer.Option(2.0, "--timeout", help="Seconds to wait for each backend."),
    home: str | None = HOME,
) -> None:
    """Check that the configured backends answer: models, context window, tools (exit 1 when unusable)."""
    from glider_cli.app.doctor import doctor
    from glider_cli.commands.console import emit_json, line, table
    from glider_cli.config import load_config

    environ = home_for(ctx, home).environ
    cfg = load_config(config=config, profile=profile, environ=environ)
    report = doctor(cfg, environ=dict(environ), timeout=timeout)
    from glider_cli.app.telemetry_check import check

    telemetry = check(cfg, environ, report.serve, timeout)
    if json_out:
        emit_json({**report.to_dict(), "telemetry": telemetry.to_dict()})
    else:
        rows = []
        for b in report.backends:
            cap = b.capability
            window = f"{cap.context_window:,}" if cap.context_window else "unknown"
            tools = {True: "yes", False: "no", None: "unknown"}[cap.tools]
            served = ", ".join(cap.models) if cap.models else ("-" if b.side == "cloud" else "unknown")
            if cap.any_model:
                served += " (answers any model name)"
            status = b.status
            breaker = breaker_text(b.breaker) if report.serve else "(serve not running)"
            rows.append(
                (
                    b.name,
                    b.kind,
                    b.side,
                    b.base_url,
                    b.model or "(client's)",
                    served,
                    window,
                    tools,
                    status,
                    breaker,
                )
            )
        table(
            "Backends",
            ("name", "type", "side", "url", "model", "serves", "window", "tools", "status", "breaker"),
            rows,
        )
        table(
            f"Rules in force ({len(report.rules)})",
            ("priority", "rule", "target", "backend", "model"),
            [(r.priority, r.rule, r.target, r.backend, r.model) for r in report.rules],
        )
        if report.cursor:
            table(
                "Cursor clients (transport used last through the Cursor proxy)",
                ("client", "transport", "host", "last used"),
                [
                    (c, e.get("transport"), e.get("host"), _when(e.get("at")))
                    for c, e in report.cursor.items()
                ],
            )
        line(telemetry.text())
        line(f"{report.source}: {'ok' if report.ok else 'a backend the config routes to is unusable'}")
    if not report.ok:
        raise typer.Exit(1)


def breaker_text(b: Mapping[str, Any] | None) -> str:
    """A backend's circuit breaker as `glider serve` reported it, in a few words."""
    if b is None:
        return "off"
    state = str(b.get("state"))
    if state == "closed":
        return "closed" + (f" ({b['failures']}/{b['threshold']} failures)" if b.get("failures") else "")
    why = f": {b['last_error']}" if b.get("last_error") else ""
    if state == "open":
        return f"open, tried again in {b.get('retry_in')} s{why}"
    return f"half-open, the next request tries it{why}"


def _when(at: Any) -> str:
    import datetime as dt

    if not isinstance(at, int | float):
        return "?"
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
