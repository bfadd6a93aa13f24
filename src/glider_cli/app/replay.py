"""`glider route replay` as a core function: a recorded request sequence through the router and turn index.

Input files (read in the order given, as one sequence; `app.replay_input`):
- JSONL: one request per line, `{"headers": {...} | [[name, value], ...], "body": {...}}`, optionally
  with `"path"` (`/v1/messages`, `/v1/messages/count_tokens`, `/v1/chat/completions`,
  `/v1/responses`; without it the body's shape is guessed), `"t"` (seconds since the first request;
  default: one second after the previous request of the same file) and `"reply"` (the reply the
  client got: a JSON object, or the SSE text of a stream), from which the tool calls the reply
  issued are read.
- A captured-client fixture: `{"requests": [{"method", "path", "query", "headers", "body"}, ...]}`
  (`tests/fixtures/clients/*.json`); requests that are not model requests (GET /v1/models...) are
  skipped.

Each file keeps its own clock: its `t` values count from its own first request, and the file
starts one second after the previous file's last request on the replay's clock.

`replay(requests, config)` opens and closes each request through `turns.lifecycle.Turns` with a
clock that follows the requests' times, exactly as `glider serve` does (a title that quotes a
prompt not opened yet waits for it as the server holds it: the request typing that prompt, when it
comes within `routing.sticky.title_wait_seconds`, is opened first, and the title at its time), and
returns one `Step` per request: the family, new turn or follow-on (and how it was linked), the
decision (rule, side, backend, model, adapter, strategy, trace) and the sticky state. Turn ids are
`t1`, `t2`... in the order families open. `compare(a, b)` lists every request whose rule, side,
backend, model, adapter or strategy differs between two replays of the same sequence (`Change`),
and `summary` counts them
per kind of change. Reading the input files is the only I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from glider_cli.app.replay_input import ReplayRequest, load_requests
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.config.model import Config

__all__ = [
    "Change",
    "ReplayInput",
    "ReplayRequest",
    "ReplayResult",
    "Step",
    "compare",
    "load_requests",
    "replay",
]


class Step(Frozen):
    """One replayed request: where it was placed and what was decided (`decision`: the whole record,
    as `RouteDecided` logs it). `t` is the time on its file's own clock, `clock` on the replay's."""

    index: int
    where: str
    t: float
    family: str | None
    kind: str
    new_turn: bool
    link: str
    decision: dict[str, Any]
    sticky: dict[str, Any]
    clock: float

    def __init__(
        self,
        index: int,
        where: str,
        t: float,
        family: str | None,
        kind: str,
        new_turn: bool,
        link: str,
        decision: dict[str, Any],
        sticky: dict[str, Any],
        clock: float = 0.0,
    ) -> None:
        init_fields(self, index, where, t, family, kind, new_turn, link, decision, sticky, clock)

    @property
    def target(self) -> str:
        return str(self.decision["target"])

    @property
    def rule(self) -> str:
        return str(self.decision["rule"])

    @property
    def backend(self) -> str | None:
        return self.decision.get("backend")

    def to_dict(self) -> dict[str, Any]:
        d = self.decision
        return {
            "index": self.index,
            "where": self.where,
            "t": self.t,
            "clock": self.clock,
            "family": self.family,
            "kind": self.kind,
            "new_turn": self.new_turn,
            "link": self.link,
            "target": d["target"],
            "rule": d["rule"],
            "backend": d.get("backend"),
            "model": d.get("model"),
            "adapter": d.get("adapter"),
            "strategy": d.get("strategy"),
            "delegate": d.get("delegate"),
            "trace": d.get("trace", []),
            "sticky": self.sticky,
        }


# What `--against` compares, in the order it reports: the record's key for each kind of change.
CHANGE_KINDS: tuple[tuple[str, str], ...] = (
    ("rule", "rule"),
    ("side", "target"),
    ("backend", "backend"),
    ("model", "model"),
    ("adapter", "adapter"),
    ("strategy", "strategy"),
)


class Change(Frozen):
    """One request decided differently by the two configs: each kind of change -> (before, after)."""

    index: int
    where: str
    changed: dict[str, tuple[Any, Any]]

    def __init__(self, index: int, where: str, changed: dict[str, tuple[Any, Any]]) -> None:
        init_fields(self, index, where, changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "where": self.where,
            "changed": {k: {"from": a, "to": b} for k, (a, b) in self.changed.items()},
        }


class Move(Frozen):
    index: int
    where: str
    before: str
    after: str
    rule_before: str
    rule_after: str

    def __init__(
        self,
        index: int,
        where: str,
        before: str,
        after: str,
        rule_before: str,
        rule_after: str,
    ) -> None:
        init_fields(self, index, where, before, after, rule_before, rule_after)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "where": self.where,
            "from": self.before,
            "to": self.after,
            "rule_from": self.rule_before,
            "rule_to": self.rule_after,
        }


def _protocol(req: ReplayRequest) -> str:
    from glider_cli.protocol.parse import guess_protocol, protocol_for_path

    found = protocol_for_path(req.path) if req.path else None
    return found or guess_protocol(req.body)


def _reply_calls(protocol: str, reply: Any) -> list[Any]:
    from glider_cli.turns.sticky import ReplyTap, whole_reply_calls

    if reply is None:
        return []
    if isinstance(reply, str):
        tap = ReplyTap(protocol, True)
        tap.feed(reply.encode("utf-8"))
        return tap.close()
    return whole_reply_calls(protocol, reply)


def replay(requests: Sequence[ReplayRequest], config: Config) -> list[Step]:
    """Every request opened and closed in order, as `glider serve` does (see the module contract)."""
    from glider_cli.protocol.parse import parse_request
    from glider_cli.router.decide import Router
    from glider_cli.turns.lifecycle import Served, Turns

    now = [0.0]
    counter = [0]

    def new_id() -> str:
        counter[0] += 1
        return f"t{counter[0]}"

    settings = config.settings
    turns = Turns(
        Router(config),
        settings.sticky,
        settings.tool_followup,
        clock=lambda: now[0],
        new_id=new_id,
        local_only=config.routing.local_only,
        escalate=config.routing.escalate,
    )
    # Each request's time on the replay's clock (each file keeps its own), protocol and ChatRequest.
    timed: list[tuple[float, float, str, Any]] = []
    file: str | None = None
    start, local, clock = 0.0, 0.0, 0.0
    for i, req in enumerate(requests):
        if req.file != file:  # a new file: its clock starts a second after the last request
            file, start = req.file, (clock + 1.0 if i else 0.0)
            local = req.t if req.t is not None else 0.0
        else:
            local = req.t if req.t is not None else local + 1.0
        clock = start + local
        protocol = _protocol(req)
        chat = parse_request(protocol if not req.count_tokens else "anthropic", req.body, req.headers)
        timed.append((clock, local, protocol, chat))

    steps: dict[int, Step] = {}

    def serve(i: int, at: float) -> None:
        req = requests[i]
        _, local, protocol, chat = timed[i]
        now[0] = at
        opened = turns.open(chat, req.body, count_tokens=req.count_tokens)
        decision, plan = opened.decision, opened.plan
        if not req.count_tokens:
            calls = _reply_calls(protocol, req.reply)
            turns.close(opened, Served(decision.backend, decision.target, decision.model, 200, calls=calls))
        p = plan.placement
        sticky = turns.state(p.turn_id)
        sticky["view"] = plan.view.to_dict()
        record = decision.to_dict()
        steps[i] = Step(i + 1, req.where, local, p.turn_id, p.kind, p.new_turn, p.link, record, sticky, at)

    wait = turns.title_wait
    for i, req in enumerate(requests):
        if i in steps:
            continue  # a prompt served early, for the title that waited for it
        at = timed[i][0]
        now[0] = at
        awaited = turns.awaited_prompt(timed[i][3], req.body, count_tokens=req.count_tokens) if wait else None
        if awaited is not None:
            # As `glider serve` holds it: the prompt's request, when it comes within the bound, first.
            for j in range(i + 1, len(requests)):
                if timed[j][0] - at > wait:
                    break
                typed = None if requests[j].count_tokens else turns.sticky.index.prompt_key(timed[j][3])
                if j not in steps and typed == awaited:
                    serve(j, timed[j][0])
                    at = timed[j][0]
                    break
        serve(i, at)
    return [steps[i] for i in range(len(requests))]


def compare(a: Sequence[Step], b: Sequence[Step]) -> list[Change]:
    """Every request decided differently by two replays of the same sequence, and how."""
    out: list[Change] = []
    for x, y in zip(a, b, strict=True):
        changed = {
            kind: (x.decision.get(key), y.decision.get(key))
            for kind, key in CHANGE_KINDS
            if x.decision.get(key) != y.decision.get(key)
        }
        if changed:
            out.append(Change(x.index, x.where, changed))
    return out


def summary(changes: Sequence[Change]) -> dict[str, int]:
    """How many requests changed in each way (every kind, zeros included, in `CHANGE_KINDS` order)."""
    return {kind: sum(kind in c.changed for c in changes) for kind, _ in CHANGE_KINDS}


def moves(changes: Sequence[Change], a: Sequence[Step], b: Sequence[Step]) -> list[Move]:
    """The changes of side (local <-> cloud), with each side's rule."""
    by_index = {s.index: (s, t) for s, t in zip(a, b, strict=True)}
    out = []
    for c in changes:
        if "side" in c.changed:
            x, y = by_index[c.index]
            out.append(Move(c.index, c.where, x.target, y.target, x.rule, y.rule))
    return out


