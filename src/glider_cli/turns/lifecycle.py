"""`Turns`: the turn lifecycle of one app (or one replay), two calls per request.

    opened = turns.open(chat, body)                 # place in a family, decide once, bind
    ... the caller emits opened.events, serves the request with opened.decision ...
    events = turns.close(opened, Served(...))       # who answered, usage, the outcome, the calls

`open` places the request in its turn family (`turns.sticky.Stickiness`), asks the router for the one
decision (the family's view passed in: a bound family refuses local, a tool result is forced home),
records it in the family and binds the family when the decision is a cloud one. Its events are, in
order: `TurnOpened` (only when the request opens a family: a new real user message; its `ask`, and the
turn keys `goal` and `clone_path` of `turns.turn_keys.opening`, made when written), `RouteDecided`
(the decision's `to_record()`, made when the event is written: `domain.Deferred`) and `StickyBound` when
the family got bound, `Escalated` when the client's own failure message sent the turn a rule had sent
local to the cloud (`turns.sticky`, "Client texts"), then any `LocalRegret` (`turns.regret`: the new
user message repeats the session's last, locally served, request). A count_tokens request
(`count_tokens=True`) is placed and decided the same way but opens nothing, binds nothing and emits
nothing. A routing failure (no rule matched, a broken script result, an explicit `/local` its backend
cannot take: `GateRefused`) raises the router's GliderError; nothing was recorded then, except for a
gate refusal: its `GateRefused` carries the events that record it (`refusal_events`: `RouteDecided` with
`refused`, the outcome with status 400 and `outcome: refused`) for the caller to emit (and a refusal of
a locally served family is noted as its regret, emitted with the next events). `gate` is the capability
gate the router asks about a local backend (`router.decide.Gate`).

`close` takes what happened once the reply is out — the backend that answered (after any fallback),
its status, the token usage it reported (and the cache tokens; `turns.calibration.accounting` adds the
request's rule, the model the client asked for, and estimates marked in `estimated` for the counts
the backend did not report), the time, whether the reply completed or the client left, how it ended
when not well (`end`: `cut`, a stream the server cut short; `failed`, every attempt failed or the
stream failed; carried as the outcome's `outcome`), and the tool calls it issued — and returns the
closing events: the outcome (`FulfilledLocal` for the local side, `OriginPassthrough` for the cloud
side), then any `LocalRegret` (`turns.regret`: a local reply that failed mid-stream or issued a tool
call whose arguments do not parse), then `TurnContext` when the reply's tool calls wrote a plan that
differs from the turn's last one or named files they write (`turns.turn_keys`: TodoWrite,
update_plan, Write/Edit), then `ToolCallsIssued` / `StickyBound` from the turn index
(skipped when `answered` is false: an error reply that answered nothing, a request the
client gave up on before any reply). The reported input tokens calibrate count_tokens estimates
(`estimate`). Nothing here reads the clock except through the injected `clock`, and nothing does I/O.

A title ahead of its prompt: Claude Code sends a new prompt's title request and the prompt itself at
the same moment. `awaited_prompt(chat, body)` is, for a title that quotes a prompt no family has
opened with yet, the key of that prompt (None for any other request); `prompt_key(opened)` is the key
of the prompt a request opened a turn with. The caller holds such a title up to `title_wait`
seconds (`routing.sticky.title_wait_seconds`) until a request with that key has been opened, then
opens the title, which joins the prompt's family and follows its binding; with no such request in
time the title is opened as before (ahead of its turn). `glider serve` waits on the clock
(`proxy.title_wait`); `glider route replay` opens the prompt's request first when it comes within
the bound, so both give the same answer.

With a `planner` (`router.plan.Planner`, given to the constructor), `open` also asks it for the
strategy's Plan once the router decided (never for count_tokens): `opened.strategy`, its record the
decision's `plan` (so in `RouteDecided`). `bind_cloud(opened)` binds the family to the cloud as a
cloud decision does (a plan with a cloud member) and returns those events. `local_only` is
`routing.local_only` in force (the proxy's fallback never goes from the local side to the cloud then).

The values a turn opens and closes with: `Opened` (one request, opened); `Served`, what answered it:
the backend (after any fallback), its side, model and status, the usage it reported, what an
estimate is made from when it reported none (`sent_tokens`: the request as that backend was sent it,
bytes/4, the pack for a local one; `text_bytes`: the text, thinking and tool arguments of the reply,
never its framing), the time, whether the reply completed, was answered at all or the client left,
`end`, whether it stopped at the output-token limit (`at_limit`), the tool calls it issued, and
`escalated`, the reason a local answer that could not be used was replaced (`proxy.escalate`);
`Served.outcome()` is the outcome event's data (`stopped_at_limit: true` when it did). `LastPlans`
keeps the last plan per turn, so a plan is logged (`TurnContext`) only when it changes. The records:
`opened_record(chat)` is a `TurnOpened` event's data (what the person asked, the session, the client,
how many messages, the turn keys), `refusal_events(chat, plan, exc)` a gate refusal's events.

`use(router, sticky, tool_followup, local_only=)` swaps the router and the sticky settings between
two requests (a config reload, `server.reload`): a request opened before it keeps the decision it
got, and the turn families, their bindings and the usage calibration carry over.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any, Protocol

from glider_cli.config.model import EscalateSettings
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, Clock, Deferred, RouteDecision
from glider_cli.errors import GateRefused
from glider_cli.protocol.reply_tap import IssuedCall
from glider_cli.router.decide import Gate
from glider_cli.router.plan import Plan
from glider_cli.router.sticky_view import StickyView
from glider_cli.store.eventlog.events import (
    ESCALATED,
    FULFILLED_LOCAL,
    ORIGIN_PASSTHROUGH,
    ROUTE_DECIDED,
    SIDE_REQUEST_KINDS,
    TURN_CONTEXT,
    TURN_OPENED,
)
from glider_cli.turns import turn_keys
from glider_cli.turns.calibration import UsageCalibrator, accounting, sent_estimate
from glider_cli.turns.records import SIDE_KINDS
from glider_cli.turns.regret import RegretWatch
from glider_cli.turns.sticky import Events, Stickiness, StickyPlan
from glider_cli.values import Frozen, replace

__all__ = ["Decider", "Opened", "Planner", "Served", "Turns"]

# (client protocol, decision, the family's view) -> the strategy's Plan, or None (`router.plan.Planner`)
Planner = Callable[[str, RouteDecision, StickyView | None], Plan | None]


class Decider(Protocol):
    def decide(
        self,
        request: ChatRequest,
        *,
        sticky: StickyView | None = None,
        gate: Gate | None = None,
        every: bool = False,
    ) -> RouteDecision: ...


class Opened(Frozen):
    """One request, opened: its decision, its place in a family, the events to emit now, and the
    strategy's Plan when one operates (`strategy`; its record is the decision's `plan`)."""

    chat: ChatRequest
    plan: StickyPlan
    decision: RouteDecision
    events: Events
    count_tokens: bool
    strategy: Plan | None

    def __init__(
        self,
        chat: ChatRequest,
        plan: StickyPlan,
        decision: RouteDecision,
        events: Events,
        count_tokens: bool,
        strategy: Plan | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.chat = chat
        s.plan = plan
        s.decision = decision
        s.events = events
        s.count_tokens = count_tokens
        s.strategy = strategy

    @property
    def turn_id(self) -> str | None:
        return self.plan.placement.turn_id  # `StickyPlan.turn_id`, without its frame

    @property
    def new_turn(self) -> bool:
        return self.plan.placement.kind == "new_turn"


class Served(Frozen):
    """What answered a request and how it went (see the module contract)."""

    backend: str | None
    side: str
    model: str | None
    status: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    ms: float = 0.0
    complete: bool = True
    answered: bool = True
    disconnected: bool = False
    fallback_from: str | None = None
    calls: Sequence[IssuedCall] = ()
    cache: Mapping[str, Any] = MappingProxyType({})
    text_bytes: int | None = None
    sent_tokens: int | None = None
    end: str | None = None
    at_limit: bool = False
    escalated: str | None = None

    def __init__(
        self,
        backend: str | None,
        side: str,
        model: str | None,
        status: int,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        ms: float = 0.0,
        complete: bool = True,
        answered: bool = True,
        disconnected: bool = False,
        fallback_from: str | None = None,
        calls: Sequence[IssuedCall] = (),
        cache: Mapping[str, Any] | None = None,
        text_bytes: int | None = None,
        sent_tokens: int | None = None,
        end: str | None = None,
        at_limit: bool = False,
        escalated: str | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.backend = backend
        s.side = side
        s.model = model
        s.status = status
        s.input_tokens = input_tokens
        s.output_tokens = output_tokens
        s.ms = ms
        s.complete = complete
        s.answered = answered
        s.disconnected = disconnected
        s.fallback_from = fallback_from
        s.calls = calls
        s.cache = {} if cache is None else cache
        s.text_bytes = text_bytes
        s.sent_tokens = sent_tokens
        s.end = end
        s.at_limit = at_limit
        s.escalated = escalated

    def outcome(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "backend": self.backend,
            "model": self.model,
            "status": self.status,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "ms": self.ms,
            "complete": self.complete,
        }
        if self.cache:
            data.update(self.cache)
        if self.fallback_from:
            data["fallback_from"] = self.fallback_from
        if self.disconnected:
            data["client_disconnected"] = True
        if self.end:
            data["outcome"] = self.end
        if self.at_limit:
            data["stopped_at_limit"] = True
        if self.escalated:
            data["escalated"] = self.escalated
        return data


class LastPlans:
    """The last plan recorded per turn (the newest `size` turns), so a plan is logged when it changes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._last: OrderedDict[str, str] = OrderedDict()

    def changed(self, turn_id: str, ctx: dict[str, Any]) -> bool:
        """False when `ctx` is only a plan, and the plan this turn already has; drops an unchanged plan."""
        plan = ctx.get("plan")
        if plan is None:
            return True
        if self._last.get(turn_id) == plan:
            del ctx["plan"]
            ctx.pop("tool", None)
            return bool(ctx)
        self._last[turn_id] = plan
        self._last.move_to_end(turn_id)
        if len(self._last) > self.size:
            self._last.popitem(last=False)
        return True


