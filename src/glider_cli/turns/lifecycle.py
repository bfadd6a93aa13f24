"""`Turns`: the turn lifecycle of one app (or one replay), two calls per request.

    opened = turns.open(chat, body)                 # place in a family, decide once, bind
    ... the caller emits opened.events, serves the request with opened.decision ...
    events = turns.close(opened, Served(...))       # who answered, usage, the outcome, the calls

`open` places the request in its turn family (`turns.sticky.Stickiness`), asks the router for the
one decision (the family's view passed in: a bound family refuses local, a tool result is forced
home), records it in the family and binds the family when the decision is a cloud one. Its events
are, in order: `TurnOpened` (only when the request opens a family: a new real user message; its
`ask`, and the turn keys `goal` and `clone_path` of `store.turn_keys.opening`, made when written),
`RouteDecided` (the decision's `to_record()`, made when the event is written: `domain.Deferred`) and
`StickyBound` when the family got bound. A count_tokens request (`count_tokens=True`) is placed and
decided the same way but opens nothing, binds nothing and emits nothing. A routing failure (no rule
matched, a broken script result, an explicit `/local` its backend cannot take: `GateRefused`) raises
the router's GliderError; nothing was recorded then, except for a gate refusal: its `GateRefused`
carries the events that record it (`refusal_events`: `RouteDecided` with `refused`, the outcome with
status 400 and `outcome: refused`) for the caller to emit. `gate` is the capability gate the router
asks about a local backend (`router.decide.Gate`).

`close` takes what happened once the reply is out — the backend that answered (after any fallback),
its status, the token usage it reported, the time, whether the reply completed or the client left,
how it ended when not well (`end`: `cut`, a stream the server cut short; `failed`, every attempt
failed or the stream failed; carried as the outcome's `outcome`), and the tool calls it issued — and
returns the closing events: the outcome (`FulfilledLocal` for the local side, `OriginPassthrough` for
the cloud side), then `TurnContext` when the reply's tool calls
wrote a plan that differs from the turn's last one or named files they write (`store.turn_keys`:
TodoWrite, update_plan, Write/Edit), then `ToolCallsIssued` / `StickyBound` from the turn index
(skipped when `answered` is false: an error reply that answered nothing, a request the
client gave up on before any reply). The reported input tokens calibrate count_tokens estimates
(`estimate`). Nothing here reads the clock except through the injected `clock`, and nothing does I/O.

`use(router, sticky, tool_followup, local_only=)` swaps the router and the sticky settings between
two requests (a config reload, `server.reload`): a request opened before it keeps the decision it
got, and the turn families, their bindings and the usage calibration carry over.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, Clock, Deferred, RouteDecision
from glider_cli.errors import GateRefused
from glider_cli.protocol.reply_tap import IssuedCall
from glider_cli.router.decide import Gate
from glider_cli.router.sticky_view import StickyView
from glider_cli.store import turn_keys
from glider_cli.turns.sticky import Events, Stickiness, StickyPlan
from glider_cli.turns.usage import UsageCalibrator
from glider_cli.values import Frozen

__all__ = ["Decider", "Opened", "Served", "Turns"]


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
    """One request, opened: its decision, its place in a family, and the events to emit now."""

    chat: ChatRequest
    plan: StickyPlan
    decision: RouteDecision
    events: Events
    count_tokens: bool

    def __init__(
        self, chat: ChatRequest, plan: StickyPlan, decision: RouteDecision, events: Events, count_tokens: bool
    ) -> None:
        self.__dict__.update(
            chat=chat, plan=plan, decision=decision, events=events, count_tokens=count_tokens
        )

    @property
    def turn_id(self) -> str | None:
        return self.plan.turn_id

    @property
    def new_turn(self) -> bool:
        return self.plan.placement.new_turn


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
    end: str | None = None

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
        end: str | None = None,
    ) -> None:
        self.__dict__.update(
            backend=backend,
            side=side,
            model=model,
            status=status,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            ms=ms,
            complete=complete,
            answered=answered,
            disconnected=disconnected,
            fallback_from=fallback_from,
            calls=calls,
            end=end,
        )

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
        if self.fallback_from:
            data["fallback_from"] = self.fallback_from
        if self.disconnected:
            data["client_disconnected"] = True
        if self.end:
            data["outcome"] = self.end
        return data


def refusal_events(chat: ChatRequest, plan: StickyPlan, exc: GateRefused) -> Events:
    """What a request the capability gate refused leaves in the log: its `TurnOpened` (a new turn),
    a `RouteDecided` with `refused` (the gate's message), and its outcome (`FulfilledLocal`, status
    400, `outcome: refused`): recorded like any other request, never bound, never sent anywhere."""
    turn_id = plan.turn_id
    events: Events = []
    if plan.placement.new_turn:
        events.append(("TurnOpened", _opened(chat), turn_id))
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
    events.append(("RouteDecided", decided, turn_id))
    # No backend answered (none was asked): the refusal is not held against the backend's health.
    outcome: dict[str, Any] = {"backend": None, "model": None, "status": 400, "ms": 0.0, "complete": False}
    outcome.update(outcome="refused", error=exc.message)
    events.append(("FulfilledLocal", outcome, turn_id))
    return events


def _opened(chat: ChatRequest) -> dict[str, Any]:
    data: dict[str, Any] = {"ask": chat.last_user_text, "session_id": chat.session_id}
    data.update(client=chat.protocol, messages=len(chat.messages))
    data.update(turn_keys.opening(chat))
    return data


class _LastPlans:
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
    ) -> None:
        self.router = router
        self.sticky = Stickiness(
            sticky,
            tool_followup,
            clock=clock,
            new_id=new_id,
            max_families=max_families,
            local_only=local_only,
        )
        self.usage = UsageCalibrator()
        self._plans = _LastPlans(max_families)

    def use(
        self,
        router: Decider,
        sticky: StickySettings | None = None,
        tool_followup: ToolFollowupSettings | None = None,
        *,
        local_only: bool | None = None,
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
        )

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
        if gate is None:
            decision = self.router.decide(chat, sticky=plan.view)
        else:
            try:
                decision = self.router.decide(chat, sticky=plan.view, gate=gate)
            except GateRefused as exc:
                if not count_tokens:
                    exc.events = refusal_events(chat, plan, exc)
                    exc.kind = plan.placement.kind
                raise
        bound = self.sticky.bind(plan, decision)
        if count_tokens:
            return Opened(chat, plan, decision, [], True)
        turn_id = plan.turn_id
        events: Events = []
        if plan.placement.new_turn:
            events.append(("TurnOpened", Deferred(lambda: _opened(chat)), turn_id))
        # The record is built when it is written (off the request's path); a decision is immutable.
        events.append(("RouteDecided", Deferred(decision.to_record), turn_id))
        events.extend(bound)
        return Opened(chat, plan, decision, events, False)

    def close(self, opened: Opened, served: Served) -> Events:
        if served.backend is not None:
            self.usage.record(served.backend, opened.chat.estimated_tokens, served.input_tokens)
        if opened.count_tokens:
            return []
        kind = "FulfilledLocal" if served.side == "local" else "OriginPassthrough"
        events: Events = [(kind, served.outcome(), opened.turn_id)]
        if served.answered and served.calls and opened.turn_id is not None:
            ctx = turn_keys.progress(served.calls)
            if ctx is not None and self._plans.changed(opened.turn_id, ctx):
                events.append(("TurnContext", ctx, opened.turn_id))
        if served.answered:
            events += self.sticky.served(
                opened.plan,
                served.side,
                served.backend,
                served.model,
                served.calls,
                complete=served.complete,
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