class ReplayInput(Frozen):
    files: tuple[str, ...]
    config: str | None
    profile: str | None
    against: str | None

    def __init__(
        self,
        files: tuple[str, ...],
        config: str | None = None,
        profile: str | None = None,
        against: str | None = None,
    ) -> None:
        init_fields(self, files, config, profile, against)


class ReplayResult(Frozen):
    config: str
    steps: list[Step]
    against: str | None
    against_steps: list[Step] | None
    changes: list[Change] | None
    # Cursor's tool steps of an event log (`app.replay_tools`): each with this config's verdict,
    # and with `--against` the steps the other config decides differently.
    tool_steps: list[dict[str, Any]]
    tool_changes: list[dict[str, Any]] | None

    def __init__(
        self,
        config: str,
        steps: list[Step],
        against: str | None = None,
        against_steps: list[Step] | None = None,
        changes: list[Change] | None = None,
        tool_steps: list[dict[str, Any]] | None = None,
        tool_changes: list[dict[str, Any]] | None = None,
    ) -> None:
        init_fields(self, config, steps, against, against_steps, changes, tool_steps or [], tool_changes)

    @property
    def moves(self) -> list[Move] | None:
        if self.changes is None or self.against_steps is None:
            return None
        return moves(self.changes, self.steps, self.against_steps)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"config": self.config, "steps": [s.to_dict() for s in self.steps]}
        if self.tool_steps:
            d["tool_steps"] = self.tool_steps
        if self.tool_changes is not None:
            d["tool_changes"] = self.tool_changes
        moved = self.moves
        if self.against is not None and self.changes is not None and moved is not None:
            d["against"] = self.against
            d["moves"] = [m.to_dict() for m in moved]
            d["changes"] = [c.to_dict() for c in self.changes]
            d["summary"] = summary(self.changes)
        return d


def run(inp: ReplayInput, *, environ: Mapping[str, str] | None = None) -> ReplayResult:
    """Load the files and the config(s), replay, and compare when `against` is given."""
    from glider_cli.app import replay_tools as rt
    from glider_cli.config.load import load_config

    requests = load_requests(inp.files)
    tools = rt.load_tool_steps(inp.files)
    config = load_config(config=inp.config, profile=inp.profile, environ=environ)
    steps = replay(requests, config)
    verdicts = rt.decide(tools, config)
    listed = [{**t.to_dict(), "decision": v} for t, v in zip(tools, verdicts, strict=True)]
    if inp.against is None:
        return ReplayResult(config.source, steps, tool_steps=listed)
    other = load_config(config=inp.against, environ=environ)
    other_steps = replay(requests, other)
    tool_changes = rt.compare(tools, verdicts, rt.decide(tools, other))
    changes = compare(steps, other_steps)
    return ReplayResult(config.source, steps, other.source, other_steps, changes, listed, tool_changes)
