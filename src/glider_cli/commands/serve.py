"""`glider serve`: run the routing proxy that Claude Code, Codex and the SDKs talk to."""

from __future__ import annotations

import typer


def main(
    config: str | None = typer.Option(
        None, "--config", "-c", help="Config file (default: resolved as usual)."
    ),
    profile: str | None = typer.Option(None, "--profile", "-p", help="A bundled profile, e.g. default."),
    host: str | None = typer.Option(None, "--host", help="Bind address (default: server.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Port (default: server.port, 8787)."),
) -> None:
    """Run the routing proxy (Anthropic and OpenAI APIs in; local or cloud models out)."""
    from glider_cli.console import err
    from glider_cli.server.run import prepare, run

    prepared = prepare(config=config, profile=profile, host=host, port=port)
    s = prepared.summary()
    err.print(f"glider serve: listening on {s['url']} ({s['config']})", markup=False, highlight=False)
    for b in s["backends"]:
        key = f", key from ${b['api_key_env']}" if b["api_key_env"] else ""
        err.print(
            f"  {b['side']:<5} {b['name']} ({b['type']} {b['base_url'] or 'client upstream'}{key})",
            markup=False,
            highlight=False,
        )
    err.print(f"  Claude Code: ANTHROPIC_BASE_URL={s['url']}", markup=False, highlight=False)
    run(prepared)
