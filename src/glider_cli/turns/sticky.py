"""Sticky routing: bind a turn family to the cloud, refuse local to its follow-ons, return tool results home.

`Stickiness(settings, clock=..., new_id=...)` wraps a `FamilyIndex`; `turns.lifecycle.Turns` (what
the proxy, count_tokens and `glider route replay` call) drives it, in this order, for every request:

    plan = st.place(request, body=body, count_tokens=False)   # family + StickyView for decide()
    decision = router.decide(request, sticky=plan.view)       # the one decision (forced side applied)
    events = st.bind(plan, decision)                          # family recorded, binding
    ... serve ...; st.served(plan, side, backend, model, calls, complete=...) -> events

The caller emits every returned event (type, data, turn id) to the event log.

Contract:
- **Binding.** A cloud decision for a family that is not yet bound binds it to the cloud
  (`StickyBound`: family, target, ttl, grace, bound_at, reason; the reason names an explicit `/cloud`
  or `/heavy`). A new turn that an explicit local command (`/local`, `/fast`) sends local binds its
  family to the local side (`StickyBound` with `target: local` and the explicit `rule`). A binding
  is live while `now <= bound_at + routing.sticky.ttl_seconds`, and, once the parent run has ended
  (a reply issued no tool call and none of the family's calls is still unanswered), also while
  `now <= ended_at + routing.sticky.grace_seconds`; the run's end is logged as a second
  `StickyBound` carrying `ended_at`. count_tokens never binds.
- **Deny-local.** While a cloud binding is live every follow-on (anything but a new user message)
  gets a bound StickyView, so the router refuses local rules and the trace says stickiness decided
  and which turn it came from. A new user message opens a new family and decides anew.
- **Held local.** While a local binding is live every follow-on (subagents, titles, continuations,
  summaries and compaction) is held on the local side as the explicit rule sends it
  (`StickyView.held_by`); only a capability gate moves it (`router.decide`). A title that arrives
  ahead of its turn (`Placement.quoted`), and a Gemini utility request (sent before the prompt it
  carries), follow the explicit command of that prompt (`StickyView.quoted`; never its delegate flag).
- **Tool results go home.** A request answering tool calls is sent to the side (and backend and
  model) that served the reply which issued them, whatever the rules say; the trace gets a `sticky`
  line saying so. `served` returns a `ToolCallsIssued` event for every reply that issued calls
  (family, session_id, side, backend, model, and `calls`: each call's id, name and, for an
  Agent/Task call, the prompt its subagent receives, capped at `PROMPT_CAP` characters, and its
  `subagent_type`); the index is rebuilt from it, so this holds, and subagents still link, across a
  restart of `glider serve`. Calls the index did not see issued (an unread reply, a log pruned
  away) are taken to come from the family's last side.
- **routing.tool_followup.** For a *child* of a tool call (a subagent spawned by an Agent/Task call,
  or a tool result in a family no side is known for yet): a tool on the `allowlist` is routed on its
  own (a fresh decision, no binding applies); a tool on the `denylist` always follows its parent
  (the family's side, bound or not); any other tool follows the binding. An entry `Tool:type`
  (`Agent:Explore`) names the calls of that tool with that `subagent_type` only, and wins over an
  entry naming the bare tool.
- **Commands.** Only a person's own text carries commands: a title, a summary, count_tokens and a
  subagent never do (`StickyView.commands` false), nor does a follow-on whose latest user text is
  not the prompt that opened its turn (a subagent's own tool results).
- **Off local.** A local model that ran into its output-token limit keeps running into it when asked
  to go on (a small model looping). Each family counts its local replies in a row that stopped at the
  limit (`served(..., at_limit=)`; any other reply of the turn resets it, an error reply or a side
  request's — title, utility, summary — leaves it: `Family.replied`); once `LOCAL_LIMIT_RUNS` did, a
  continuation of it (Claude Code's `Output token limit hit…`, an assistant prefill) gets
  `StickyPlan.off_local`, the reason: the proxy sends it to the local backend's fallback instead
  (`proxy.dispatch`; never past `fallback: none` or `routing.local_only`). The count survives a restart
  of `glider serve`: `turns.rebuild` folds it from the logged outcomes (`stopped_at_limit`).
- **Client texts.** A text the client sent on its own (`turns.client_texts`) after a turn a
  rule sent local and the local side answered (no binding: an explicit `/local` holds its family
  above) stays on that local backend when it is a neutral continuation (`Output token limit hit…`,
  `Please continue.`); when it says the last answer failed (`The previous response failed to
  produce a valid tool call…`, Gemini CLI's empty-response nudge) it is forced to the cloud
  (`StickyPlan.escalated`: `client_failure:<which>` and the local backend; the cloud decision binds
  the family until the next real user message) — unless `routing.escalate.on_client_failure` is
  false or `routing.local_only` is on: then it stays local too.
- **Summaries** (compaction, Composer wrap-up) of a family not held local are refused local (unless
  `routing.local_only`): they go to the cloud or the origin (the default profile's
  `composer_wrapup_origin`, priority 95, picks the origin).
- The clock is injected (`clock`), nothing here reads the time itself or does I/O.
- `configure(sticky, tool_followup)` swaps the settings (a config reload); families and bindings stay.

`ReplyTap(protocol, stream)` (in `protocol.reply_tap`, importable from here) reads the reply bytes sent to
the client and returns the tool calls the reply issued (id, name, arguments), so `served` can record
which side issued each call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from glider_cli.config.model import EscalateSettings
from glider_cli.config.settings import StickySettings, ToolFollowupSettings
from glider_cli.domain import ChatRequest, Clock, RouteDecision
from glider_cli.protocol.reply_tap import IssuedCall, ReplyTap, whole_reply_calls
from glider_cli.router.sticky_view import Forced, StickyView
from glider_cli.store.eventlog.events import STICKY_BOUND, TOOL_CALLS_ISSUED
from glider_cli.turns.families import Binding, Family, FamilyIndex, Placement, agent_prompt, prompt_text
from glider_cli.turns.records import SIDE_KINDS
from glider_cli.turns.request_kinds import PROMPT_CAP, prompt_digest, subagent_type
from glider_cli.values import Frozen

__all__ = ["Events", "Forced", "IssuedCall", "ReplyTap", "Stickiness", "StickyPlan", "whole_reply_calls"]

# Local replies in a row that stopped at the output-token limit before a continuation leaves local:
# Claude Code gives up after its third continuation in a row, so the second still lands somewhere.
LOCAL_LIMIT_RUNS = 2
_NO_COMMANDS = frozenset({"title", "utility", "summary", "count_tokens", "subagent"})
Events = list[tuple[str, Mapping[str, Any], str | None]]


class StickyPlan(Frozen):
    """What `place` found: the placement and the view to pass to decide() (which carries the side a
    request must go to, `view.forced`, and the placement record, `view.family`); `escalated`, for a
    client's failure message sent to the cloud, the reason (`client_failure:<which>`), the local
    backend that answered the turn and the rule that sent it there."""

    placement: Placement
    view: StickyView
    off_local: str | None
    escalated: tuple[str, str | None, str | None] | None

    def __init__(
        self,
        placement: Placement,
        view: StickyView,
        off_local: str | None = None,
        escalated: tuple[str, str | None, str | None] | None = None,
    ) -> None:
        s: Any = self  # the fields are set here only (see `values`)
        s.placement = placement
        s.view = view
        s.off_local = off_local
        s.escalated = escalated

    @property
    def turn_id(self) -> str | None:
        return self.placement.turn_id

    @property
    def forced(self) -> Forced | None:
        return self.view.forced


class Stickiness:
    """See the module contract. One per app (or per replay); not thread-safe."""

    def __init__(
        self,
        sticky: StickySettings,
        tool_followup: ToolFollowupSettings,
        *,
        clock: Clock,
        new_id: Callable[[], str],
        max_families: int = 4096,
        local_only: bool = False,
        escalate: EscalateSettings = EscalateSettings(),
    ) -> None:
        self.clock = clock
        self.index = FamilyIndex(new_id, max_families=max_families)
        self.configure(sticky, tool_followup, local_only=local_only, escalate=escalate)

    def configure(
        self,
        sticky: StickySettings,
        tool_followup: ToolFollowupSettings,
        *,
        local_only: bool = False,
        escalate: EscalateSettings = EscalateSettings(),
    ) -> None:
        """Use these settings from the next request on (a config reload); families stay as they are."""
        self.local_only = local_only
        self.escalate = escalate
        self.sticky = sticky
        self.allow = frozenset(tool_followup.allowlist)
        self.deny = frozenset(tool_followup.denylist)

    # ------------------------------------------------------------------------------ before decide

    def place(
        self, request: ChatRequest, *, body: Mapping[str, Any] | None = None, count_tokens: bool = False
    ) -> StickyPlan:
        now = self.clock()
        p = self.index.place(request, now, body=body, count_tokens=count_tokens)
        view = self._view(request, p, now)
        off = None
        if p.kind == "continuation":
            fam = self.index.get(p.turn_id)
            if fam is not None and fam.local_limits >= LOCAL_LIMIT_RUNS:
                off = (
                    f"the last {fam.local_limits} local replies of turn {p.turn_id} stopped at the "
                    "output-token limit"
                )
        escalated = None
        if view.forced is not None and view.forced.side == "cloud" and p.sent not in (None, "neutral"):
            fam = self.index.get(p.turn_id)
            escalated = (
                f"client_failure:{p.sent}",
                fam.backend if fam is not None else None,
                fam.rule if fam is not None else None,
            )
        return StickyPlan(p, view, off, escalated)

    def _view(self, request: ChatRequest, p: Placement, now: float) -> StickyView:
        family = p.to_dict()
        if p.kind == "new_turn":
            return StickyView(False, p.turn_id, "a new user message decides anew", False, family=family)
        fam = self.index.families.get(p.turn_id) if p.turn_id else None  # `index.get`
        binding = fam.binding if fam is not None else None
        live = binding is not None and binding.live(now)
        turn = f"turn {p.turn_id}"
        commands = _commands(request, p, fam)
        if p.kind == "tool_result" and fam is not None:
            home = None  # the first answered call the family knows who served
            for cid in p.answered:
                call = fam.calls.get(cid)
                if call is not None and call.side is not None:
                    home = call
                    break
            if home is not None and home.side is not None:
                why = (
                    f"tool result for call {home.id} returns to the {home.side} side that issued it ({turn})"
                )
                forced = Forced(home.side, home.backend, home.model, why)
                return StickyView(
                    home.side == "cloud", p.turn_id, why, True, forced, family, commands=commands
                )
        if p.kind == "utility":
            # Gemini CLI asks it about the prompt it carries, before that prompt's own request.
            why = "a utility request follows the explicit command of the prompt it carries"
            quoted = request.last_user_text or None
            return StickyView(False, p.turn_id, why, True, family=family, quoted=quoted, commands=False)
        child = p.kind == "subagent" or p.kind == "tool_result"
        listed = self._listed(p) if child else None
        if listed is not None and listed[0] == "allow":
            why = f"{listed[1]} on routing.tool_followup.allowlist: routed on its own"
            return StickyView(False, p.turn_id, why, True, family=family, commands=commands)
        if listed is not None and fam is not None and fam.side is not None:
            why = f"{listed[1]} on routing.tool_followup.denylist: follows its parent {turn}"
            forced = Forced(fam.side, fam.backend, fam.model, why)
            return StickyView(fam.side == "cloud", p.turn_id, why, True, forced, family, commands=commands)
        if live and binding is not None and binding.target == "local":
            why = f"{p.kind}, {p.link}; {binding.reason}"
            return StickyView(
                False, p.turn_id, why, True, family=family, held_by=binding.rule or "", commands=commands
            )
        unbound = binding is None or (binding.target == "cloud" and not live)
        if p.sent is not None and fam is not None and fam.side == "local" and unbound:
            # A text the client sent on its own after a turn a rule sent local (an explicit
            # `/local` binds its family: held above): see the module contract, "Client texts".
            return self._client_text(p, fam, family, commands)
        if p.kind == "title" and p.quoted is not None:
            why = "a title ahead of its turn follows the prompt it quotes"
            return StickyView(False, p.turn_id, why, True, family=family, quoted=p.quoted, commands=False)
        if p.kind == "summary" and not self.local_only:
            why = "a summary/wrap-up goes to the cloud or the origin"
            return StickyView(True, p.turn_id, why, True, family=family, commands=False)
        if live and binding is not None:
            why = f"{p.kind}, {p.link}; {binding.reason}"
            return StickyView(True, p.turn_id, why, True, family=family, commands=commands)
        why = f"{p.kind} of {turn}, not bound" if p.turn_id else f"{p.kind}, no family"
        return StickyView(False, p.turn_id, why, True, family=family, commands=commands)

    def _client_text(
        self, p: Placement, fam: Family, family: Mapping[str, Any], commands: bool
    ) -> StickyView:
        turn = f"turn {p.turn_id}"
        if p.sent != "neutral" and self.escalate.on_client_failure and not self.local_only:
            why = (
                f"the client says the local answer of {turn} failed ({p.sent}): escalated to the cloud "
                "for the rest of the turn"
            )
            return StickyView(True, p.turn_id, why, True, Forced("cloud", None, None, why), family)
        why = f"{p.kind}, {p.link}; stays on the local side that answered {turn}"
        forced = Forced("local", fam.backend, fam.model, why)
        return StickyView(False, p.turn_id, why, True, forced, family, commands=commands)

    def _listed(self, p: Placement) -> tuple[str, str] | None:
        """("allow", names) when every tool of a child is allowlisted, ("deny", names) when one is
        denylisted; a `Tool:type` entry for the child's subagent type wins over the bare tool's."""
        verdicts: list[tuple[str | None, str]] = []
        for tool in p.tools:
            verdict: str | None = None
            spec = f"{tool}:{p.subagent_type}" if p.subagent_type else None
            for name in (spec, tool):
                if name is None:
                    continue
                if name in self.deny:
                    verdict = "deny"
                elif name in self.allow:
                    verdict = "allow"
                if verdict is not None:
                    verdicts.append((verdict, name))
                    break
            if verdict is None:
                verdicts.append((None, tool))
        names = ", ".join(n for _, n in verdicts)
        if any(v == "deny" for v, _ in verdicts):
            return "deny", ", ".join(n for v, n in verdicts if v == "deny")
        if verdicts and all(v == "allow" for v, _ in verdicts):
            return "allow", names
        return None

    # ------------------------------------------------------------------------------ after decide

    def bind(self, plan: StickyPlan, decision: RouteDecision) -> Events:
        """Record the decision (made by `decide` with this plan's view) in the family, bind the family
        when the decision is a cloud one, and return the events to emit."""
        events: Events = []
        p = plan.placement
        if p.kind in ("count_tokens", "utility") or p.turn_id is None:
            return events  # a utility request is about the next prompt: it leaves its family as it was
        fam = self.index.families.get(p.turn_id)
        if fam is None:
            return events
        fam.sent_to(decision.target, decision.backend, decision.model)
        if p.kind == "new_turn":
            fam.decided_by(decision.rule)
        now = self.clock()
        if fam.binding is not None and fam.binding.live(now):
            return events
        found = decision.command
        ttl, grace = self.sticky.ttl_seconds, self.sticky.grace_seconds
        if decision.target == "local":
            # Only the person's own /local (or /fast) on the turn's own message holds the family local.
            if not found or p.kind not in ("new_turn", "retry"):
                return events
            reason = f"bound local by explicit {found} (rule {decision.rule}) in turn {p.turn_id}"
            binding = Binding("local", now, ttl, grace, reason, rule=decision.rule)
        else:
            reason = (
                f"bound by explicit {found}" if found else f"bound by a cloud decision (rule {decision.rule})"
            )
            binding = Binding("cloud", now, ttl, grace, f"{reason} in turn {p.turn_id}")
        fam.bind(binding)
        events.append((STICKY_BOUND, self._bound_data(binding, p), p.turn_id))
        return events

    def served(
        self,
        plan: StickyPlan,
        side: str,
        backend: str | None,
        model: str | None,
        calls: Iterable[IssuedCall],
        *,
        complete: bool,
        at_limit: bool = False,
        status: int = 200,
    ) -> Events:
        """Record who answered (after any fallback), whether a local reply stopped at the output-token
        limit, and the tool calls the reply issued; a finished run starts the binding's grace time."""
        p = plan.placement
        if p.turn_id is None or p.kind in SIDE_KINDS:
            return []
        fam = self.index.families.get(p.turn_id)
        if fam is not None:
            fam.sent_to(side, backend, model)
            fam.replied(side, at_limit, status)
        issued = [c for c in calls if c.id] if calls else ()
        if issued:
            logged = []
            for c in issued:
                whole = agent_prompt(c.name, c.arguments, cap=None)
                prompt, kind = whole[:PROMPT_CAP], subagent_type(c.name, c.arguments)
                digest = prompt_digest(whole) if whole else ""
                self.index.issued(p.turn_id, c.id, c.name, prompt, digest=digest, subagent_type=kind)
                entry: dict[str, Any] = {"id": c.id, "name": c.name}
                if prompt:
                    entry["prompt"] = prompt
                if kind:
                    entry["subagent_type"] = kind
                logged.append(entry)
            data: dict[str, Any] = {"family": p.turn_id, "session_id": p.session_id, "side": side}
            data.update(backend=backend, model=model, calls=logged)
            return [(TOOL_CALLS_ISSUED, data, p.turn_id)]
        if fam is None or not complete or fam.open_calls:
            return []
        b = fam.end_run(self.clock())
        if b is None:
            return []
        return [(STICKY_BOUND, self._bound_data(b, p), p.turn_id)]

    def _bound_data(self, b: Binding, p: Placement) -> dict[str, Any]:
        data: dict[str, Any] = {
            "family": p.turn_id,
            "session_id": p.session_id,
            "target": b.target,
            "ttl": b.ttl,
            "grace": b.grace,
            "bound_at": b.bound_at,
            "reason": b.reason,
        }
        if b.rule is not None:
            data["rule"] = b.rule
        if b.ended_at is not None:
            data["ended_at"] = b.ended_at
        return data

    # ------------------------------------------------------------------------------ state

    def state(self, turn_id: str | None) -> dict[str, Any]:
        """The sticky state of a family now: bound, live, until, reason (for replay and the API)."""
        fam = self.index.get(turn_id)
        if fam is None or fam.binding is None:
            return {"bound": False}
        b, now = fam.binding, self.clock()
        until = b.bound_at + b.ttl
        if b.ended_at is not None:
            until = max(until, b.ended_at + b.grace)
        return {"bound": True, "live": b.live(now), "until": until, "reason": b.reason}

    def rebuild(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Fold logged events (oldest first) into the index; returns how many families it holds."""
        for ev in events:
            self.index.rebuild_event(ev)
        return len(self.index)


def _commands(request: ChatRequest, p: Placement, fam: Family | None) -> bool:
    """Whether the request's latest user text is the person's own (see the module contract)."""
    if p.kind in _NO_COMMANDS:
        return False
    if p.kind == "retry" or fam is None or not fam.typed:
        return True
    text = request.last_user_text
    # The opening message itself (a tool loop's requests end in it): what it typed is `fam.typed`
    # (a family a title opened ahead of its turn has `typed` and no `ask` yet).
    if text and text == fam.ask:
        return True
    return prompt_text(text) == fam.typed
