"""`glider lint`: check a config or profile; exit 1 on any error."""

from __future__ import annotations

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for, json_option


def main(
    ctx: typer.Context,
    profile: str | None = PROFILE,
    config: str | None = CONFIG,
    json_out: bool = json_option("Print {errors, warnings} as JSON."),
    home: str | None = HOME,
) -> None:
    """Check a config or profile for errors and warnings (exit 1 on any error)."""
    from glider_cli.app.lint import lint

    report = lint(config_path=config, profile=profile, environ=home_for(ctx, home).environ)
    if json_out:
        from glider_cli.commands.console import emit_json

        emit_json(report.to_dict())
    else:
        import sys

        for issue in report:
            where = (
                f"{issue.file}:{issue.line}" if issue.file and issue.line else (issue.file or report.source)
            )
            what = ", ".join(x for x in (f"rule {issue.rule!r}" if issue.rule else "", issue.key or "") if x)
            sys.stderr.write(f"{where}: {issue.severity}: {what + ': ' if what else ''}{issue.message}\n")
        e, w = len(report.errors), len(report.warnings)
        verdict = "ok" if report.ok else "failed"
        print(f"{report.source}: {verdict} ({e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)})")
    if not report.ok:
        raise typer.Exit(1)
