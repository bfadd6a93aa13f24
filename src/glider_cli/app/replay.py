"""`glider route replay` as a core function: a recorded request sequence through the router and turn index.

Input files (read in the order given, as one sequence):
- JSONL: one request per line, `{"headers": {...} | [[name, value], ...], "body": {...}}`, optionally
  with `"path"` (`/v1/messages`, `/v1/messages/count_tokens`, `/v1/chat/completions`,
  `/v1/responses`; without it the body's shape is guessed), `"t"` (seconds since the first request;
  default: one second after the previous request) and `"reply"` (the reply the client got: a JSON
  object, or the SSE text of a stream), from which the tool calls the reply issued are read.
- A captured-client fixture: `{"requests": [{"method", "path", "query", "headers", "body"}, ...]}`
  (`tests/fixtures/clients/*.json`); requests that are not model requests (GET /v1/models...) are
  skipped.

`replay(requests, config)` runs each request through `Stickiness.place`, `Router.decide` and
`Stickiness.settle` with a clock that follows the requests' times, exactly as `glider serve` does,
and returns one `Step` per request: the family, new turn or follow-on (and how it was linked), the
decision, the rule and the sticky state. Turn ids are `t1`, `t2`... in the order families open.
`compare(a, b)` lists the requests that move local <-> cloud between two configs. Reading the input
files is the only I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glider_cli.errors import RequestError
from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.config.model import Config

_MODEL_PATHS = ("/messages", "/messages/count_tokens", "/chat/completions", "/responses")


class ReplayRequest(Frozen):
    where: str
    path: str | None
    headers: dict[str, str]
    body: dict[str, Any]
    t: float | None
    reply: Any

    def __init__(
        self,
        where: str,
        path: str | None,
        headers: dict[str, str],
        body: dict[str, Any],
        t: float | None = None,
        reply: Any = None,
    ) -> None:
        init_fields(self, where, path, headers, body, t, reply)

    @property
    def count_tokens(self) -> bool:
        return self.path is not None and self.path.split("?", 1)[0].rstrip("/").endswith("/count_tokens")


class Step(Frozen):
    index: int
    where: str
    t: float
    family: str | None
    kind: str
    new_turn: bool
    link: str
    target: str
    rule: str
    backend: str | None
    sticky: dict[str, Any]
    decision: dict[str, Any]

    def __init__(
        self,
        index: int,
        where: str,
        t: float,
        family: str | None,
        kind: str,
        new_turn: bool,
        link: str,
        target: str,
        rule: str,
        backend: str | None,
        sticky: dict[str, Any],
        decision: dict[str, Any],
    ) -> None:
        init_fields(
            self, index, where, t, family, kind, new_turn, link, target, rule, backend, sticky, decision
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "where": self.where,
            "t": self.t,
            "family": self.family,
            "kind": self.kind,
            "new_turn": self.new_turn,
            "link": self.link,
            "target": self.target,
            "rule": self.rule,
            "backend": self.backend,
            "sticky": self.sticky,
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


def _headers(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return {str(k).lower(): str(v) for k, v in raw.items()}
    if isinstance(raw, list) and all(isinstance(p, list | tuple) and len(p) == 2 for p in raw):
        return {str(k).lower(): str(v) for k, v in raw}
    raise RequestError(f"{where}: 'headers' must be an object or a list of [name, value] pairs")


def _request(obj: Any, where: str) -> ReplayRequest | None:
    if not isinstance(obj, Mapping):
        raise RequestError(f"{where}: expected a JSON object with 'body' (and 'headers')")
    method = str(obj.get("method") or "POST").upper()
    path = obj.get("path")
    if path is not None and not isinstance(path, str):
        raise RequestError(f"{where}: 'path' must be a string")
    if method != "POST" or (
        path is not None and not path.split("?", 1)[0].rstrip("/").endswith(_MODEL_PATHS)
    ):
        return None
    body = obj.get("body")
    if not isinstance(body, Mapping):
        raise RequestError(f"{where}: 'body' must be a JSON object (the request body)")
    t = obj.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        raise RequestError(f"{where}: 't' must be a number of seconds")
    return ReplayRequest(where, path, _headers(obj.get("headers"), where), dict(body), t, obj.get("reply"))


def load_requests(files: Sequence[str]) -> list[ReplayRequest]:
    """The requests of every file, in order. RequestError names the file and line of a bad one."""
    out: list[ReplayRequest] = []
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise RequestError(f"cannot read {name}: {exc.strerror or exc}") from None
        whole: Any = None
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, Mapping) and isinstance(whole.get("requests"), list):
            for i, item in enumerate(whole["requests"]):
                r = _request(item, f"{name}: requests[{i}]")
                if r is not None:
                    out.append(r)
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise RequestError(f"{name}:{lineno}: not a JSON line: {exc}") from None
            r = _request(obj, f"{name}:{lineno}")
            if r is not None:
                out.append(r)
    if not out:
        raise RequestError(f"no model requests in {', '.join(files)}")
    return out


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
    )
    steps: list[Step] = []
    for i, req in enumerate(requests):
        now[0] = req.t if req.t is not None else (now[0] + 1.0 if i else 0.0)
        protocol = _protocol(req)
        chat = parse_request(protocol if not req.count_tokens else "anthropic", req.body, req.headers)
        opened = turns.open(chat, req.body, count_tokens=req.count_tokens)
        decision, plan = opened.decision, opened.plan
        if not req.count_tokens:
            calls = _reply_calls(protocol, req.reply)
            turns.close(opened, Served(decision.backend, decision.target, decision.model, 200, calls=calls))
        p = plan.placement
        sticky = turns.state(p.turn_id)
        sticky["view"] = plan.view.to_dict()
        steps.append(
            Step(
                i + 1,
                req.where,
                now[0],
                p.turn_id,
                p.kind,
                p.new_turn,
                p.link,
                decision.target,
                decision.rule,
                decision.backend,
                sticky,
                decision.to_dict(),
            )
        )
    return steps


def compare(a: Sequence[Step], b: Sequence[Step]) -> list[Move]:
    """The requests whose side differs between two replays of the same sequence."""
    return [
        Move(x.index, x.where, x.target, y.target, x.rule, y.rule)
        for x, y in zip(a, b, strict=True)
        if x.target != y.target
    ]


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
    moves: list[Move] | None

    def __init__(
        self,
        config: str,
        steps: list[Step],
        against: str | None = None,
        against_steps: list[Step] | None = None,
        moves: list[Move] | None = None,
    ) -> None:
        init_fields(self, config, steps, against, against_steps, moves)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"config": self.config, "steps": [s.to_dict() for s in self.steps]}
        if self.against is not None and self.moves is not None:
            d["against"] = self.against
            d["moves"] = [m.to_dict() for m in self.moves]
        return d


def run(inp: ReplayInput, *, environ: Mapping[str, str] | None = None) -> ReplayResult:
    """Load the files and the config(s), replay, and compare when `against` is given."""
    from glider_cli.config.load import load_config

    requests = load_requests(inp.files)
    config = load_config(config=inp.config, profile=inp.profile, environ=environ)
    steps = replay(requests, config)
    if inp.against is None:
        return ReplayResult(config.source, steps)
    other = load_config(config=inp.against, environ=environ)
    other_steps = replay(requests, other)
    return ReplayResult(config.source, steps, other.source, other_steps, compare(steps, other_steps))
