"""`glider prune`: delete event files older than the retention window (plan first, act on --yes)."""

from __future__ import annotations

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, json_option


def main(
    ctx: typer.Context,
    days: int | None = typer.Option(
        None,
        "--days",
        min=0,
        help="Keep this many days (default: context.retain_days); 0 deletes all but today's file.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print the plan."),
    json_out: bool = json_option("Print the plan (and result) as JSON."),
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Delete event files older than the retention window; prints the plan, acts only with --yes."""
    from glider_cli.commands import console
    from glider_cli.commands.context import open_store

    store = open_store(ctx, config, profile, home)
    plan = store.prune_plan(days)
    act = yes and not dry_run
    result = store.prune_apply(plan) if act else None
    if json_out:
        console.emit_json(
            {"plan": plan.to_dict(), "applied": act, "result": result.to_dict() if result else None}
        )
        return
    window = (
        f"keep {plan.retain_days} days (from {plan.cutoff})"
        if plan.retain_days
        else f"keep only today's file ({plan.today}: glider serve appends to it)"
    )
    console.line(
        f"{window}; {len(plan.keep)} files kept, {len(plan.delete)} to delete ({plan.bytes_freed} bytes)"
    )
    for item in plan.delete:
        console.line(f"  delete {item.path}")
    if result is not None:
        console.line(f"deleted {len(result.deleted)} files")
        for p in result.refused:
            console.warn(f"refused to delete {p} (inside the retention window)")
    elif plan.delete and not dry_run:
        console.err.print("nothing deleted; run again with --yes to delete", markup=False)