class Turns:
    """See the module contract. One per app (or per replay); not thread-safe."""

    def __init__(
        self,
        router: Decider,
        sticky: StickySettings,
        tool_followup: ToolFollowupSettings,
        *,
        clock: Clock,
        new_id: Callable[[], str],
        max_families: int = 4096,
        local_only: bool = False,
        planner: Planner | None = None,
        escalate: EscalateSettings = EscalateSettings(),
    ) -> None:
        self.router = router
        self.planner = planner
        self.sticky = Stickiness(
            sticky,
            tool_followup,
            clock=clock,
            new_id=new_id,
            max_families=max_families,
            local_only=local_only,
            escalate=escalate,
        )
        self.usage = UsageCalibrator()
        self.regret = RegretWatch(max_families)
        self._clock = clock
        self._plans = LastPlans(max_families)

    def use(
        self,
        router: Decider,
        sticky: StickySettings | None = None,
        tool_followup: ToolFollowupSettings | None = None,
        *,
        local_only: bool | None = None,
        escalate: EscalateSettings | None = None,
    ) -> None:
        """Decide with `router` from the next request on; families and bindings stay (see the contract)."""
        self.router = router
        st = self.sticky
        st.configure(
            sticky if sticky is not None else st.sticky,
            tool_followup
            if tool_followup is not None
            else ToolFollowupSettings(tuple(st.allow), tuple(st.deny)),
            local_only=st.local_only if local_only is None else local_only,
            escalate=st.escalate if escalate is None else escalate,
        )

    @property
    def tool_lists(self) -> tuple[frozenset[str], frozenset[str]]:
        """`routing.tool_followup` in force (a reload's `use` swaps it): the allowlist, the denylist."""
        return self.sticky.allow, self.sticky.deny

    @property
    def escalate(self) -> EscalateSettings:
        """`routing.escalate` in force (a reload's `use` changes it)."""
        return self.sticky.escalate

    def explicit_local(self, opened: Opened) -> bool:
        """Whether `opened` is on the local side by the person's explicit command: its own (`/local`,
        `/fast`) or its family's live local binding. Such a turn is never escalated."""
        if opened.decision.command is not None:
            return True
        fam = self.sticky.index.get(opened.turn_id)
        binding = fam.binding if fam is not None else None
        return binding is not None and binding.target == "local" and binding.live(self._clock())

    def escalated(self, opened: Opened, backend: str, model: str | None, reason: str) -> Events:
        """The events that record an escalation of `opened`'s local reply (`proxy.escalate`) beyond
        `Escalated` itself: the turn's `LocalRegret` (kind `escalated`) for the rule that sent it."""
        rule = opened.decision.rule
        return list(
            self.regret.escalated(opened.turn_id, rule=rule, backend=backend, model=model, reason=reason)
        )

    @property
    def local_only(self) -> bool:
        """`routing.local_only` in force (a reload's `use` changes it): no fallback to the cloud either."""
        return self.sticky.local_only

    def open(
        self,
        chat: ChatRequest,
        body: Mapping[str, Any] | None = None,
        *,
        count_tokens: bool = False,
        gate: Gate | None = None,
    ) -> Opened:
        plan = self.sticky.place(chat, body=body, count_tokens=count_tokens)
        # Asked with `gate` only when there is one: a Decider seam need not know about gates.
        try:
            if gate is None:
                decision = self.router.decide(chat, sticky=plan.view)
            else:
                decision = self.router.decide(chat, sticky=plan.view, gate=gate)
        except GateRefused as exc:
            if count_tokens:
                raise
            self.regret.refused(plan.turn_id, exc.message)
            raise exc.recorded(refusal_events(chat, plan, exc), plan.placement.kind) from exc
        strategy = None
        if self.planner is not None and not count_tokens:
            strategy = self.planner(chat.protocol, decision, plan.view)
            if strategy is not None:  # the plan joins the decision and its RouteDecided record
                decision = replace(decision, plan=strategy.to_dict())
        bound = self.sticky.bind(plan, decision)
        if count_tokens:
            return Opened(chat, plan, decision, [], True)
        placement = plan.placement
        turn_id = placement.turn_id
        # The records are built when they are written (off the request's path); both are immutable.
        decided = (ROUTE_DECIDED, Deferred(decision.to_record), turn_id)
        if placement.kind == "new_turn":
            events: Events = [(TURN_OPENED, Deferred(partial(opened_record, chat)), turn_id), decided]
            events += bound
            events += self.regret.opened(turn_id, chat.session_id, chat.last_user_text, self._clock())
        else:
            events = [decided]
            events += bound
        if plan.escalated is not None and decision.target == "cloud":
            reason, local, rule = plan.escalated
            data = {"reason": reason, "from": local, "to": decision.backend, "rule": rule}
            events.append((ESCALATED, data, turn_id))
            events += self.regret.escalated(turn_id, rule=rule, backend=local, model=None, reason=reason)
        if self.regret.pending:
            events += self.regret.take()
        return Opened(chat, plan, decision, events, False, strategy)

    def bind_cloud(self, opened: Opened) -> Events:
        """Bind `opened`'s family to the cloud as a cloud decision does (a strategy with a cloud
        member, whatever side its decision was on); the events to emit."""
        return self.sticky.bind(opened.plan, replace(opened.decision, target="cloud"))

    @property
    def title_wait(self) -> float:
        """How long a title ahead of its prompt waits for it (`routing.sticky.title_wait_seconds`)."""
        return self.sticky.sticky.title_wait_seconds

    def awaited_prompt(
        self, chat: ChatRequest, body: Mapping[str, Any] | None = None, *, count_tokens: bool = False
    ) -> tuple[str, str] | None:
        """The prompt a title request waits for (see the module contract); None for other requests."""
        if count_tokens:
            return None
        return self.sticky.index.awaited_prompt(chat, self.sticky.clock(), body)

    def prompt_key(self, opened: Opened) -> tuple[str, str] | None:
        """The key of the prompt `opened` opened a turn with (None unless it opened one)."""
        return self.sticky.index.prompt_key(opened.chat) if opened.plan.placement.kind == "new_turn" else None

    def close(self, opened: Opened, served: Served) -> Events:
        if served.backend is not None:
            self.usage.record(served.backend, sent_estimate(opened, served), served.input_tokens)
        if opened.count_tokens:
            return []
        turn_id = opened.plan.placement.turn_id
        local = served.side == "local"
        outcome = served.outcome()
        accounting(opened, served, self.usage, outcome)
        if opened.plan.placement.kind in SIDE_KINDS:
            outcome["request_kind"] = opened.plan.placement.kind  # not one of the turn's replies
        events: Events = [(FULFILLED_LOCAL if local else ORIGIN_PASSTHROUGH, outcome, turn_id)]
        if local:  # regret follows locally served turns only
            events += self.regret.served(
                turn_id,
                side=served.side,
                rule=opened.decision.rule,
                backend=served.backend,
                model=served.model,
                status=served.status,
                complete=served.complete,
                disconnected=served.disconnected,
                malformed_calls=[c.name for c in served.calls if c.malformed],
                now=self._clock(),
            )
        if self.regret.pending:
            events += self.regret.take()
        if served.answered and served.calls and turn_id is not None:
            ctx = turn_keys.progress(served.calls)
            if ctx is not None and self._plans.changed(turn_id, ctx):
                events.append((TURN_CONTEXT, ctx, turn_id))
        if served.answered:
            events += self.sticky.served(
                opened.plan,
                served.side,
                served.backend,
                served.model,
                served.calls,
                complete=served.complete,
                at_limit=served.at_limit,
                status=served.status,
            )
        return events

    def estimate(self, backend: str, estimated: int) -> int:
        """A count_tokens estimate for this backend, corrected by what it has reported so far."""
        return self.usage.estimate(backend, estimated)

    def state(self, turn_id: str | None) -> dict[str, Any]:
        return self.sticky.state(turn_id)

    def rebuild(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Fold logged events (oldest first) into the turn index; returns how many families it holds."""
        return self.sticky.rebuild(events)


def refusal_events(chat: ChatRequest, plan: StickyPlan, exc: GateRefused) -> Events:
    """What a request the capability gate refused leaves in the log: its `TurnOpened` (a new turn),
    a `RouteDecided` with `refused` (the gate's message), and its outcome (`FulfilledLocal`, status
    400, `outcome: refused`): recorded like any other request, never bound, never sent anywhere."""
    turn_id = plan.turn_id
    events: Events = []
    if plan.placement.new_turn:
        events.append((TURN_OPENED, opened_record(chat), turn_id))
    rule = exc.rule or "gate"
    decided: dict[str, Any] = {
        "target": "local",
        "rule": rule,
        "priority": None,
        "backend": exc.backend,
        "model": None,
        "strategy": "single",
        "delegate": None,
        "refused": exc.message,
        "request": {"estimated_tokens": chat.estimated_tokens, "has_tools": chat.has_tools},
        "trace": [{"rule": rule, "priority": None, "matched": True, "reason": f"refused: {exc.message}"}],
        "family": plan.placement.to_dict(),
    }
    events.append((ROUTE_DECIDED, decided, turn_id))
    # No backend answered (none was asked): the refusal is not held against the backend's health.
    outcome: dict[str, Any] = {"backend": None, "model": None, "status": 400, "ms": 0.0, "complete": False}
    outcome.update(outcome="refused", error=exc.message)
    if plan.placement.kind in SIDE_REQUEST_KINDS:
        outcome["request_kind"] = plan.placement.kind  # not one of the turn's replies
    events.append((FULFILLED_LOCAL, outcome, turn_id))
    return events


def opened_record(chat: ChatRequest) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ask": chat.last_user_text,
        "session_id": chat.session_id,
        "client": chat.protocol,
        "messages": len(chat.messages),
    }
    return turn_keys.opening(chat, data)
