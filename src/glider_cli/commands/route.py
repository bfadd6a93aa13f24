"""`glider route`: see how the router decides (`explain`, `replay`) and what to change (`suggest`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from glider_cli.commands.options import CONFIG, HOME, home_for, json_option, profile_option

app = typer.Typer(help="See how the router decides.", no_args_is_help=True)


@app.command("explain")
def explain(
    ctx: typer.Context,
    message: str | None = typer.Argument(None, help="One user message to route."),
    request: str | None = typer.Option(
        None,
        "--request",
        "-r",
        help="A request body (Anthropic, OpenAI Chat or Responses JSON, a capture, or the raw bytes of a "
        "Cursor BidiAppend / run request; - = stdin).",
    ),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        help="Shape of --request: anthropic, openai_chat, openai_responses or cursor (default: guessed).",
    ),
    tools: bool = typer.Option(False, "--tools", help="Add a tool to the request (as coding agents send)."),
    tokens: int | None = typer.Option(None, "--tokens", help="Use this token estimate instead of measuring."),
    every: bool = typer.Option(
        False, "--all", help="Also run the rules below the winner: which would have matched too."
    ),
    client: str | None = typer.Option(
        None,
        "--client",
        help="Send the MESSAGE as this client does, its tools included: claude-code, codex or gemini.",
    ),
    profile: str | None = profile_option("pure-local"),
    config: str | None = CONFIG,
    json_out: bool = json_option("Print the decision as JSON."),
    home: str | None = HOME,
) -> None:
    """Show which rule routes a message or request, every rule's verdict, and the decision."""
    from glider_cli.app.explain import ExplainInput
    from glider_cli.app.explain import explain as run

    explained = run(
        ExplainInput(message, request, protocol, tools, tokens, config, profile, every, client),
        environ=home_for(ctx, home).environ,
    )
    decision = explained.decision
    if json_out:
        from glider_cli.commands.console import emit_json
        from glider_cli.commands.usage_view import rules_usage

        out = explained.to_dict()
        names = [r.rule for r in decision.trace]
        out["rules_usage"] = rules_usage(home_for(ctx, home), config, profile, names)
        emit_json(out)
        return
    # Plain print: the human view needs no Rich, and skipping its import keeps `route explain` fast.
    d = decision.to_dict()
    req = d["request"]
    print(f"config   {explained.source}")
    print(
        f"request  ~{req['estimated_tokens']} tokens, tools: {'yes' if req['has_tools'] else 'no'}, "
        f"complexity {req['complexity_score']} ({req['complexity_source']})"
    )
    print("")
    for r in d["trace"]:
        mark = "✓" if r["matched"] else "+" if r["reason"].startswith("would also match") else "·"
        prio = "" if r["priority"] is None else str(r["priority"])
        print(f" {mark} {prio:>4}  {r['rule']:<24} {r['reason']}")
    print("")
    where = f" ({d['where']})" if d.get("where") else ""
    print(f"decision {d['target']} via rule {d['rule']}{where}")
    model = d["model"] or (explained.capabilities or {}).get("model") or "(client model)"
    print(
        f"         backend {d['backend'] or '-'}, model {model}, "
        f"strategy {d['strategy']}" + (f", adapter {d['adapter']}" if d["adapter"] else "")
    )
    if d["delegate"]:
        print(f"         delegate flag {d['delegate']} found (delegation runs with `glider delegate`)")
    if explained.pack is not None:
        pk = explained.pack
        kept = ", ".join(pk["tools_kept"]) or "none"
        print(
            f"pack     {pk['bytes_before']:,} -> {pk['bytes_after']:,} bytes, ~{pk['tokens_before']:,} -> "
            f"~{pk['tokens_after']:,} tokens; {pk['messages_kept']} of {pk['messages_before']} messages, "
            f"tools: {kept}"
        )
    if explained.capabilities is not None:
        c = explained.capabilities
        window = f"{c['context_window']:,}" if c["context_window"] else "unknown"
        tools_ok = {True: "yes", False: "no", None: "unknown"}[c["tools"]]
        print(f"backend  {c['backend']}: window {window}, tools {tools_ok} ({c['source']})")
        budget = c.get("output")
        if budget is not None:
            print(f"output   {_output_line(budget)}")
    for x in explained.differs:
        print(differs_line(x, client))


def differs_line(x: Mapping[str, Any], client: str | None) -> str:
    """The note `route explain` prints when the same message is decided otherwise."""
    from glider_cli.app.explain_client import CLIENTS

    then = f"{x['target']} via rule {x['rule']}" + (f" (backend {x['backend']})" if x["backend"] else "")
    if x["as"] == "message":
        return f"note     differs from the message alone (no tools, ~{x['tokens']:,} tokens): {then}"
    name = CLIENTS[x["as"]]
    return (
        f"note     as {name} sends it ({x['tools']} tools, ~{x['tokens']:,} tokens): {then}; "
        f"see --client {x['as']}"
    )


