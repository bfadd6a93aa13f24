"""Usage and cost: the tokens each side served, what the cloud part cost and what the local part saved.
Pure (events and a price table in, values out); `store.context_store.ContextStore.usage` gives it the
events (through `store.usage_read`, which keeps one `Digest` per day file), `glider context usage`,
`GET /api/context/usage` and the dashboard's Usage panel show it.

    d = Digest(); d.feed(events)                       # events of `USAGE_TYPES`, any order
    report([d, ...], prices, by="day", days=None)      # the `--json` value

A call is one of:
- an outcome event: `FulfilledLocal` (side `local`) or `OriginPassthrough` (side `cloud`): every
  served request, whatever its outcome; `input_tokens`/`output_tokens` as the backend reported them
  for the request it was sent (a local backend's pack), `cache_read_tokens`/`cache_write_tokens`,
  `estimated` (the counts Glider estimated because the backend said nothing:
  `turns.calibration.accounting`), `rule` and `requested_model`; a local one's `client_input_tokens` (the
  client's whole request: what the cloud would have read instead; its `input_tokens` when absent);
- a `StrategyMember` (its own `side`): one member call of a strategy, or a model judge's call. The
  chosen member's call is its outcome event too (a `StrategyChosen` with an `index` names it): that
  member event is left out, so the call counts once;
- a `DelegateRun` (side `delegate`): the agent CLI's run, its tokens estimated;
- an `Escalated` event with tokens (side `local`): a local attempt whose answer could not be used
  (`proxy.escalate`): spent, and saving nothing (another call answered).
Tokens: `input` is the uncached input (an OpenAI or Gemini count that includes its cached tokens,
`cache_in_input`, has them taken out), `cache_read`, `cache_write`, `output`.
Cost (`config.pricing.PriceTable`): a cloud call at its model's price (the model the backend was
asked for, else the one the client asked for); a local call at a `pricing:` entry's price, else 0.
Savings, an estimate: for each local outcome, what the cloud request it saved would have cost on the
model the client asked for (`requested_model`, at the configured or bundled cloud price): the
client's whole request as input (`client_input_tokens`, never the smaller pack the local model read)
and the local answer as output, less the local cost. The two are shown apart: `tokens.local` is what
the local side consumed, `avoided_cloud_tokens` what the cloud would have been sent and answered.
A cloud call whose model has no price is listed in `unpriced` (its cost counts 0).

A `Digest` keeps the calls summed per (day, side, model, requested model, rule, session, kind) and
each turn's places (day, model, rule, session): prices apply to sums exactly, so a digest can be kept
(`to_json`/`from_json`) and priced later.

Turns: a turn is counted in each row it has calls in; it is `local` in a row when the calls it has there
are all local ones, or when its local answer was escalated (`Escalated`: the rule decided local).
`LocalRegret` events (`turns.regret`) mark local turns a user did not accept; a row's `regret_rate` is
its regretted local turns over its local turns (None without local turns).

Rows (`by`): `day` (UTC day of the call), `model` (the model that answered; `delegate:<vendor>` for a
delegate run), `rule` (the request's decision rule), `session` (the turn's `TurnOpened` session; `-`
when none is known). Each row: key, calls, local_calls, cloud_calls, delegate_calls, estimated_calls,
tokens {local, cloud, delegate} (input + cache + output), avoided_cloud_tokens (the savings' basis,
see above), input_tokens, output_tokens,
cache_read_tokens, cache_write_tokens, cloud_cost, local_cost, savings, turns, local_turns,
local_turn_share, local_token_share, regrets, regret_rate. `totals` is the same over every call;
`daily` is [{day, cloud_cost, savings, local_tokens, cloud_tokens}] per day, oldest first (the chart).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from glider_cli.config.pricing import PriceTable, bundled, cost
from glider_cli.store.eventlog import events as ev

__all__ = ["BY", "LOCAL_REGRET", "USAGE_TYPES", "Digest", "report"]

LOCAL_REGRET = ev.LOCAL_REGRET
BY = ("day", "model", "rule", "session")
USAGE_TYPES: tuple[str, ...] = (
    ev.FULFILLED_LOCAL,
    ev.ORIGIN_PASSTHROUGH,
    ev.STRATEGY_MEMBER,
    ev.STRATEGY_CHOSEN,
    ev.DELEGATE_RUN,
    ev.TURN_OPENED,
    LOCAL_REGRET,
    ev.ESCALATED,
)
SIDES = ("local", "cloud", "delegate")

# A group's key: day, side, model, requested model, rule, session, kind ("o": an outcome, which saves
# when local; "m": a member call; "d": a delegate run). Its value: calls, estimated calls, input,
# output, cache read, cache write, the client's input (a local outcome's savings basis). A turn's
# place: (day, model, rule, session) -> its calls there were all local.
Key = tuple[str, str, str, str, str, str, str]
Place = tuple[str, str, str, str]


def _n(v: Any) -> int:
    return v if type(v) is int and v > 0 else 0


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _side(m: Mapping[str, Any]) -> str:
    return "local" if (m.get("data") or {}).get("side") == "local" else "cloud"


class Digest:
    """The calls of some events, summed per group, and each turn's places (see the module contract).
    A call's session is the one its turn's `TurnOpened` named among the events fed before it (`-`
    when none: a turn that opened in an earlier day file)."""

    def __init__(
        self,
        *,
        groups: dict[Key, list[int]] | None = None,
        turns: dict[str, dict[Place, bool]] | None = None,
        sessions: dict[str, str] | None = None,
        regrets: set[str] | None = None,
        escalated: set[str] | None = None,
        pending: list[dict[str, Any]] | None = None,
    ) -> None:
        """An empty digest, or one holding these sums (taken as they are, not copied)."""
        self.groups: dict[Key, list[int]] = {} if groups is None else groups
        self.turns: dict[str, dict[Place, bool]] = {} if turns is None else turns
        self.sessions: dict[str, str] = {} if sessions is None else sessions
        self.regrets: set[str] = set() if regrets is None else regrets
        # turns whose local answer could not be used
        self.escalated: set[str] = set() if escalated is None else escalated
        # StrategyMember events no StrategyChosen settled yet
        self.pending: list[dict[str, Any]] = [] if pending is None else pending

    def _add(self, e: Mapping[str, Any], side: str, kind: str) -> None:
        d = e.get("data") or {}
        turn = _s(e.get("turn_id"))
        requested = _s(d.get("requested_model"))
        model = _s(d.get("model"))
        if kind == "d":
            model = f"delegate:{d.get('vendor') or '?'}"
        elif side == "cloud" and not model:
            model = requested
        cr, cw = _n(d.get("cache_read_tokens")), _n(d.get("cache_write_tokens"))
        raw_in = _n(d.get("input_tokens"))
        inp = max(0, raw_in - cr) if d.get("cache_in_input") else raw_in
        day, rule, session = str(e.get("ts", ""))[:10], _s(d.get("rule")), self.sessions.get(turn, "-")
        key = (day, side, model, requested, rule, session, kind)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = [0, 0, 0, 0, 0, 0, 0]
        g[0] += 1
        g[1] += 1 if d.get("estimated") else 0
        g[2] += inp
        g[3] += _n(d.get("output_tokens"))
        g[4] += cr
        g[5] += cw
        client = d.get("client_input_tokens")
        g[6] += client if type(client) is int and client >= 0 else inp
        if turn:
            places = self.turns.setdefault(turn, {})
            place = (day, model, rule, session)
            places[place] = places.get(place, True) and side == "local"

    def feed(self, events: Iterable[Mapping[str, Any]]) -> None:
        pending = self.pending
        self.pending = []
        for e in sorted([*pending, *events], key=lambda e: str(e.get("id"))):
            t, d, turn = e.get("type"), e.get("data") or {}, e.get("turn_id")
            if t == ev.TURN_OPENED:
                if isinstance(turn, str) and isinstance(d.get("session_id"), str):
                    self.sessions[turn] = d["session_id"]
            elif t == LOCAL_REGRET:
                if isinstance(turn, str):
                    self.regrets.add(turn)
            elif t == ev.FULFILLED_LOCAL:
                self._add(e, "local", "o")
            elif t == ev.ORIGIN_PASSTHROUGH:
                self._add(e, "cloud", "o")
            elif t == ev.DELEGATE_RUN:
                self._add(e, "delegate", "d")
            elif t == ev.ESCALATED:
                if isinstance(turn, str):
                    self.escalated.add(turn)
                if "input_tokens" in d:
                    self._add(e, "local", "m")  # the local attempt whose answer could not be used: spent
            elif t == ev.STRATEGY_MEMBER:
                self.pending.append(dict(e))
            elif t == ev.STRATEGY_CHOSEN:
                chosen = d.get("index")
                keep = []
                for m in self.pending:
                    md = m.get("data") or {}
                    if m.get("turn_id") != turn:
                        keep.append(m)
                    elif chosen is None or md.get("index") != chosen or md.get("role") == "judge":
                        self._add(m, _side(m), "m")
                self.pending = keep

    def settle(self) -> None:
        """Count the members no StrategyChosen followed (a strategy whose request never ended)."""
        for m in self.pending:
            self._add(m, _side(m), "m")
        self.pending = []

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": [[*k, *v] for k, v in self.groups.items()],
            "turns": {t: [[*p, f] for p, f in places.items()] for t, places in self.turns.items()},
            "sessions": self.sessions,
            "regrets": sorted(self.regrets),
            "escalated": sorted(self.escalated),
            "pending": self.pending,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Digest:
        return cls(
            groups={tuple(g[:7]): list(g[7:]) for g in raw["groups"]},  # type: ignore[misc]
            turns={t: {tuple(p[:4]): p[4] for p in places} for t, places in raw["turns"].items()},  # type: ignore[misc]
            sessions=dict(raw["sessions"]),
            regrets=set(raw["regrets"]),
            escalated=set(raw.get("escalated") or ()),
            pending=list(raw["pending"]),
        )


class _Row:
    __slots__ = ("avoided", "calls", "cost", "est", "key", "local_cost", "savings", "tokens", "toks", "turns")

    def __init__(self, key: str) -> None:
        self.key = key
        self.calls = {"local": 0, "cloud": 0, "delegate": 0}
        self.tokens = {"local": 0, "cloud": 0, "delegate": 0}
        self.toks = [0, 0, 0, 0]  # input, output, cache read, cache write
        self.est = 0
        self.avoided = 0  # the cloud tokens the local answers stood for (the savings' basis)
        self.cost = self.local_cost = self.savings = 0.0
        self.turns: dict[str, bool] = {}  # turn -> all its calls in this row were local

    def add(self, side: str, g: list[int], price: float, saved: float, avoided: int) -> None:
        self.calls[side] += g[0]
        self.est += g[1]
        self.tokens[side] += g[2] + g[3] + g[4] + g[5]
        for i in range(4):
            self.toks[i] += g[2 + i]
        if side == "local":
            self.local_cost += price
            self.savings += saved
            self.avoided += avoided
        elif side == "cloud":
            self.cost += price

    def to_dict(self, regretted: set[str]) -> dict[str, Any]:
        turns = len(self.turns)
        local = [t for t, is_local in self.turns.items() if is_local]
        regrets = sum(t in regretted for t in local)
        all_tokens = sum(self.tokens.values())
        return {
            "key": self.key,
            "calls": sum(self.calls.values()),
            "local_calls": self.calls["local"],
            "cloud_calls": self.calls["cloud"],
            "delegate_calls": self.calls["delegate"],
            "estimated_calls": self.est,
            "tokens": dict(self.tokens),
            "avoided_cloud_tokens": self.avoided,
            "input_tokens": self.toks[0],
            "output_tokens": self.toks[1],
            "cache_read_tokens": self.toks[2],
            "cache_write_tokens": self.toks[3],
            "cloud_cost": round(self.cost, 6),
            "local_cost": round(self.local_cost, 6),
            "savings": round(self.savings, 6),
            "turns": turns,
            "local_turns": len(local),
            "local_turn_share": round(len(local) / turns, 4) if turns else None,
            "local_token_share": round(self.tokens["local"] / all_tokens, 4) if all_tokens else None,
            "regrets": regrets,
            "regret_rate": round(regrets / len(local), 4) if local else None,
        }


# Where a row's key is in a group's key and in a turn's place.
_GROUP_AT = {"day": 0, "model": 2, "rule": 4, "session": 5}
_PLACE_AT = {"day": 0, "model": 1, "rule": 2, "session": 3}


def report(
    digests: Iterable[Digest],
    prices: PriceTable,
    *,
    by: str = "day",
    days: int | None = None,
) -> dict[str, Any]:
    """See the module contract."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, got {by!r}")
    digests = list(digests)
    regretted: set[str] = set()
    escalated: set[str] = set()
    for dg in digests:
        regretted |= dg.regrets
        escalated |= dg.escalated
    unpriced: set[str] = set()
    rows: dict[str, _Row] = {}
    daily: dict[str, list[float]] = {}
    total = _Row("total")
    at, place_at = _GROUP_AT[by], _PLACE_AT[by]
    for dg in digests:
        for k, g in dg.groups.items():
            day, side, model, requested, _rule, _session, kind = k
            tokens = (g[2], g[3], g[4], g[5])
            price = saved = 0.0
            avoided = 0
            if side != "delegate":
                p = prices.price(model, side)
                price = cost(p, *tokens)
                if p is None and side == "cloud" and model:
                    unpriced.add(model)
                if side == "local" and kind == "o":
                    instead = (g[6], g[3], g[4], g[5])  # the client's request, the local answer
                    avoided = sum(instead)
                    saved = cost(prices.price(requested, "cloud"), *instead) - price
            key = k[at] or "?"
            row = rows.get(key)
            if row is None:
                row = rows[key] = _Row(key)
            row.add(side, g, price, saved, avoided)
            total.add(side, g, price, saved, avoided)
            dd = daily.setdefault(day, [0.0, 0.0, 0, 0])
            if side == "cloud":
                dd[0] += price
                dd[3] += sum(tokens)
            elif side == "local":
                dd[1] += saved
                dd[2] += sum(tokens)
        for turn, places in dg.turns.items():
            up = turn in escalated  # its rule's local decision, though the cloud answered in the end
            for place, is_local in places.items():
                is_local = is_local or up
                key = place[place_at] or "?"
                row = rows.get(key)
                if row is None:
                    row = rows[key] = _Row(key)
                row.turns[turn] = row.turns.get(turn, True) and is_local
                total.turns[turn] = total.turns.get(turn, True) and is_local
    table = bundled()
    ordered = sorted(rows.values(), key=lambda r: r.key if by == "day" else (-r.cost - r.savings, r.key))
    return {
        "days": days,
        "by": by,
        "currency": "USD",
        "prices": {
            "date": table.date,
            "source": table.source,
            "configured": [p.pattern for p in prices.config],
        },
        "savings_are_estimates": True,
        "totals": total.to_dict(regretted),
        "rows": [r.to_dict(regretted) for r in ordered],
        "daily": [
            {
                "day": k,
                "cloud_cost": round(v[0], 6),
                "savings": round(v[1], 6),
                "local_tokens": int(v[2]),
                "cloud_tokens": int(v[3]),
            }
            for k, v in sorted(daily.items())
        ],
        "unpriced": sorted(unpriced),
    }


def report_events(
    events: Iterable[Mapping[str, Any]], prices: PriceTable, *, by: str = "day", days: int | None = None
) -> dict[str, Any]:
    """`report` of one digest of these events."""
    d = Digest()
    d.feed(events)
    d.settle()
    return report([d], prices, by=by, days=days)
