"""`glider serve`: run the routing proxy that Claude Code, Codex and the SDKs talk to."""

from __future__ import annotations

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for


def main(
    ctx: typer.Context,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    host: str | None = typer.Option(None, "--host", help="Bind address (default: server.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", help="Port (default: server.port, 8787)."),
    home: str | None = HOME,
) -> None:
    """Run the routing proxy (Anthropic and OpenAI APIs in; local or cloud models out)."""
    from glider_cli.commands.console import err
    from glider_cli.server.run import prepare, run

    environ = home_for(ctx, home).environ
    prepared = prepare(config=config, profile=profile, host=host, port=port, environ=environ)
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
