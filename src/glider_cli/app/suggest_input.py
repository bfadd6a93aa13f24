"""What `glider route suggest` reads: the recorded turns of the last N days, each as a request to replay.

`recorded_turns(context_dir, days, prices) -> list[RecordedTurn]`, oldest first: every turn whose
`TurnOpened` and first `RouteDecided` are in the log. A turn's request is rebuilt from what the log
keeps of it (the log keeps no bodies): the client's protocol (`TurnOpened.client`), the person's
message as sent (`ask`), the session (as the client's session header), the model it asked for, and the
request's size and whether it carried tools (`RouteDecided.request`) — a system prompt of filler
brings the rebuilt request to the recorded size, one tool stands for the tools. So rules that read the
message, its size, its tools or its commands decide it as they decided the recorded one; a script that
reads more of the body may not (the suggest report says how many recorded decisions the rebuilt
requests reproduce). A turn also carries what it cost and saved (`store.usage`'s prices), whether it
was served locally, and whether it was regretted. A turn with an `Escalated` event (its local answer
could not be used: `proxy.escalate`) counts as local and regretted: its rule's local decision failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from glider_cli.app.replay_input import ReplayRequest
from glider_cli.config.pricing import PriceTable, cost
from glider_cli.store.eventlog import events as ev
from glider_cli.store.eventlog import log
from glider_cli.store.views.usage_read import read_types
from glider_cli.values import Frozen, init_fields

TYPES = (
    ev.TURN_OPENED,
    ev.ROUTE_DECIDED,
    ev.FULFILLED_LOCAL,
    ev.ORIGIN_PASSTHROUGH,
    ev.LOCAL_REGRET,
    ev.ESCALATED,
)
PATHS = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}
SESSION_HEADER = {"anthropic": "x-claude-code-session-id", "openai_responses": "session-id"}
TOOL = {"name": "Bash", "description": "Run a shell command.", "input_schema": {"type": "object"}}


class RecordedTurn(Frozen):
    turn: str
    ts: str
    rule: str
    target: str
    local: bool  # every answer of the turn came from the local side
    regretted: bool
    cloud_cost: float
    savings: float
    tokens: int  # the request's estimated size, as recorded
    request: ReplayRequest

    def __init__(
        self,
        turn: str,
        ts: str,
        rule: str,
        target: str,
        local: bool,
        regretted: bool,
        cloud_cost: float,
        savings: float,
        tokens: int,
        request: ReplayRequest,
    ) -> None:
        init_fields(self, turn, ts, rule, target, local, regretted, cloud_cost, savings, tokens, request)


def _body(protocol: str, ask: str, model: str, tokens: int, tools: bool) -> dict[str, Any]:
    if protocol == "openai_responses":
        body: dict[str, Any] = {"model": model, "input": [{"role": "user", "content": ask}], "stream": True}
        if tools:
            body["tools"] = [{"type": "function", "name": TOOL["name"], "parameters": TOOL["input_schema"]}]
        key = "instructions"
    elif protocol == "openai_chat":
        body = {"model": model, "messages": [{"role": "user", "content": ask}], "stream": True}
        if tools:
            fn = {"name": TOOL["name"], "parameters": TOOL["input_schema"]}
            body["tools"] = [{"type": "function", "function": fn}]
        key = ""
    else:
        body = {
            "model": model,
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": ask}],
            "stream": True,
        }
        if tools:
            body["tools"] = [TOOL]
        key = "system"
    from glider_cli.protocol.parse import parse_request

    have = parse_request(protocol, body, {}).estimated_tokens
    filler = "context " * max(0, (tokens - have) * 4 // 8)
    if filler:
        if key:
            body[key] = filler
        else:
            body["messages"].insert(0, {"role": "system", "content": filler})
    return body


def _request(
    turn: str, opened: dict[str, Any], decided: dict[str, Any], t: float, model: str
) -> ReplayRequest:
    client = opened.get("client")
    protocol = client if isinstance(client, str) and client in PATHS else "anthropic"
    summary = decided.get("request") or {}
    tokens = int(summary.get("estimated_tokens") or 0)
    body = _body(protocol, str(opened.get("ask") or ""), model, tokens, bool(summary.get("has_tools")))
    headers = {"content-type": "application/json"}
    session = opened.get("session_id")
    if isinstance(session, str) and session and protocol in SESSION_HEADER:
        headers[SESSION_HEADER[protocol]] = session
    return ReplayRequest(f"turn {turn}", PATHS[protocol], headers, body, t, None, "recorded")


def recorded_turns(context_dir: Path, days: int, prices: PriceTable) -> list[RecordedTurn]:
    """See the module contract."""
    evs: list[dict[str, Any]] = []
    for path in log.select_days(context_dir, days=days):
        evs += read_types(path, TYPES)
    evs.sort(key=lambda e: str(e["id"]))
    opened: dict[str, dict[str, Any]] = {}
    decided: dict[str, dict[str, Any]] = {}
    first_ts: dict[str, str] = {}
    sides: dict[str, set[str]] = {}
    money: dict[str, list[float]] = {}
    requested: dict[str, str] = {}
    regretted: set[str] = set()
    escalated: set[str] = set()
    for e in evs:
        turn, t, d = e.get("turn_id"), e["type"], e.get("data") or {}
        if not isinstance(turn, str):
            continue
        if t == ev.TURN_OPENED:
            opened.setdefault(turn, d)
            first_ts.setdefault(turn, e["ts"])
        elif t == ev.ROUTE_DECIDED:
            decided.setdefault(turn, d)
        elif t == ev.LOCAL_REGRET:
            regretted.add(turn)
        elif t == ev.ESCALATED:
            escalated.add(turn)
        else:
            side = "local" if t == ev.FULFILLED_LOCAL else "cloud"
            sides.setdefault(turn, set()).add(side)
            if isinstance(d.get("requested_model"), str):
                requested.setdefault(turn, d["requested_model"])
            cr, cw = int(d.get("cache_read_tokens") or 0), int(d.get("cache_write_tokens") or 0)
            raw_in = int(d.get("input_tokens") or 0)
            tokens = (
                max(0, raw_in - cr) if d.get("cache_in_input") else raw_in,
                int(d.get("output_tokens") or 0),
                cr,
                cw,
            )
            model = d.get("model") or d.get("requested_model")
            price = cost(prices.price(model, side), *tokens)
            m = money.setdefault(turn, [0.0, 0.0])
            if side == "cloud":
                m[0] += price
            else:  # saved: the cloud request a local answer stood for (the client's, `store.views.usage`)
                client = d.get("client_input_tokens")
                instead = (client if type(client) is int and client >= 0 else tokens[0], *tokens[1:])
                m[1] += cost(prices.price(d.get("requested_model"), "cloud"), *instead) - price
    out: list[RecordedTurn] = []
    start: float | None = None
    from datetime import datetime

    for turn in sorted(opened, key=lambda x: first_ts[x]):
        if turn not in decided:
            continue
        at = datetime.fromisoformat(first_ts[turn].replace("Z", "+00:00")).timestamp()
        start = at if start is None else start
        d = decided[turn]
        model = requested.get(turn) or "glider-auto"
        req = _request(turn, opened[turn], d, at - start, model)
        m = money.get(turn, [0.0, 0.0])
        served = sides.get(turn, set())
        out.append(
            RecordedTurn(
                turn,
                first_ts[turn],
                str(d.get("rule")),
                str(d.get("target")),
                # An escalated turn is its rule's local decision, regretted: the cloud answered it.
                served == {"local"} or turn in escalated,
                turn in regretted or turn in escalated,
                m[0],
                m[1],
                int((d.get("request") or {}).get("estimated_tokens") or 0),
                req,
            )
        )
    return out
