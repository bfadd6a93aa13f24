"""`glider context`: query and maintain the context store (events, entity graph, episodes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from glider_cli.commands.options import CONFIG, HOME, JSON, PROFILE, home_for

if TYPE_CHECKING:
    from glider_cli.store.context_store import ContextStore
    from glider_cli.store.queries.query import QueryAnswer

app = typer.Typer(help="Query and maintain the context store.", no_args_is_help=True)


def open_store(ctx: typer.Context, config: str | None, profile: str | None, home: str | None) -> ContextStore:
    """The store under the command's home with the config's `context:` settings."""
    from glider_cli.config.load import load_config
    from glider_cli.store.context_store import ContextStore

    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings.context
    return ContextStore(where.paths, settings)


def _emit_json(value: Any) -> None:
    """What `console.emit_json` prints (2-space indented JSON, a final newline), made by orjson and
    without importing Rich: the store's views can be large (every turn of two weeks)."""
    import sys

    import orjson

    try:
        blob = orjson.dumps(value, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # beyond what orjson encodes (an integer past 64 bits): the plain path
        from glider_cli.commands import console

        console.emit_json(value)
        return
    sys.stdout.flush()
    sys.stdout.buffer.write(blob)
    sys.stdout.buffer.flush()


def _where(r: dict[str, Any]) -> str:
    where = str(r.get("rel") or r.get("path") or "")
    return f"{where}:{r['line']}" if r.get("line") else where


def _render(ans: QueryAnswer) -> None:
    from glider_cli.commands import console

    for term, used in ans.fuzzy.items():
        console.err.print(f"note: no match for {term!r}; matched {used!r} instead (fuzzy)", markup=False)
    if ans.mode in ("search", "neigh", "key"):
        keys = [r for r in ans.results if r["kind"] == "key"]
        for r in keys:
            console.line(f"{r['turn']} {r['name']} ({r['prov']}): {r['value']}")
        if ans.mode != "key" and len(keys) < len(ans.results):
            rows = [
                (
                    f"{r['score']:g}",
                    r["kind"],
                    r.get("symbol_kind") or r.get("edge") or "",
                    r["name"],
                    _where(r),
                    r["prov"],
                    r["id"],
                )
                for r in ans.results
                if r["kind"] != "key"
            ]
            console.table(None, ("score", "kind", "what", "name", "where", "prov", "id"), rows)
        if not ans.results:
            console.err.print("no results", markup=False)
        return
    d = ans.detail or {}
    if ans.mode == "path":
        if not d["found"]:
            console.line(f"no path from {d['from']} to {d['to']}")
        for i, p in enumerate(d["path"]):
            edge = d["edges"][i - 1] if i else None
            console.line(("  " + f"--{edge['type']}--> " if edge else "") + p["id"])
    elif ans.mode == "explain":
        console.line(f"{d['entity']['id']} (degree {d['degree']}, component of {d['component_size']})")
        for n in d["neighbours"]:
            console.line(f"  {n['direction']:>3} {n['edge']:<9} {n['id']}")
        console.line("hubs: " + ", ".join(f"{h['id']} ({h['score']:g})" for h in d["hubs"]))
        console.line("path to hub: " + " -> ".join(d["path_to_hub"]))
    else:
        console.line(f"{d['count']} communities ({d['algorithm']})")
        for c in d["communities"]:
            console.line(f"  #{c['id']} size {c['size']} hub {c['hub']}")


@app.command("query")
def query(
    ctx: typer.Context,
    words: list[str] = typer.Argument(..., help="<turn_id> [key=…] [kind=…] [prov=…] [path=a->b] … keyword…"),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Query the context store (turn id `*` searches every turn)."""
    ans = open_store(ctx, config, profile, home).query(" ".join(words))
    if json_out:
        _emit_json(ans.to_json())
    else:
        _render(ans)


@app.command("index-tree")
def index_tree_cmd(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Repository or directory to index."),
    turn: str | None = typer.Option(None, "--turn", help="Write this turn's file-tree key."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Index files and directories (honouring .gitignore) into the entity store."""
    from glider_cli.commands import console

    with console.progress("indexing tree") as progress:
        r = open_store(ctx, config, profile, home).index_tree(path, turn_id=turn, progress=progress)
    if json_out:
        console.emit_json(r.to_dict())
        return
    console.line(
        f"{r.root}: {r.files} files, {r.dirs} dirs; {r.changed} new or changed, "
        f"{r.unchanged} unchanged, {r.removed} removed ({r.ms:g} ms)"
    )


@app.command("index-symbols")
def index_symbols_cmd(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Repository or directory to index."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Index functions, classes and methods (Python, JS/TS, Go, Rust, Java) into the entity store."""
    from glider_cli.commands import console

    with console.progress("indexing symbols") as progress:
        r = open_store(ctx, config, profile, home).index_symbols(path, progress=progress)
    if json_out:
        console.emit_json(r.to_dict())
        return
    langs = ", ".join(f"{k} {v}" for k, v in sorted(r.by_lang.items())) or "none parsed"
    console.line(
        f"{r.root}: {r.files} source files ({langs}); {r.parsed} parsed, {r.unchanged} unchanged; "
        f"{r.symbols} symbols, {r.imports} import edges, {r.removed} removed ({r.ms:g} ms)"
    )
    for e in r.errors:
        console.warn(e)


def _strategy(e: dict[str, Any]) -> str:
    """`fan_out ×3`, `ensemble ×2 (1 cloud) +judge`; blank for a single call."""
    if not e.get("strategy"):
        return ""
    s = str(e["strategy"]) + (f" ×{e['members']}" if e.get("members") else "")
    if e.get("cloud_members"):
        s += f" ({e['cloud_members']} cloud)"
    return s + (" +judge" if e.get("judge_calls") else "")


def _episode_rows(eps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A row per turn (its main request's decision and outcome), then one per side request under it."""
    rows: list[tuple[Any, ...]] = []
    for e in eps:
        rows.append(
            (
                e["turn_id"],
                e["first_ts"],
                e["events"],
                e["asked"][:50],
                e["routed"],
                _strategy(e),
                e["outcome"],
            )
        )
        for s in e.get("side_requests") or ():
            rows.append(("", "", "", f"  ↳ {s['kind']}", s["routed"], "", s["outcome"]))
    return rows


@app.command("turns")
def turns(
    ctx: typer.Context,
    limit: int = typer.Option(50, "--limit", min=1, help="The newest this many turns (oldest first)."),
    every: bool = typer.Option(False, "--all", help="Every turn of the last context.retain_days days."),
    before: str | None = typer.Option(None, "--before", help="Only turns listed before this turn id."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """List the turns in the event log, one episode each, oldest first (the newest 50 unless --all)."""
    store = open_store(ctx, config, profile, home)
    eps = store.turns(None if every else limit, before)
    if json_out:
        _emit_json(eps)
    else:
        from glider_cli.commands import console

        heads = ("turn", "first", "events", "asked", "routed", "strategy", "outcome")
        console.table(None, heads, _episode_rows(eps))
    if store.last_read.torn or store.last_read.corrupt:
        from glider_cli.commands import console

        console.warn(f"skipped {store.last_read.torn} torn and {store.last_read.corrupt} unreadable lines")


def _egress_rows(calls: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    from glider_cli.store.eventlog.events import DELEGATE_RUN

    def status(c: dict[str, Any]) -> str:
        if c["status"] is None:
            return ""
        return ("exit " if c["event"] == DELEGATE_RUN else "") + str(c["status"])

    def outcome(c: dict[str, Any]) -> str:
        # A delegate run: what it changed in the workspace, next to its outcome.
        return str(c["outcome"]) + (f" · changed {c['changed']}" if c.get("changed") else "")

    keys = ("ts", "turn_id", "session", "backend", "model", "why")
    return [
        (*(c[k] for k in keys), outcome(c), status(c), c["input_tokens"], c["output_tokens"]) for c in calls
    ]


@app.command("egress")
def egress(
    ctx: typer.Context,
    days: int | None = typer.Option(None, "--days", min=1, help="The last N days (default retain_days)."),
    session: str | None = typer.Option(None, "--session", help="Only the turns of this session."),
    limit: int = typer.Option(
        200, "--limit", min=1, help="List the newest N calls (the totals count every call)."
    ),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """List every call whose request left the machine (cloud calls, cloud members, delegate runs)."""
    from glider_cli.commands import console

    store = open_store(ctx, config, profile, home)
    audit = store.egress(days, session, limit)
    if json_out:
        _emit_json(audit)
    elif not audit["calls"]:
        console.err.print(f"nothing left the machine in the last {audit['days']} days", markup=False)
    else:
        heads = ("time", "turn", "session", "backend", "model", "why", "outcome", "status", "in", "out")
        console.table(None, heads, _egress_rows(audit["calls"]))
        counts = ("calls", "failed", "input_tokens", "output_tokens")
        totals = [
            (t["backend"] + (" (delegate)" if t["delegate"] else ""), *(t[k] for k in counts))
            for t in audit["totals"]
        ]
        console.table("per backend", ("backend", "calls", "failed", "input tokens", "output tokens"), totals)
        if audit["omitted"]:
            console.err.print(
                f"{audit['omitted']} older calls not listed (counted in the totals): --limit N to see more",
                markup=False,
            )
    if store.last_read.torn or store.last_read.corrupt:
        console.warn(f"skipped {store.last_read.torn} torn and {store.last_read.corrupt} unreadable lines")


@app.command("turn")
def turn(
    ctx: typer.Context,
    turn_id: str = typer.Argument(...),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Show one turn: its episode, its keys and its events."""
    from glider_cli.errors import StoreError

    detail = open_store(ctx, config, profile, home).turn(turn_id)
    if detail is None:
        raise StoreError(f"no turn {turn_id!r} in the event log or the turn index")
    if json_out:
        _emit_json(detail)
        return
    from glider_cli.commands import console
    from glider_cli.store.eventlog.events import DELEGATE_RUN

    if detail["episode"]:
        console.line(detail["episode"]["summary"])
    for k, v in detail["keys"].items():
        console.line(f"{k} ({v['prov']}): {v['value']}")
    for e in detail["events"]:
        console.line(f"{e['ts']} {e['type']}")
        changes = (e.get("data") or {}).get("changes") if e["type"] == DELEGATE_RUN else None
        if isinstance(changes, dict):  # what the delegate changed in the workspace, with its hunks
            for f in changes.get("files") or []:
                lines = "binary or unknown" if f.get("added") is None else f"+{f['added']} −{f['removed']}"
                console.line(f"  {f.get('status')} {f.get('path')}  {lines}")
            if changes.get("diff"):
                console.line(str(changes["diff"]).rstrip("\n"))


@app.command("episodes")
def episodes(
    ctx: typer.Context,
    limit: int = typer.Option(20, "--limit", min=1, help="At most this many, newest last."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Show the recent episodes (what a local model is given as context)."""
    from glider_cli.commands import console

    eps = open_store(ctx, config, profile, home).episodes(limit)
    if json_out:
        console.emit_json(eps)
        return
    for e in eps:
        console.line(f"{e['turn_id']}: {e['summary']}")


@app.command("recent")
def recent(
    ctx: typer.Context,
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many events, newest last."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Show the most recent events."""
    from glider_cli.commands import console

    evs = open_store(ctx, config, profile, home).recent(limit)
    if json_out:
        console.emit_json(evs)
        return
    rows = [(e["ts"], e["type"], e["turn_id"], e["id"]) for e in evs]
    console.table(None, ("time", "type", "turn", "id"), rows)


@app.command("export")
def export(
    ctx: typer.Context,
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Export everything (events, then entity-store records) as JSONL."""
    import sys

    from glider_cli.commands import console

    store = open_store(ctx, config, profile, home)
    if output is None:
        for line in store.export():
            sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    else:
        with output.open("wb") as f:
            for line in store.export():
                f.write(line)
    if store.last_read.torn or store.last_read.corrupt:
        console.warn(f"skipped {store.last_read.torn} torn and {store.last_read.corrupt} unreadable lines")


@app.command("usage")
def usage(
    ctx: typer.Context,
    days: int | None = typer.Option(None, "--days", min=1, help="The last N days (default retain_days)."),
    by: str = typer.Option("day", "--by", help="Rows per day, model, rule or session."),
    json_out: bool = JSON,
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Show tokens and cost per side, the estimated savings of local answers, and the local share."""
    from glider_cli.commands.usage_view import check_by, render, usage_report

    check_by(by)
    report, stats = usage_report(home_for(ctx, home), config, profile, days, by)
    if json_out:
        _emit_json(report)
    else:
        render(report)
    if stats.torn or stats.corrupt:
        from glider_cli.commands import console

        console.warn(f"skipped {stats.torn} torn and {stats.corrupt} unreadable lines")
