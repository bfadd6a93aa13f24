"""`glider serve`: run the routing proxy that Claude Code, Codex and the SDKs talk to.

What it prints (stderr, plain text written straight: no Rich on the request path or at start): once the
port is bound, where it listens and the backends it routes to; with `--cursor-port` / `cursor.port`,
where the Cursor proxy listens and its CA; once the first probe of the local backends is over (it runs
while the server already listens), what each one serves (models, window, tools, or why it cannot be
reached); then one line per reply —
time, client protocol, family kind, side, rule, backend, model, status (with `cut` or `failed` when the
reply did not end well), milliseconds and the backend a fallback replaced — and one per request the
capability gate refused, and one per config a hot reload swapped in (the lines of one event-loop pass
are written together, on the next pass).
`--quiet` keeps only errors.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for


def _probe_lines(local: Any) -> list[str]:
    lines = []
    for cap in local.caps.values():
        if cap.reachable is False:
            lines.append(f"  probe {cap.backend}: unreachable ({cap.error})")
            continue
        window = f"{cap.context_window:,}" if cap.context_window else "unknown"
        tools = {True: "yes", False: "no", None: "unknown"}[cap.tools]
        models = ", ".join(cap.models) if cap.models else "unknown"
        models += " (answers any model name)" if cap.any_model else ""
        warn = f"; {cap.error}" if cap.error else ""
        lines.append(f"  probe {cap.backend}: models {models}; window {window}; tools {tools}{warn}")
    return lines


def request_line(observed: Any, served: Any) -> str:
    """One reply as `glider serve` prints it (`observed`: the engine's `Observed`)."""
    import time

    from glider_cli.domain import model_label

    placement = observed.opened.plan.placement
    fb = f" (fallback from {served.fallback_from})" if served.fallback_from else ""
    if served.escalated:  # a local answer that could not be used, replaced (`proxy.escalate`)
        fb = f" (escalated from {served.fallback_from or 'local'}: {served.escalated})"
    gone = " client left" if served.disconnected else ""
    model = model_label(served.model) if served.model else "-"
    end = f" {served.end}" if served.end else ""
    return (
        f"{time.strftime('%H:%M:%S')} {observed.protocol:<16} {placement.kind:<12} {served.side:<5} "
        f"{observed.decision.rule} -> {served.backend} {model} {served.status}{end} "
        f"{served.ms:.0f} ms{fb}{gone}"
    )


def refused_line(inb: Any, exc: Any) -> str:
    """A request the capability gate refused, as `glider serve` prints it."""
    import time

    kind = exc.kind or "-"
    return (
        f"{time.strftime('%H:%M:%S')} {inb.protocol:<16} {kind:<12} local {exc.rule or 'gate'} -> "
        f"{exc.backend or '-'} - 400 refused 0 ms: {exc.message}"
    )


def reload_line(outcome: Any) -> str:
    """A config swapped in by a hot reload, as `glider serve` prints it (a rejected one is logged as a
    warning by `server.reload`)."""
    import time

    restart = outcome.restart_needed
    later = f"; restart glider serve for the changes to {', '.join(restart)}" if restart else ""
    return (
        f"{time.strftime('%H:%M:%S')} reloaded {outcome.source} ({outcome.trigger}): "
        f"{outcome.rules} rules in force{later}"
    )


def main(
    ctx: typer.Context,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    host: str | None = typer.Option(None, "--host", help="Bind address (default: server.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Port (default: server.port, 8787)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print no banner and no line per request."),
    home: str | None = HOME,
    cursor_port: int | None = typer.Option(
        None,
        "--cursor-port",
        min=0,
        max=65535,
        help="Also run the Cursor proxy (HTTP CONNECT) on 127.0.0.1:PORT (default: cursor.port; off).",
    ),
) -> None:
    """Run the routing proxy (Anthropic and OpenAI APIs in; local or cloud models out)."""
    from glider_cli.server.serve import collector_paused

    # No cyclic collection until the server has started (issue 29's cold start: `collector_paused`).
    with collector_paused() as started:
        _serve(ctx, config, profile, host, port, quiet, home, cursor_port, started)


def _serve(
    ctx: typer.Context,
    config: str | None,
    profile: str | None,
    host: str | None,
    port: int | None,
    quiet: bool,
    home: str | None,
    cursor_port: int | None,
    started: Any,
) -> None:
    import asyncio

    from glider_cli.server.inner import Hooks
    from glider_cli.server.serve import prepare, run

    environ = home_for(ctx, home).environ

    def say(text: str) -> None:
        # Plain text, written as the console wrote it (markup and highlighting off, no wrapping):
        # without Rich, which `glider serve` then never imports (~17 ms of every start; issue 29).
        sys.stderr.write(text + "\n")

    def bound() -> None:
        say(f"glider serve: listening on {s['url']} ({s['config']})")
        for b in s["backends"]:
            key = f", key from ${b['api_key_env']}" if b["api_key_env"] else ""
            say(f"  {b['side']:<5} {b['name']} ({b['type']} {b['base_url'] or 'client upstream'}{key})")
        say(f"  Claude Code: ANTHROPIC_BASE_URL={s['url']}   dashboard: {s['url']}/ui/")

    def ready() -> None:
        if not quiet:
            say_ready()
        started()  # the collector back on before the first request (`server.serve.collector_paused`)

    def say_ready() -> None:
        cursor = prepared.app.state.cursor.service  # the Cursor proxy the lifespan started, if any
        if cursor is not None:
            c = cursor.describe()
            say(f"  Cursor proxy: HTTPS_PROXY={c['url']}  CA {c['ca']}  decrypts {', '.join(c['hosts'])}")

    def probed() -> None:
        # Called by the lifespan once the first probe of the local backends is over.
        for text in _probe_lines(prepared.app.state.proxy.local):
            say(text)

    lines: list[str] = []

    def flush() -> None:
        text = "".join(lines)
        lines.clear()
        sys.stderr.write(text)

    def say_soon(text: str) -> None:
        # The lines of a loop pass are written together on the next pass: stderr is line-buffered,
        # and a write (a system call, to a terminal or a file) per reply was ~10% of the loop's time
        # at c=32 (bench/profile_proxy.sh; issue 29).
        if not lines:
            try:
                asyncio.get_running_loop().call_soon(flush)
            except RuntimeError:  # no loop (never on the request path): now
                say(text)
                return
        lines.append(text + "\n")

    def observe(observed: Any, served: Any) -> None:
        # Written straight, not through Rich's renderer, which cost ~15% of the server's CPU under
        # load, on the event loop (bench/profile_proxy.sh).
        try:
            say_soon(request_line(observed, served))
        except Exception:  # a line that cannot be printed never fails a request
            pass

    def refused(inb: Any, exc: Any) -> None:
        say_soon(refused_line(inb, exc))

    def reloaded(outcome: Any) -> None:
        say_soon(reload_line(outcome))

    prepared = prepare(
        config=config,
        profile=profile,
        host=host,
        port=port,
        environ=environ,
        observer=None if quiet else observe,
        refused_observer=None if quiet else refused,
        cursor_port=cursor_port,
        # The Cursor proxy's one-off notices (the transport each Cursor client uses) print even with
        # --quiet.
        hooks=Hooks(
            notice=say,
            ready=ready,
            probed=None if quiet else probed,
            reloaded=None if quiet else reloaded,
        ),
    )
    s = prepared.summary()
    run(prepared, on_bound=None if quiet else bound)
