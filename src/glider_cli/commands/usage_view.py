"""The human view of `glider context usage` (the `--json` value is `store.usage.report`'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from glider_cli.commands.options import Home
    from glider_cli.store.eventlog.log import ReadStats


def usage_report(
    where: Home, config: str | None, profile: str | None, days: int | None, by: str
) -> tuple[dict[str, Any], ReadStats]:
    """What `ContextStore.usage` answers, without the store's other machinery (a faster start)."""
    from glider_cli.config.load import load_config
    from glider_cli.config.pricing import PriceTable
    from glider_cli.store.eventlog.log import ReadStats
    from glider_cli.store.views import usage, usage_read

    settings = load_config(config=config, profile=profile, environ=where.environ).settings
    window = settings.context.retain_days if days is None else days
    stats = ReadStats()
    found = usage_read.digests(where.paths.context, window, stats)
    return usage.report(found, PriceTable(settings.pricing), by=by, days=window), stats


def check_by(by: str) -> None:
    from glider_cli.store.views.usage import BY

    if by not in BY:
        raise typer.BadParameter(f"{by!r} is not one of {', '.join(BY)}", param_hint="--by")


def money(v: float | None) -> str:
    return "" if v is None else f"${v:,.2f}" if abs(v) >= 0.01 or v == 0 else f"${v:,.4f}"


def share(v: float | None) -> str:
    return "" if v is None else f"{v * 100:.0f}%"


def render(report: dict[str, Any]) -> None:
    from glider_cli.commands import console

    t = report["totals"]
    if not t["calls"]:
        console.err.print(f"no served requests in the last {report['days']} days", markup=False)
        return
    heads = (
        report["by"],
        "calls",
        "local tokens",
        "cloud tokens",
        "saved cloud tokens (est.)",
        "cloud cost",
        "savings (est.)",
        "local turns",
        "regret",
    )
    rows = [
        (
            r["key"],
            r["calls"],
            f"{r['tokens']['local']:,}",
            f"{r['tokens']['cloud']:,}",
            f"{r['avoided_cloud_tokens']:,}",
            money(r["cloud_cost"]),
            money(r["savings"]),
            share(r["local_turn_share"]),
            share(r["regret_rate"]),
        )
        for r in report["rows"]
    ]
    console.table(None, heads, rows)
    console.line(
        f"total    {t['calls']} calls, {t['turns']} turns ({share(t['local_turn_share'])} local), "
        f"tokens {t['tokens']['local']:,} local / {t['tokens']['cloud']:,} cloud "
        f"({share(t['local_token_share'])} local)"
    )
    if t["local_calls"]:
        console.line(
            f"local    {t['tokens']['local']:,} tokens read and written by the local models; the same "
            f"requests sent to the cloud would have been {t['avoided_cloud_tokens']:,} tokens "
            "(the clients' whole requests and the answers, estimated): the savings are priced on those"
        )
    console.line(
        f"cost     cloud {money(t['cloud_cost'])}, local {money(t['local_cost'])}; "
        f"estimated savings {money(t['savings'])} (the cloud requests the local answers saved, at the "
        "requested models' prices)"
    )
    if t["estimated_calls"]:
        console.line(
            f"         {t['estimated_calls']} calls had their tokens estimated (the backend reported none)"
        )
    p = report["prices"]
    console.line(
        f"prices   bundled table of {p['date']} ({p['source']})"
        + (", with your pricing:" if p["configured"] else "")
    )
    if report["unpriced"]:
        console.warn(
            "no price for " + ", ".join(report["unpriced"]) + " (counted as $0; add them under pricing:)"
        )


RULE_KEYS = ("turns", "local_turns", "local_turn_share", "regrets", "regret_rate", "savings", "cloud_cost")


def rules_usage(
    where: Home, config: str | None, profile: str | None, names: list[str], days: int = 14
) -> dict[str, Any]:
    """Each rule's local share, regret rate and savings over the last `days` days (`route explain
    --json`'s `rules_usage`): the rules in `names`' order, then any other rule that decided a turn."""
    report, _ = usage_report(where, config, profile, days, "rule")
    rows = {r["key"]: r for r in report["rows"]}
    order = list(dict.fromkeys([*names, *rows]))
    out = []
    for name in order:
        r = rows.get(name)
        out.append(
            {
                "rule": name,
                **{
                    k: (r[k] if r else (0 if k in ("turns", "local_turns", "regrets") else None))
                    for k in RULE_KEYS
                },
            }
        )
    return {"days": days, "rules": out}
