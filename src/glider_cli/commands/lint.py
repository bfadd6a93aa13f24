"""`glider lint`: check a config or profile; exit 1 on any error."""

from __future__ import annotations

import typer


def main(
    profile: str | None = typer.Option(None, "--profile", "-p", help="A bundled profile, e.g. default."),
    config: str | None = typer.Option(
        None, "--config", "-c", help="Config file (default: resolved as usual)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print {errors, warnings} as JSON."),
) -> None:
    """Check a config or profile for errors and warnings (exit 1 on any error)."""
    from glider_cli.app.lint import lint

    report = lint(config_path=config, profile=profile)
    if json_out:
        from glider_cli.console import emit_json

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