def _output_line(out: dict[str, Any]) -> str:
    """What `backends.output_budget` gave the request, in words."""
    if out["refused"]:
        return f"the gate refuses it: {out['refused']}"
    if out["note"]:
        return str(out["note"])
    if out["given"] is not None:
        return f"max_tokens {out['given']:,} fits the window as asked"
    return f"no max_tokens asked: the server's default, the rest of its window (at least {out['floor']:,})"


@app.command("replay")
def replay(
    ctx: typer.Context,
    files: list[str] = typer.Argument(
        ...,
        metavar="FILE",
        help="JSONL of {headers, body[, path, t, reply]} lines, or captured-client fixtures.",
    ),
    config: str | None = CONFIG,
    profile: str | None = profile_option("pure-local"),
    against: str | None = typer.Option(
        None,
        "--against",
        help="A second config: print every request it decides differently (rule, side, backend, "
        "model, adapter, strategy) and a count per kind of change.",
    ),
    json_out: bool = json_option("Print the steps (and moves) as JSON."),
    home: str | None = HOME,
) -> None:
    """Replay a request sequence through the turn index and router: family, follow-on, decision, sticky."""
    from glider_cli.app.replay import ReplayInput, run

    result = run(ReplayInput(tuple(files), config, profile, against), environ=home_for(ctx, home).environ)
    if json_out:
        from glider_cli.commands.console import emit_json

        emit_json(result.to_dict())
        return
    print(f"config   {result.config}")
    for s in result.steps:
        st = s.sticky
        state = "unbound" if not st.get("bound") else ("bound" if st.get("live") else "expired")
        print(
            f"{s.index:>3} t={s.t:<7g} family {s.family or '-':<6} {s.kind:<12} -> {s.target:<5} "
            f"rule {s.rule:<24} sticky {state:<7} {s.link}"
        )
    for t in result.tool_steps:
        print(f"tool {t['index']:>3} {t['tool']} ({t['side']} turn) -> {t['decision']}  {t['where']}")
    if result.changes is not None:
        from glider_cli.app.replay import summary

        print()
        print(f"against  {result.against}")
        if not result.changes:
            print("no request is decided differently")
        for c in result.changes:
            side, rule = c.changed.get("side"), c.changed.get("rule")
            step = result.steps[c.index - 1]
            line = f"{c.index:>3} {side[0]} -> {side[1]}" if side else f"{c.index:>3} {step.target}"
            line += f"  ({rule[0]} -> {rule[1]})" if rule else f"  (rule {step.rule})"
            others = [(k, ab) for k, ab in c.changed.items() if k not in ("side", "rule")]
            if others:
                line += "  " + ", ".join(f"{k} {a or '-'} -> {b or '-'}" for k, (a, b) in others)
            print(f"{line}  {c.where}")
        counts = summary(result.changes)
        print("changes  " + ", ".join(f"{kind} {n}" for kind, n in counts.items()))
    for t in result.tool_changes or ():
        print(f"tool {t['index']:>3} {t['tool']} ({t['side']} turn): {t['from']} -> {t['to']}  {t['where']}")


@app.command("suggest")
def suggest(
    ctx: typer.Context,
    days: int = typer.Option(14, "--days", min=1, help="Read the last N days of recorded traffic."),
    config: str | None = CONFIG,
    profile: str | None = profile_option("pure-local"),
    json_out: bool = json_option("Print the suggestions as JSON."),
    home: str | None = HOME,
) -> None:
    """Propose config edits from the recorded traffic, each checked by replaying it; changes no file."""
    from glider_cli.app.suggest import suggest as run
    from glider_cli.app.suggest_input import recorded_turns
    from glider_cli.config.load import load_config
    from glider_cli.config.pricing import PriceTable

    where = home_for(ctx, home)
    cfg = load_config(config=config, profile=profile, environ=where.environ)
    turns = recorded_turns(where.paths.context, days, PriceTable(cfg.settings.pricing))
    result = run(cfg, turns, days)
    if json_out:
        from glider_cli.commands.console import emit_json

        emit_json(result.to_dict())
        return
    print(f"config   {result.config}")
    print(
        f"replayed {result.turns} recorded turns of the last {days} days "
        f"({result.reproduced} decided as recorded)"
    )
    if not result.suggestions:
        print("no change to suggest")
    for s in result.suggestions:
        print("")
        print(s.summary)
        if s.where:
            print(f"  (the rule is at {s.where}; with `extends:`, this entry overrides it by name)")
        print("")
        print("\n".join("    " + line for line in s.snippet.rstrip().splitlines()))
    for note in result.notes:
        print(f"note     {note}")
